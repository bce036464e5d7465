"""Attacks on what a signature covers, through the real server on loopback (issue 22, attack 4): a
request captured before it arrives must not be usable at another endpoint or with another method, even
when the body fits both."""

from __future__ import annotations

import orjson

from tests.arena.job_helpers import BENIGN_AGENT, client, submit


def test_a_heartbeat_replayed_at_the_code_endpoint_is_refused(job_arena, server_factory, miner, validator):
    """A validator's heartbeat (`{"lease_id"}`) has exactly the body `/v1/validator/code` takes: whoever
    catches it on the way may not swap the path and read the miner's code."""
    server = server_factory(job_arena)
    submit(server, miner)
    with client(server, validator) as arena:
        offer = arena.claim()
    body = orjson.dumps({"lease_id": offer.lease_id})
    captured = validator.headers(body, method="POST", target="/v1/validator/heartbeat")
    replayed = server.http.post("/v1/validator/code", content=body, headers=captured)
    assert BENIGN_AGENT.read_bytes() not in replayed.content
    assert replayed.status_code == 401 and replayed.json()["reason"] == "signature", replayed.text
    # the heartbeat it was signed for still goes through (its nonce was not burnt by the replay)
    sent = server.http.post("/v1/validator/heartbeat", content=body, headers=captured)
    assert sent.status_code == 200, sent.text


def test_a_request_replayed_with_another_method_or_query_is_refused(server, miner):
    captured = miner.headers(b"", method="GET", target="/v1/miner/submissions")
    moved = server.http.get("/v1/whoami", headers=captured)  # same empty body, another endpoint
    assert (moved.status_code, moved.json()["reason"]) == (401, "signature"), moved.text
    moved = server.http.request("DELETE", "/v1/miner/submissions", headers=captured)
    assert moved.status_code in (401, 404, 405), moved.text
    queried = server.http.get("/v1/miner/submissions?limit=1", headers=captured)
    assert (queried.status_code, queried.json()["reason"]) == (401, "signature"), queried.text
    assert server.http.get("/v1/miner/submissions", headers=captured).status_code == 200
