"""Attacks on what a signature covers, through the real server on loopback (issue 22, attack 4): a
request captured before it arrives must not be usable at another endpoint or with another method, even
when the body fits both."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.arena.participants.client import ArenaClient
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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tail=st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=24),
    query=st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=24),
)
def test_client_and_server_agree_on_any_target(server, miner, tail, query):
    """Whatever path and query a caller asks for, the target `ArenaClient` signs (as httpx encodes it)
    is the target the server rebuilds: never a 401 `signature`, only the route's own answer."""
    with ArenaClient(server.url, miner.keypair, clock=server.clock) as arena:
        response = arena.request("GET", f"/v1/miner/submissions/{tail}?{query}")
    assert response.status_code != 401, (tail, query, response.text)
