"""A scripted OpenAI-compatible server on 127.0.0.1 (a real ThreadingHTTPServer speaking
/v1/chat/completions): each request gets the next scripted reply, and every request is kept."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = str | tuple[int, str] | Callable[[dict], Any]
"""Assistant text (200), (status, raw body), or a function of the request returning either."""


class ScriptedServer:
    def __init__(self, script: Callable[[dict, int], Reply]):
        self.script = script
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with owner._lock:
                    index = len(owner.requests)
                    owner.requests.append(
                        {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                    )
                if self.path != "/v1/chat/completions":
                    self._send(404, json.dumps({"error": f"no route {self.path}"}))
                    return
                reply = owner.script(body, index)
                if isinstance(reply, tuple) and reply[0] == "sleep":
                    time.sleep(reply[1])
                    reply = reply[2]
                if isinstance(reply, tuple):
                    self._send(reply[0], reply[1])
                    return
                completion = {
                    "id": f"cmpl-{index}",
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
                }
                self._send(200, json.dumps(completion))

            def _send(self, status: int, text: str):
                data = text.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def models_called(self) -> list[str]:
        return [r["body"]["model"] for r in self.requests]

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def verdict_text(quality: float, gate: str, spans: list, explanation: str = "scripted") -> str:
    return json.dumps({"quality": quality, "gate": gate, "explanation": explanation, "cited_spans": spans})
