"""Signed requests against the real server on loopback, tried as an attacker would: every refusal is a
401 naming its reason, leaves an audit row and nothing else."""

from __future__ import annotations

import socket
import time

import httpx
import orjson
import pytest

from tests.arena.arena_helpers import BENIGN, REDIS_URL, Key, make_arena, parallel


def refused(response: httpx.Response, reason: str) -> dict:
    assert response.status_code == 401, response.text
    body = response.json()
    assert body["error"] == "unauthorized" and body["reason"] == reason, body
    return body


def submit_body(code: bytes = BENIGN, name: str = "agent") -> bytes:
    return orjson.dumps({"name": name, "code": code.decode()})


def nothing_stored(server, *keys: Key) -> None:
    for key in keys:
        assert server.arena.ledger.list_for(key.hotkey) == []
    code_dir = server.arena.dir / "code"
    assert not any(path.is_file() for path in code_dir.rglob("*"))


def test_a_signed_request_is_accepted(server, miner, validator):
    response = server.signed("GET", "/v1/whoami", miner)
    assert response.status_code == 200
    assert response.json() == {"hotkey": miner.hotkey, "role": "miner", "stake": 0.0, "uid": None}
    assert server.signed("GET", "/v1/whoami", validator).json()["role"] == "validator"
    assert server.http.get("/v1/health").json()["status"] == "ok"


def test_missing_headers(server, miner):
    body = refused(server.http.get("/v1/whoami"), "bad_headers")
    assert "X-Hotkey is missing" in body["message"]
    headers = miner.headers()
    del headers["X-Signature"]
    assert (
        "X-Signature is missing"
        in refused(server.http.get("/v1/whoami", headers=headers), "bad_headers")["message"]
    )


@pytest.mark.parametrize("offset", [-61, 61, -(10**6), 10**6])
def test_timestamps_outside_the_skew_window(server, miner, offset):
    stamp = int(time.time()) + offset
    body = refused(server.signed("GET", "/v1/whoami", miner, timestamp=stamp), "skew")
    assert "60 s" in body["message"]


def test_timestamps_inside_the_skew_window(server, miner):
    for offset in (-55, 55):
        assert (
            server.signed("GET", "/v1/whoami", miner, timestamp=int(time.time()) + offset).status_code == 200
        )


def test_skew_is_judged_by_the_servers_clock(server, miner):
    server.clock.advance(120)
    refused(server.http.get("/v1/whoami", headers=miner.headers()), "skew")  # signed by the real clock
    assert server.signed("GET", "/v1/whoami", miner, timestamp=int(server.clock())).status_code == 200


@pytest.mark.parametrize(
    "stamp", ["1700000000.5", "-1", "99999999999999999999", "1e10", "0x10", "NaN", "inf", "", "17 00"]
)
def test_timestamp_spellings_are_bad_headers(server, miner, stamp):
    headers = {**miner.headers(), "X-Timestamp": stamp}
    refused(server.http.get("/v1/whoami", headers=headers), "bad_headers")


@pytest.mark.parametrize("nonce", ["a b", "a:b", "a" * 65, "é", "../x", "a\tb", "%41"])
def test_nonce_charset(server, miner, nonce):
    headers = {**miner.headers(), "X-Nonce": nonce}
    refused(
        server.http.get("/v1/whoami", headers=[(k, v.encode("utf-8")) for k, v in headers.items()]),
        "bad_headers",
    )


def test_unknown_hotkey_and_deregistration_take_effect_at_once(server, miner):
    stranger = Key()
    refused(server.signed("GET", "/v1/whoami", stranger), "unknown_hotkey")
    assert server.signed("GET", "/v1/whoami", miner).status_code == 200
    server.arena.metagraph.remove(miner.hotkey)
    refused(server.signed("GET", "/v1/whoami", miner), "unknown_hotkey")


def test_validator_key_on_miner_endpoints_is_wrong_role(server, validator):
    refused(server.signed("GET", "/v1/miner/submissions", validator), "wrong_role")
    body = refused(server.signed("POST", "/v1/miner/submit", validator, submit_body()), "wrong_role")
    assert "validator" in body["message"]
    nothing_stored(server, validator)


def test_body_swapped_after_signing(server, miner):
    signed_for = submit_body(name="harmless")
    headers = miner.headers(signed_for, "POST", "/v1/miner/submit")
    swapped = submit_body(name="swapped")
    refused(server.http.post("/v1/miner/submit", content=swapped, headers=headers), "signature")
    refused(
        server.http.post(
            "/v1/miner/submit",
            content=signed_for + b" ",
            headers=miner.headers(signed_for, "POST", "/v1/miner/submit"),
        ),
        "signature",
    )
    nothing_stored(server, miner)


def test_another_keys_signature_for_a_registered_hotkey(server, miner, miner2):
    headers = miner2.headers()
    headers["X-Hotkey"] = miner.hotkey  # miner2 signs, claims to be miner
    refused(server.http.get("/v1/whoami", headers=headers), "signature")
    headers = {**miner.headers(), "X-Signature": "0x" + "00" * 64}
    refused(server.http.get("/v1/whoami", headers=headers), "signature")


def test_replay_is_refused(server, miner):
    headers = miner.headers()
    assert server.http.get("/v1/whoami", headers=headers).status_code == 200
    refused(server.http.get("/v1/whoami", headers=headers), "replay")
    server.clock.advance(61)  # once the nonce could lapse, the timestamp has gone stale too
    refused(server.http.get("/v1/whoami", headers=headers), "skew")


