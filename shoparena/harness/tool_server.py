"""A local HTTP front for harness episodes, so agent code in another process (a miner file, a sandbox)
drives the very same `Episode` an in-process agent would.

The server knows sessions, and a session is an `Episode` — which never holds a reward — so nothing it
can answer leaks one. Every call goes through `Episode.call`, so the verified call log, the error
observations and the step accounting are identical to an in-process run; HTTP only adds a status
code that says which kind of problem a failed call had.

Wire format (JSON both ways):
- `GET  /v1/health` → `{"ok": true}` (no token needed).
- `GET  /v1/tools` → `{"profile", "tools": [OpenAI schemas], "step_cap", "steps_used", "ended"}`.
- `POST /v1/tools/{name}` with a JSON object of the tool's arguments. Two keys are reserved and
  never reach the tool (no tool has a parameter of these names): `origin` — `"code"` (default) or
  `"llm"` — and `call_id`, an id to record the call under. Calls default to `code` because what
  arrives here was sent by agent code; only the agent can know that its model emitted a call, and it
  says so explicitly. The reply is `{"ok", "result", "error", "text", "call_id", "step", "ended"}`.

Status codes of a tool call (every one of these is recorded in the episode's log):
200 the tool ran (`ok` false when the tool itself refused, e.g. an id not in the catalogue — the
model would see the same error observation); 400 the body is not a JSON object; 404 no such tool in
the episode's profile; 409 the episode has already ended; 422 the arguments do not fit the tool.
Not recorded (no call happened): 401 unknown or expired token, 411/413 body without length or too
large, 400 a bad `origin`/`call_id`, 404 an unknown path.

Authentication: `Authorization: Bearer <token>` or `X-Session: <token>`.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from shoparena.harness import jsontext
from shoparena.harness.episode import Episode
from shoparena.harness.params import ArgumentError, bind_arguments
from shoparena.harness.tool_specs import TOOL_SPECS

RESERVED_KEYS = ("origin", "call_id")
ORIGINS = ("llm", "code")
DEFAULT_MAX_BODY_BYTES = 1 << 20
TOOLS_PREFIX = "/v1/tools/"

if any(p.name in RESERVED_KEYS for spec in TOOL_SPECS.values() for p in spec.params):
    raise RuntimeError(f"a tool parameter collides with a reserved tool-server request key {RESERVED_KEYS}")


@dataclass
class _Session:
    episode: Episode
    expires_at: float | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Serialises calls: an Episode is not thread-safe, and a log entry's step must match its order."""


