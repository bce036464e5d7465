"""The HTTP tool server against real episodes over loopback, with a plain HTTP client (not the miner SDK)."""

from __future__ import annotations

import http.client
import json
import logging
import os
import socket
import stat
import struct
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import psutil
import pytest
from fastapi import APIRouter, Depends
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from shoparena.harness import Episode, ParsedCall, jsontext
from shoparena.harness.tool_routes import STATUS_OF_REFUSAL, Refusal, current_session, reply
from shoparena.harness.tool_server import ToolServer
from shoparena.harness.tool_session import ToolSession


@pytest.fixture(scope="module")
def server():
    with ToolServer() as running:
        yield running


@pytest.fixture
def session(server, backend, shops):
    episode = Episode(backend, "a test query", profile="full", shops=shops, step_cap=500)
    with server.session(episode) as token:
        yield episode, token


def request(server, method, path, body=None, token=None, headers=None):
    """One request on a fresh connection; returns (status, decoded JSON body)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    sent = dict(headers or {})
    if token is not None:
        sent.setdefault("Authorization", f"Bearer {token}")
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
    try:
        connection.request(method, path, body=body, headers=sent)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_lists_the_profile_tools_with_either_token_header(server, session):
    episode, token = session
    status, body = request(server, "GET", "/v1/tools", token=token)
    assert status == 200 and body["tools"] == episode.tools and body["profile"] == "full"
    status, body = request(server, "GET", "/v1/tools", headers={"X-Session": token})
    assert status == 200 and [t["function"]["name"] for t in body["tools"]] == list(episode.tool_names)
    assert request(server, "GET", "/v1/health") == (200, {"ok": True})


def test_a_call_is_recorded_with_its_verified_origin_and_answers_like_the_episode(server, session, products):
    episode, token = session
    title_words = " ".join(products[0]["title"].split()[:3])
    # what an inference response offered (the proxy does this); the claim alone proves nothing
    server.session_of(token).ledger.offer(1, [ParsedCall(name="find_product", arguments={"q": title_words})])
    status, body = request(
        server, "POST", "/v1/tools/find_product", {"q": title_words, "origin": "llm"}, token
    )
    assert status == 200 and body["ok"] and body["step"] == 1 and body["error"] is None
    assert body["result"] and body["text"] == jsontext.dumps(body["result"]) and body["origin"] == "llm"
    status, body = request(
        server,
        "POST",
        "/v1/tools/view_product_information",
        {"product_ids": products[0]["product_id"], "origin": "llm"},
        token,
    )
    assert status == 200 and body["step"] == 2 and body["origin"] == "code"
    status, body = request(server, "POST", "/v1/tools/calculate_voucher", {"call_id": "mine-1"}, token)
    assert [(c.name, c.origin, c.step) for c in episode.calls] == [
        ("find_product", "llm", 1),
        ("view_product_information", "code", 2),
        ("calculate_voucher", "code", 3),
    ]
    ledger = server.session_of(token).ledger
    assert (ledger.offered, ledger.used, ledger.unverified_claims) == (1, 1, 1)
    assert episode.calls[0].arguments == {"q": title_words}  # reserved keys never reach the tool
    assert body["call_id"] == "mine-1" == episode.calls[2].call_id
    assert episode.messages[-1]["tool_call_id"] == "mine-1"


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer not-a-token"}, {"X-Session": "nope"}, {"Authorization": "Basic abc"}],
)
def test_a_missing_or_unknown_token_is_401_and_records_nothing(server, session, headers):
    episode, _ = session
    for method, path in (("GET", "/v1/tools"), ("POST", "/v1/tools/find_product")):
        body = {"q": "shoes"} if method == "POST" else None
        status, answer = request(server, method, path, body, headers=headers)
        assert status == 401 and not answer["ok"] and "session token" in answer["error"]
    assert episode.calls == []


def test_a_revoked_or_expired_session_is_401(server, backend):
    episode = Episode(backend, "q")
    token = server.register(episode)
    assert request(server, "GET", "/v1/tools", token=token)[0] == 200
    server.revoke(token)
    status, body = request(server, "POST", "/v1/tools/find_product", {"q": "x"}, token)
    assert status == 401 and "expired" in body["error"]
    expired = server.register(episode, ttl_s=-1)
    assert request(server, "GET", "/v1/tools", token=expired)[0] == 401
    assert episode.calls == []


def test_bad_calls_get_clear_4xx_are_recorded_and_the_episode_goes_on(server, session):
    episode, token = session
    status, body = request(server, "POST", "/v1/tools/buy_now", {"q": "x"}, token)
    assert status == 404 and "unknown tool 'buy_now'" in body["error"] and body["text"].startswith("Error: ")
    status, body = request(server, "POST", "/v1/tools/find_product", {"page": 2}, token)
    assert status == 422 and "missing required argument 'q'" in body["error"]
    status, body = request(server, "POST", "/v1/tools/find_product", {"q": "x", "colour": "red"}, token)
    assert status == 422 and "unknown argument 'colour'" in body["error"]
    status, body = request(server, "POST", "/v1/tools/find_product", b'{"q": "shoes",', token)
    assert status == 400 and "not valid JSON" in body["error"]
    status, body = request(server, "POST", "/v1/tools/find_product", b'["shoes"]', token)
    assert status == 400 and "must be a JSON object" in body["error"]
    assert [c.error is not None for c in episode.calls] == [True] * 5
    assert episode.calls[3].raw_arguments == '{"q": "shoes",'
    assert [c.step for c in episode.calls] == [1, 2, 3, 4, 5] and not episode.ended

    status, body = request(server, "POST", "/v1/tools/find_product", {"q": "shoes"}, token)
    assert status == 200 and body["ok"] and body["step"] == 6


def test_tool_refusals_are_200_and_an_ended_episode_is_409(server, session):
    episode, token = session
    assert request(server, "POST", "/v1/tools/recommend_product", {"product_ids": "1,2"}, token)[0] == 200
    status, body = request(server, "POST", "/v1/tools/recommend_product", {"product_ids": "3"}, token)
    assert status == 200 and not body["ok"] and "already called" in body["error"]
    status, body = request(server, "POST", "/v1/tools/terminate", {"status": "success"}, token)
    assert status == 200 and body["ended"]
    status, body = request(server, "POST", "/v1/tools/find_product", {"q": "shoes"}, token)
    assert status == 409 and "episode has ended" in body["error"]
    assert episode.recommended_product_ids == ["1", "2"] and episode.calls[-1].counted is False


def test_transport_errors_record_no_call(server, session):
    episode, token = session
    status, body = request(server, "POST", "/v1/tools/find_product", {"q": "x", "origin": "model"}, token)
    assert status == 400 and "origin must be one of llm, code" in body["error"]
    status, body = request(server, "POST", "/v1/tools/find_product", {"q": "x", "call_id": 5}, token)
    assert status == 400 and "call_id must be a string" in body["error"]
    assert request(server, "POST", "/v2/anything", {}, token)[0] == 404
    assert request(server, "GET", "/v1/tools/find_product", token=token)[0] == 404
    assert episode.calls == []


def test_a_body_over_the_limit_is_413_and_not_a_call(backend):
    episode = Episode(backend, "q")
    with ToolServer(max_body_bytes=100) as small, small.session(episode) as token:
        status, body = request(small, "POST", "/v1/tools/find_product", b" " * 101, token)
        assert status == 413 and "101 bytes exceeds the limit of 100 bytes" in body["error"]
        assert episode.calls == []
        status, body = request(small, "POST", "/v1/tools/find_product", b" " * 100, token)
        assert status == 422 and "missing required argument 'q'" in body["error"]  # at the limit: a call
        assert len(episode.calls) == 1


def test_concurrent_calls_on_one_episode_are_serialised(server, session, products):
    episode, token = session
    queries = [" ".join(p["title"].split()[:2]) for p in products[:40]]

    def call(query):
        return request(server, "POST", "/v1/tools/find_product", {"q": query}, token)

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(call, queries))
    assert all(status == 200 and body["ok"] for status, body in answers)
    assert sorted(body["step"] for _, body in answers) == list(range(1, 41))
    assert len({body["call_id"] for _, body in answers}) == 40
    by_id = {c.call_id: c for c in episode.calls}
    for query, (_, body) in zip(queries, answers, strict=True):
        assert by_id[body["call_id"]].arguments == {"q": query}
        assert by_id[body["call_id"]].step == body["step"]
    assert episode.steps_used == 40


def test_concurrent_sessions_stay_apart(server, backend):
    episodes = [Episode(backend, f"query {i}") for i in range(4)]
    tokens = [server.register(e) for e in episodes]
    barrier = threading.Barrier(4)

    def drive(index):
        barrier.wait()
        for _ in range(5):
            request(server, "POST", "/v1/tools/find_product", {"q": f"item {index}"}, tokens[index])

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(drive, range(4)))
    for index, episode in enumerate(episodes):
        assert [c.arguments for c in episode.calls] == [{"q": f"item {index}"}] * 5
        server.revoke(tokens[index])


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)
TOOL_NAMES = st.sampled_from(
    ["find_product", "view_product_information", "recommend_product", "terminate", "check_product_match"]
    + ["calculate_voucher", "no_such_tool", "view_shop_information"]
)
ARGUMENT_OBJECTS = st.dictionaries(
    st.sampled_from(["q", "page", "product_ids", "status", "price", "requirements", "product_id", "x"]),
    JSON_VALUES,
    max_size=3,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=TOOL_NAMES, body=ARGUMENT_OBJECTS | JSON_VALUES | st.binary(max_size=30))
def test_any_body_gets_the_observation_the_episode_itself_gives(server, backend, shops, name, body):
    """Over HTTP or in process, the same input yields the same observation and the same log entry."""
    remote = Episode(backend, "q", profile="oro7", shops=shops)
    local = Episode(backend, "q", profile="oro7", shops=shops)
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    text = raw.decode("utf-8", errors="replace")
    try:
        decoded = jsontext.loads(text) if text.strip() else {}
    except ValueError:
        decoded = None
    assume(not (isinstance(decoded, dict) and {"origin", "call_id"} & decoded.keys()))  # transport keys
    with server.session(remote) as token:
        status, answer = request(server, "POST", f"/v1/tools/{name}", raw, token)
    expected = local.call(name, decoded if isinstance(decoded, dict) else text, origin="code")
    assert status == STATUS_OF_REFUSAL[expected.refused] and status in (200, 400, 404, 422)
    assert (answer["ok"], answer["error"], answer["text"]) == (expected.ok, expected.error, expected.text)
    assert status == 200 or not answer["ok"]
    assert remote.calls[0].model_dump(exclude={"latency_s"}) == local.calls[0].model_dump(
        exclude={"latency_s"}
    )


# -- load, idle connections, clients that go away --------------------------------------------------
def raw_call(port: int, token: str, body: bytes, timeout: float = 10.0) -> bytes:
    """One POST on a raw socket (no client-side retries, so a reset shows as an error)."""
    head = (
        f"POST /v1/tools/find_product HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head.encode() + body)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_300_concurrent_requests_are_all_answered(server, backend):
    episodes = [Episode(backend, f"query {i}", step_cap=100) for i in range(30)]
    tokens = [server.register(e) for e in episodes]
    barrier = threading.Barrier(300)

    def one(i):
        body = json.dumps({"q": f"black shirt {i}"}).encode()
        barrier.wait()
        try:
            return raw_call(server.port, tokens[i % 30], body).split(b"\r\n", 1)[0]
        except OSError as exc:
            return repr(exc).encode()

    with ThreadPoolExecutor(max_workers=300) as pool:
        statuses = list(pool.map(one, range(300)))
    assert statuses == [b"HTTP/1.1 200 OK"] * 300
    assert [len(e.calls) for e in episodes] == [10] * 30
    for token in tokens:
        server.revoke(token)


def test_idle_connections_hold_no_worker_and_every_one_is_served(server, session):
    """The old thread-per-connection server took 15 s to open 100 idle connections; each step here
    must finish within a 5 s socket timeout."""
    _, token = session
    idle = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(100)]
    try:
        assert request(server, "GET", "/v1/tools", token=token)[0] == 200  # a newcomer is not queued
        for sock in idle:
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert all(sock.recv(4096).startswith(b"HTTP/1.1 200") for sock in idle)
    finally:
        for sock in idle:
            sock.close()


class SlowBackend:
    """The real catalogue, with searches that take long enough for a client to leave first."""

    def __init__(self, inner, delay_s: float):
        self.inner, self.delay_s = inner, delay_s

    def find_product(self, **request):
        time.sleep(self.delay_s)
        return self.inner.find_product(**request)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def gone_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "disconnected" in r.getMessage()]


def test_a_client_that_leaves_early_is_one_log_line_not_a_traceback(server, backend, caplog, capfd):
    caplog.set_level(logging.INFO)
    episode = Episode(SlowBackend(backend, 0.5), "q")
    token = server.register(episode)
    body = json.dumps({"q": "shirt"}).encode()
    head = (
        f"POST /v1/tools/find_product HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:  # leaves mid-body
        sock.sendall(head + body[:3])
    deadline = time.monotonic() + 5
    while not gone_lines(caplog) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert episode.calls == []
    with socket.create_connection(("127.0.0.1", server.port)) as sock:  # leaves during the call
        sock.sendall(head + body)
        time.sleep(0.1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # reset
    while len(gone_lines(caplog)) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    server.revoke(token)
    lines = gone_lines(caplog)
    assert len(lines) == 2, lines
    assert "before sending the whole body; no call was made" in lines[0]
    assert "before the reply; the call was recorded as step 1" in lines[1]
    assert [c.name for c in episode.calls] == ["find_product"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert "Traceback" not in capfd.readouterr().err


# -- Unix socket, mounted routes --------------------------------------------------------------------
class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str):
        super().__init__("localhost", timeout=10)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def unix_request(path: str, method: str, url: str, body=None, token=None) -> tuple[int, dict]:
    connection = UnixConnection(path)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        connection.request(method, url, body=json.dumps(body).encode() if body else None, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.fixture
def socket_dir():
    with tempfile.TemporaryDirectory(prefix="ts-", dir="/tmp") as path:  # AF_UNIX paths are short
        yield Path(path)


def test_a_unix_socket_server_serves_the_same_api(backend, socket_dir):
    path = socket_dir / "tools.sock"
    episode = Episode(backend, "q")
    with ToolServer(host=None, socket_path=path) as unix_only, unix_only.session(episode) as token:
        assert unix_only.url == f"unix://{path}" and unix_only.tcp_url is None
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        status, body = unix_request(str(path), "POST", "/v1/tools/find_product", {"q": "shirt"}, token)
        assert status == 200 and body["ok"] and episode.calls[0].arguments == {"q": "shirt"}
        assert unix_request(str(path), "GET", "/v1/tools", token="nope")[0] == 401
    assert not path.exists()  # removed on stop


def test_tcp_and_unix_listeners_share_sessions_and_a_stale_socket_is_replaced(backend, socket_dir):
    path = socket_dir / "tools.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # a socket file nobody listens on, as a crashed server leaves it
    episode = Episode(backend, "q")
    with ToolServer(socket_path=path, socket_mode=0o660) as both, both.session(episode) as token:
        assert both.url == both.tcp_url and both.unix_url == f"unix://{path}"
        assert stat.S_IMODE(path.stat().st_mode) == 0o660
        assert request(both, "POST", "/v1/tools/find_product", {"q": "a"}, token)[0] == 200
        assert unix_request(str(path), "POST", "/v1/tools/find_product", {"q": "b"}, token)[0] == 200
        assert [c.step for c in episode.calls] == [1, 2]
        with pytest.raises(OSError, match="another server is listening"):
            ToolServer(host=None, socket_path=path).start()


def test_a_socket_path_that_is_not_a_socket_is_refused(socket_dir):
    path = socket_dir / "tools.sock"
    path.write_text("keep me")
    with pytest.raises(FileExistsError, match="not a socket"):
        ToolServer(host=None, socket_path=path).start()
    assert path.read_text() == "keep me"
    with pytest.raises(ValueError, match="a TCP host or a socket_path"):
        ToolServer(host=None)


def test_routes_mounted_beside_the_tools_share_the_sessions_and_the_error_body(backend):
    extra = APIRouter()

    @extra.get("/v1/whoami")
    async def whoami(session: ToolSession = Depends(current_session)):
        if session.state.get("banned"):
            raise Refusal(403, "this session may not ask")
        return reply(200, {"ok": True, "query": session.episode.query, "seen": session.state["seen"]})

    episode = Episode(backend, "where am I")
    with ToolServer(routers=[extra]) as mounted:
        token = mounted.register(episode, state={"seen": 1})
        assert request(mounted, "GET", "/v1/whoami", token=token) == (
            200,
            {"ok": True, "query": "where am I", "seen": 1},
        )
        assert request(mounted, "GET", "/v1/whoami", token="nope")[0] == 401
        mounted.session_of(token).state["banned"] = True
        assert request(mounted, "GET", "/v1/whoami", token=token) == (
            403,
            {"ok": False, "error": "this session may not ask"},
        )
        with pytest.raises(RuntimeError, match="before the tool server starts"):
            mounted.include_router(APIRouter())


def test_replies_on_a_kept_alive_connection_are_not_held_back(server, session):
    """Accepted TCP connections must have TCP_NODELAY: without it each reply waited ~40 ms on a
    delayed ACK. Asserted on the socket option (a property, not a timing)."""
    _, token = session
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", "/v1/tools", headers={"Authorization": f"Bearer {token}"})
    connection.getresponse().read()
    local = connection.sock.getsockname()
    [accepted] = [c for c in psutil.Process().net_connections("tcp") if c.raddr and tuple(c.raddr) == local]
    with socket.socket(fileno=os.dup(accepted.fd)) as server_side:
        assert server_side.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    connection.close()


def test_unwritable_arguments_over_http_are_refused_and_recorded(server, session):
    episode, token = session
    status, body = request(server, "POST", "/v1/tools/find_product", b'{"q": "black \\ud800 shirt"}', token)
    assert status == 422 and "q holds a lone surrogate" in body["error"]
    deep = b'{"q": ' + b"[" * 400 + b"1" + b"]" * 400 + b"}"
    status, body = request(server, "POST", "/v1/tools/find_product", deep, token)
    assert status == 422 and "nested deeper than 32 levels" in body["error"]
    status, body = request(server, "POST", "/v1/tools/find_product", b"[" * 200_000, token)
    assert status == 400 and "not valid JSON" in body["error"]
    assert [c.error is not None for c in episode.calls] == [True] * 3
    orjson.dumps(episode.summary().model_dump(mode="json"))  # the record can be written
    assert orjson.dumps(episode.messages) and len(episode.calls[2].raw_arguments) <= 16_384