def test_a_replay_cannot_move_to_another_hotkey(server, miner, miner2):
    headers = miner.headers(nonce="shared-nonce")
    assert server.http.get("/v1/whoami", headers=headers).status_code == 200
    moved = {**headers, "X-Hotkey": miner2.hotkey}
    refused(server.http.get("/v1/whoami", headers=moved), "signature")
    # the nonce is single-use per hotkey: miner2 signing its own request with the same string is fine
    assert server.signed("GET", "/v1/whoami", miner2, nonce="shared-nonce").status_code == 200


def test_a_replay_cannot_move_to_another_endpoint_with_another_body(server, miner):
    headers = miner.headers(b"")
    assert server.http.get("/v1/whoami", headers=headers).status_code == 200
    refused(server.http.post("/v1/miner/submit", content=submit_body(), headers=headers), "signature")


def test_header_names_in_any_case_but_only_once(server, miner):
    lower = {k.lower(): v for k, v in miner.headers().items()}
    assert server.http.get("/v1/whoami", headers=lower).status_code == 200
    headers = list(miner.headers().items())
    twice = [*headers, ("x-nonce", dict(headers)["X-Nonce"])]
    refused(server.http.get("/v1/whoami", headers=twice), "bad_headers")
    other = miner.headers()
    smuggled = [*headers, ("X-HOTKEY", other["X-Hotkey"])]
    refused(server.http.get("/v1/whoami", headers=smuggled), "bad_headers")


def test_oversized_headers_never_pass(server, miner):
    headers = {**miner.headers(), "X-Nonce": "a" * 2000}
    refused(server.http.get("/v1/whoami", headers=headers), "bad_headers")
    entry = server.arena.audit.entries(limit=1)[0]
    assert entry.reason == "bad_headers" and len(entry.nonce) == 64
    huge = {**miner.headers(), "X-Padding": "p" * 200_000}
    try:
        status = server.http.get("/v1/whoami", headers=huge).status_code
    except httpx.HTTPError:
        status = None  # the server closed the connection: refused as well
    assert status is None or status >= 400


def test_concurrent_replays_of_one_request_have_one_winner(server, miner):
    headers = miner.headers()
    statuses = parallel(
        20, lambda _i: httpx.get(server.url + "/v1/whoami", headers=headers, timeout=30).status_code
    )
    assert statuses.count(200) == 1 and statuses.count(401) == 19


def test_refusals_are_audited_and_nothing_else_is_kept(server, miner, validator):
    stranger = Key()
    refused(server.signed("POST", "/v1/miner/submit", stranger, submit_body()), "unknown_hotkey")
    refused(server.signed("POST", "/v1/miner/submit", validator, submit_body()), "wrong_role")
    refused(server.signed("POST", "/v1/miner/submit", miner, submit_body(), timestamp=1), "skew")
    entries = server.arena.audit.entries()
    assert [(e.reason, e.status, e.path) for e in entries] == [
        ("skew", 401, "/v1/miner/submit"),
        ("wrong_role", 401, "/v1/miner/submit"),
        ("unknown_hotkey", 401, "/v1/miner/submit"),
    ]
    assert entries[2].hotkey == stranger.hotkey and entries[2].remote == "127.0.0.1"
    assert all(e.submission_id is None for e in entries)
    nothing_stored(server, stranger, validator, miner)


def test_redis_nonce_store_behind_the_server(
    tmp_path, small_catalog_dir, problems_file, server_factory, redis_prefix
):
    miner = Key()
    arena = make_arena(
        tmp_path / "arena",
        small_catalog_dir,
        problems_file,
        {"miner": [miner]},
        nonce_store=REDIS_URL,
        nonce_prefix=redis_prefix,
    )
    try:
        server = server_factory(arena)
        headers = miner.headers()
        statuses = parallel(
            12, lambda _i: httpx.get(server.url + "/v1/whoami", headers=headers, timeout=30).status_code
        )
        assert statuses.count(200) == 1 and statuses.count(401) == 11
        import redis

        client = redis.Redis.from_url(REDIS_URL)
        key = f"{redis_prefix}nonce:{miner.hotkey}:{headers['X-Nonce']}"
        assert 0 < client.pttl(key) <= 61_000
        client.close()
    finally:
        arena.close()


def test_an_unreachable_nonce_store_refuses_with_503(
    tmp_path, small_catalog_dir, problems_file, server_factory
):
    miner = Key()
    arena = make_arena(
        tmp_path / "arena",
        small_catalog_dir,
        problems_file,
        {"miner": [miner]},
        nonce_store="redis://127.0.0.1:9/0",
    )
    try:
        server = server_factory(arena)
        response = server.signed("GET", "/v1/whoami", miner)
        assert response.status_code == 503 and response.json()["error"] == "unavailable"
    finally:
        arena.close()


def raw_request(url: str, request: bytes, read_timeout: float = 10) -> bytes:
    """Send bytes as they are (what httpx would normalise) and read until the server closes."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=read_timeout) as sock:
        sock.sendall(request)
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:  # the server closed the connection: the whole answer is in
                break
            chunks.append(chunk)
    return b"".join(chunks)


def test_non_ascii_header_bytes_are_bad_headers(server, miner):
    headers = miner.headers()
    lines = [f"{k}: {v}".encode() for k, v in headers.items() if k != "X-Nonce"]
    lines.append(b"X-Nonce: abc\xff\xfe")
    request = (
        b"GET /v1/whoami HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + b"\r\n".join(lines) + b"\r\n\r\n"
    )
    answer = raw_request(server.url, request)
    assert answer.startswith(b"HTTP/1.1 401") and b'"bad_headers"' in answer
