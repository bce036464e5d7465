"""A real Chat Completions server on loopback that answers from a script, for the model-backed agents.

Each request takes the next scripted reply: a status, headers, a JSON body (or a function of the
request body, so a reply can use what the harness sent back), and an optional delay before answering
(a hung server). Every request is recorded as the server received it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Body = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Reply:
    body: Body = field(default_factory=dict)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def completion(
    content: str | None = None,
    tool_calls: list[dict] | None = None,
    *,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    reasoning_content: str | None = None,
) -> dict[str, Any]:
    """A chat.completion response body with one choice."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if reasoning_content is not None:
        message["reasoning_content"] = reasoning_content
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "scripted",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def tool_call(call_id: str, name: str, arguments: dict | str) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def error_body(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "server_error"}}


@dataclass
class ReceivedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ScriptedChatServer:
    """`with ScriptedChatServer(replies) as server:` → `server.base_url` ends in /v1."""

    def __init__(self, replies: list[Reply] | Callable[[int, dict], Reply]):
        self.replies = replies
        self.requests: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    index = len(server.requests)
                    server.requests.append(ReceivedRequest(self.path, dict(self.headers.items()), body))
                reply = server._reply(index, body) if self.path == "/v1/chat/completions" else None
                if reply is None:
                    reply = Reply(error_body(f"no scripted reply for request {index} to {self.path}"), 400)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = reply.body(body) if callable(reply.body) else reply.body
                data = json.dumps(payload).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up on a hung reply closes the socket; that is the point

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    def _reply(self, index: int, body: dict) -> Reply | None:
        if callable(self.replies):
            return self.replies(index, body)
        return self.replies[index] if index < len(self.replies) else None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def last_tool_results(body: dict) -> list[Any]:
    """The decoded contents of the tool messages at the end of a request (OpenAI protocol)."""
    results = []
    for message in reversed(body["messages"]):
        if message["role"] != "tool":
            break
        results.insert(0, json.loads(message["content"]))
    return results
