"""`ChatCompletionsClient(keep_alive=True)` (the inference proxy's upstream client) against a real HTTP/1.1
server on loopback: connections are kept and reused, a connection the server dropped is replaced
without an error, and statuses, retries and timeouts behave as without keep-alive."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from shoparena.agents.chat_loop import ModelError
from shoparena.agents.openai_agent import ChatCompletionsClient, RequestRejected
from tests.agents.conftest_llm import completion, error_body


class KeepAliveServer:
    """HTTP/1.1 with keep-alive; `script(index)` → (status, body, headers, drop_after)."""

    def __init__(self, script):
        self.script = script
        self.requests: list[tuple[int, dict]] = []
        """(client port, body) of every request: the port tells connections apart."""
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with owner._lock:
                    index = len(owner.requests)
                    owner.requests.append((self.client_address[1], body))
                status, payload, headers, drop, delay = owner.script(index)
                time.sleep(delay)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = drop  # closes without saying so: the client finds out next time

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # a client that gave up on a slow reply closed the socket: that is the test

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


def ok(index, drop=False, delay=0.0):
    return 200, completion(f"reply {index}"), {}, drop, delay


def client(url: str, **options) -> ChatCompletionsClient:
    return ChatCompletionsClient(url, keep_alive=True, sleep=lambda s: None, **options)


def test_one_connection_serves_every_request_of_a_thread():
    with KeepAliveServer(ok) as server:
        chat = client(server.base_url)
        replies = [chat.create({"messages": []})["choices"][0]["message"]["content"] for _ in range(5)]
        chat.close()
    assert replies == [f"reply {i}" for i in range(5)]
    assert len({port for port, _ in server.requests}) == 1 and chat.attempts == 5


def test_a_connection_the_server_dropped_is_replaced_without_an_error():
    with KeepAliveServer(lambda i: ok(i, drop=True)) as server:
        chat = client(server.base_url, max_retries=0)
        replies = [chat.create({"messages": []})["choices"][0]["message"]["content"] for _ in range(3)]
        chat.close()
    assert replies == ["reply 0", "reply 1", "reply 2"] and chat.failures == []
    assert len({port for port, _ in server.requests}) == 3  # one request each, nothing sent twice


def test_statuses_retries_and_timeouts_are_those_of_the_plain_client():
    script = [
        (429, error_body("slow down"), {"Retry-After": "0"}, False, 0.0),
        (200, completion("after the retry"), {}, False, 0.0),
        (400, error_body("bad request"), {}, False, 0.0),
        (503, error_body("overloaded"), {}, False, 0.0),
        (503, error_body("overloaded"), {}, False, 0.0),
        (200, completion("too late"), {}, False, 3.0),
    ]
    with KeepAliveServer(lambda i: script[i]) as server:
        chat = client(server.base_url, max_retries=1, timeout_s=10)
        assert chat.create({"messages": []})["choices"][0]["message"]["content"] == "after the retry"
        assert chat.failures == ["HTTP 429: slow down"]
        with pytest.raises(RequestRejected, match="HTTP 400: bad request") as rejected:
            chat.create({"messages": []})
        assert rejected.value.status == 400
        with pytest.raises(ModelError, match="gave up after 2 attempts; last error: HTTP 503: overloaded"):
            chat.create({"messages": []})
        with pytest.raises(ModelError, match=r"no response within 0\.5 s"):
            ChatCompletionsClient(server.base_url, keep_alive=True, max_retries=0, timeout_s=0.5).create({})
        chat.close()


def test_keep_alive_needs_an_http_url():
    with pytest.raises(ValueError, match="keep_alive needs an http:// or https:// URL"):
        ChatCompletionsClient("ftp://x/v1", keep_alive=True)