class ToolServer:
    """HTTP tool server on loopback; use as a context manager or call `start()`/`stop()`.

    Thread-safe: many sessions can be served at once, calls within one session run one at a time.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        request_timeout_s: float = 30.0,
    ):
        self.host = host
        self.port = port
        self.max_body_bytes = max_body_bytes
        self.request_timeout_s = request_timeout_s
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> ToolServer:
        if self._httpd is not None:
            return self
        handler = type("_BoundHandler", (_Handler,), {"timeout": self.request_timeout_s})
        self._httpd = _HTTPServer((self.host, self.port), handler, self)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name=f"tool-server:{self.port}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            self._sessions.clear()

    def __enter__(self) -> ToolServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the tool server is not running; call start() or use it as a context manager")
        return f"http://{self.host}:{self.port}"

    # -- sessions ----------------------------------------------------------------------------------
    def register(self, episode: Episode, ttl_s: float | None = None) -> str:
        """Open a session on `episode`; the token is what the agent sends. `ttl_s` bounds its life."""
        token = secrets.token_urlsafe(32)
        expires_at = time.monotonic() + ttl_s if ttl_s is not None else None
        with self._lock:
            self._sessions[token] = _Session(episode, expires_at)
        return token

    def revoke(self, token: str) -> None:
        """Close a session; later requests with its token get 401. Waits for a call in flight."""
        with self._lock:
            session = self._sessions.pop(token, None)
        if session is not None:
            with session.lock:
                pass

    @contextmanager
    def session(self, episode: Episode, ttl_s: float | None = None) -> Iterator[str]:
        token = self.register(episode, ttl_s)
        try:
            yield token
        finally:
            self.revoke(token)

    def _session(self, token: str | None) -> _Session | None:
        if not token:
            return None
        with self._lock:
            session = self._sessions.get(token)
            if (
                session is not None
                and session.expires_at is not None
                and time.monotonic() > session.expires_at
            ):
                del self._sessions[token]
                return None
        return session

    # -- request handling (called from handler threads) ---------------------------------------------
    def handle_tools(self, session: _Session) -> tuple[int, dict]:
        episode = session.episode
        with session.lock:
            return 200, {
                "profile": episode.profile,
                "tools": episode.tools,
                "step_cap": episode.step_cap,
                "steps_used": episode.steps_used,
                "ended": episode.ended,
            }

    def handle_call(self, session: _Session, name: str, body: bytes) -> tuple[int, dict]:
        text = body.decode("utf-8", errors="replace")
        arguments: dict[str, Any] | str
        origin, call_id, status = "code", None, 200
        try:
            value = jsontext.loads(text) if text.strip() else {}
        except ValueError:
            value, status = None, 400
        if isinstance(value, dict):
            origin = value.pop("origin", "code")
            call_id = value.pop("call_id", None)
            if origin not in ORIGINS:
                return 400, _error(f"origin must be one of {', '.join(ORIGINS)}, got {origin!r}")
            if call_id is not None and not isinstance(call_id, str):
                return 400, _error(f"call_id must be a string, got {type(call_id).__name__}")
            arguments = value
        else:
            arguments, status = text, 400  # Episode.call records why it is not an argument object

        episode = session.episode
        with session.lock:
            if episode.ended:
                status = 409
            elif status == 200:
                status = _argument_status(episode, name, arguments)
            observation = episode.call(name, arguments, origin=origin, call_id=call_id)
            step = episode.calls[-1].step
            ended = episode.ended
        return status, {
            "ok": observation.ok,
            "result": observation.result,
            "error": observation.error,
            "text": observation.text,
            "call_id": observation.call_id,
            "step": step,
            "ended": ended,
        }


def _argument_status(episode: Episode, name: str, arguments: dict[str, Any]) -> int:
    """The status a well-formed call will get: the same checks Episode makes, in the same order."""
    if name not in episode.tool_names:
        return 404
    try:
        bind_arguments(name, TOOL_SPECS[name].params, arguments)
    except ArgumentError:
        return 422
    return 200


def _error(message: str) -> dict:
    return {"ok": False, "error": message}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type, tool_server: ToolServer):
        super().__init__(address, handler)
        self.tool_server = tool_server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a per-request line on stderr would drown a run's own output."""

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/v1/health":
            self._reply(200, {"ok": True})
            return
        if path != "/v1/tools":
            self._reply(
                404, _error(f"no such endpoint: GET {path}; use GET /v1/tools or POST /v1/tools/NAME")
            )
            return
        session = self._authenticate()
        if session is not None:
            self._reply(*self.server.tool_server.handle_tools(session))

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        if not path.startswith(TOOLS_PREFIX) or not path[len(TOOLS_PREFIX) :]:
            self.close_connection = True
            self._reply(404, _error(f"no such endpoint: POST {path}; use POST /v1/tools/NAME"))
            return
        name = unquote(path[len(TOOLS_PREFIX) :])
        session = self._authenticate()
        if session is None:
            return
        body = self._read_body()
        if body is not None:
            self._reply(*self.server.tool_server.handle_call(session, name, body))

    def _authenticate(self) -> _Session | None:
        header = self.headers.get("Authorization", "")
        token = header[7:].strip() if header[:7].lower() == "bearer " else self.headers.get("X-Session")
        session = self.server.tool_server._session(token)
        if session is None:
            self.close_connection = True
            what = "unknown or expired session token" if token else "missing session token"
            self._reply(401, _error(f"{what}; send 'Authorization: Bearer TOKEN' or 'X-Session: TOKEN'"))
        return session

    def _read_body(self) -> bytes | None:
        limit = self.server.tool_server.max_body_bytes
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            self._reply(411, _error("chunked bodies are not accepted; send Content-Length"))
            return None
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            self._reply(400, _error("Content-Length is not a non-negative integer"))
            return None
        if length > limit:
            self.close_connection = True  # the unread body must not be parsed as the next request
            self._reply(413, _error(f"request body of {length} bytes exceeds the limit of {limit} bytes"))
            return None
        return self.rfile.read(length)

    def _reply(self, status: int, payload: dict) -> None:
        data = jsontext.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
