"""A local HTTP front for harness episodes, so agent code in another process (a miner file, a sandbox)
drives the very same `Episode` an in-process agent would.

The server knows sessions, and a session is an `Episode` — which never holds a reward — so nothing it
can answer leaks one. Every call goes through `Episode.call`, so the verified call log, the error
observations and the step accounting are identical to an in-process run; HTTP only adds a status
code that says which kind of problem a failed call had.

It is an ASGI app (`tool_routes`, FastAPI) served by uvicorn on an event loop in a background thread
of the process that owns the episodes, listening on loopback TCP, on a Unix socket (what a sandbox
without a network gets bind-mounted), or both. Asynchronous accept and keep-alive mean hundreds of
concurrent or idle connections cost no threads; the listen backlog is large, so bursts are queued,
not reset. More routes (the inference proxy) mount beside the tools with `routers=` or
`include_router`, and authenticate with the same tokens (`tool_routes.current_session`).

Wire format (JSON both ways):
- `GET  /v1/health` → `{"ok": true}` (no token needed).
- `GET  /v1/tools` → `{"profile", "tools": [OpenAI schemas], "step_cap", "steps_used", "ended"}`.
- `POST /v1/tools/{name}` with a JSON object of the tool's arguments. Two keys are reserved and
  never reach the tool (no tool has a parameter of these names): `origin` — `"code"` (default) or
  `"llm"` — and `call_id`, an id to record the call under. The origin is a claim and is not trusted:
  a call is recorded as `llm` only when it matches an unused tool call of an inference response the
  session's inference proxy returned (`call_ledger`), else as `code`, whatever was claimed. The reply
  is `{"ok", "result", "error", "text", "call_id", "step", "ended", "origin"}` (the recorded origin).

Status codes of a tool call (every one of these is recorded in the episode's log):
200 the tool ran (`ok` false when the tool itself refused, e.g. an id not in the catalogue — the
model would see the same error observation); 400 the body is not a JSON object; 404 no such tool in
the episode's profile; 409 the episode has already ended; 422 the arguments do not fit the tool, or
cannot be used at all (invalid text, nested too deep, too large: see `record_limits`).
Not recorded (no call happened): 401 unknown or expired token, 411/413 body without length or too
large, 400 a bad `origin`/`call_id`, 404 an unknown path or method.

Limits against a hostile client (the server lives in the evaluator's process, outside the sandbox's
memory cgroup; `guarded_http` does the first three): HTTP is parsed by h11, never httptools —
uvicorn's httptools protocol buffers a request head without any bound — and a head over
`MAX_HEAD_BYTES`, counted whole however it arrives, is answered 400 and the connection closed; a head
must be complete within `HEAD_TIMEOUT_S` of the connection (or of the previous reply); at most
`max_connections` connections are open at once (more are answered 503 and closed); a body must declare
its length, at most `max_body_bytes`, and arrive within `request_timeout_s`; and all of one session's
open requests together may declare at most `max_open_body_bytes` of body (4 MiB: a request past it is
answered 503 with `Retry-After`, or 413 if it could never fit, before its body is read), so the memory
one episode's connections can hold is bounded, not connections × `max_body_bytes`.

Authentication: `Authorization: Bearer <token>` or `X-Session: <token>`.
Addresses: `url` is `http://HOST:PORT` when listening on TCP, else `unix:///PATH` (the form
`miner_sdk` reads from SHOPARENA_TOOL_URL); `tcp_url` and `unix_url` give each one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import APIRouter, FastAPI
from uvicorn.protocols.http.h11_impl import H11Protocol

from shoparena.harness.episode import Episode
from shoparena.harness.guarded_http import HEAD_TIMEOUT_S, MAX_HEAD_BYTES, guarded_protocol
from shoparena.harness.loopback import ServerThread
from shoparena.harness.tool_routes import RESERVED_KEYS, build_app
from shoparena.harness.tool_session import ToolSession

__all__ = ["DEFAULT_MAX_BODY_BYTES", "MAX_HEAD_BYTES", "RESERVED_KEYS", "ToolServer", "ToolSession"]

DEFAULT_MAX_BODY_BYTES = 1 << 20
BACKLOG = 2048
"""Connections the kernel queues before accept; the old server's 5 reset bursts of concurrent calls."""
START_TIMEOUT_S = 10.0
SHUTDOWN_GRACE_S = 3.0
"""How long `stop()` lets calls in flight finish before it cancels them."""
MAX_UNIX_PATH_BYTES = 107
DEFAULT_MAX_CONNECTIONS = 1024
"""Open connections at once; a sandbox may hold pids × open_files sockets, far more than any agent needs."""
DEFAULT_MAX_OPEN_BODY_BYTES = 4 << 20
"""Bytes of request body all of one session's open requests may hold at once (`tool_routes.BodyBudget`)."""


class ToolServer:
    """HTTP tool server on loopback TCP and/or a Unix socket; a context manager, or `start()`/`stop()`.

    `host=None` listens on no TCP port (then `socket_path` is required); `socket_path` creates the
    socket file with `socket_mode` (0600: only this user may connect) and removes it on stop.
    Thread-safe: many sessions are served at once, calls within one session run one at a time.
    """

    def __init__(
        self,
        host: str | None = "127.0.0.1",
        port: int = 0,
        *,
        socket_path: str | os.PathLike[str] | None = None,
        socket_mode: int = 0o600,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        request_timeout_s: float = 30.0,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        head_timeout_s: float = HEAD_TIMEOUT_S,
        max_open_body_bytes: int = DEFAULT_MAX_OPEN_BODY_BYTES,
        routers: Sequence[APIRouter] = (),
    ):
        if host is None and socket_path is None:
            raise ValueError("a tool server needs a TCP host or a socket_path to listen on")
        self.host = host
        self.port = port
        self.socket_path = Path(socket_path) if socket_path is not None else None
        self.socket_mode = socket_mode
        self.max_body_bytes = max_body_bytes
        self.request_timeout_s = request_timeout_s
        self.max_connections = max_connections
        self.max_open_body_bytes = max_open_body_bytes
        self.http_protocol: type[H11Protocol] | str = guarded_protocol(
            max_connections, head_timeout_s, name="ToolServerProtocol"
        )
        """What uvicorn parses HTTP with (the benchmark swaps in "httptools" to compare)."""
        self._routers = list(routers)
        self._sessions: dict[str, ToolSession] = {}
        self._lock = threading.Lock()
        self._running: ServerThread | None = None
        self._socket_inode: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def include_router(self, router: APIRouter) -> None:
        """Mount more routes beside the tools (before `start()`)."""
        if self._running is not None:
            raise RuntimeError("routers are mounted before the tool server starts")
        self._routers.append(router)

    def build_app(self) -> FastAPI:
        return build_app(self, self._routers)

    def start(self) -> ToolServer:
        if self._running is not None:
            return self
        sockets = self._bind()
        config = uvicorn.Config(
            self.build_app(),
            lifespan="off",
            log_config=None,
            server_header=False,
            date_header=False,
            timeout_keep_alive=max(1, round(self.request_timeout_s)),
            timeout_graceful_shutdown=int(SHUTDOWN_GRACE_S),
            backlog=BACKLOG,
            http=self.http_protocol,
            h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        )
        name = f"tool-server:{self.port if self.host is not None else self.socket_path}"
        try:
            self._running = ServerThread.start(
                config, sockets, name=name, failed="the tool server did not start", timeout_s=START_TIMEOUT_S
            )
        except RuntimeError:
            self._remove_socket_file()
            raise
        return self

    def stop(self) -> None:
        running, self._running = self._running, None
        if running is None:
            return
        running.stop(SHUTDOWN_GRACE_S + 2)
        self._remove_socket_file()
        with self._lock:
            self._sessions.clear()

    def __enter__(self) -> ToolServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._running is not None

    @property
    def tcp_url(self) -> str | None:
        if self.host is None:
            return None
        self._require_running()
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def unix_url(self) -> str | None:
        if self.socket_path is None:
            return None
        self._require_running()
        return f"unix://{self.socket_path}"

    @property
    def url(self) -> str:
        """The TCP URL when listening on TCP, else the Unix socket's `unix:///PATH`."""
        url = self.tcp_url or self.unix_url
        assert url is not None
        return url

    def _require_running(self) -> None:
        if self._running is None:
            raise RuntimeError("the tool server is not running; call start() or use it as a context manager")

    # -- listening sockets --------------------------------------------------------------------------
    def _bind(self) -> list[socket.socket]:
        sockets: list[socket.socket] = []
        try:
            if self.host is not None:
                sockets.append(self._bind_tcp(self.host, self.port))
                self.port = sockets[-1].getsockname()[1]
            if self.socket_path is not None:
                sockets.append(self._bind_unix(self.socket_path))
        except BaseException:
            for sock in sockets:
                sock.close()
            raise
        return sockets

    @staticmethod
    def _bind_tcp(host: str, port: int) -> socket.socket:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
        # and without it a reply's header and body writes wait on delayed ACKs (40 ms per call)
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(BACKLOG)
        except BaseException:
            sock.close()
            raise
        return sock

    def _bind_unix(self, path: Path) -> socket.socket:
        if len(os.fsencode(path)) > MAX_UNIX_PATH_BYTES:
            raise ValueError(f"Unix socket path {path} is longer than {MAX_UNIX_PATH_BYTES} bytes")
        if path.is_symlink() or path.exists():
            if not stat.S_ISSOCK(path.lstat().st_mode):
                raise FileExistsError(f"{path} exists and is not a socket; not replacing it")
            if _socket_in_use(path):
                raise OSError(f"{path}: another server is listening on this socket")
            path.unlink()  # a stale socket of a server that did not stop cleanly
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))
            os.chmod(path, self.socket_mode)  # before listen(): nobody can connect in between
            sock.listen(BACKLOG)
            self._socket_inode = path.stat().st_ino
        except BaseException:
            sock.close()
            raise
        return sock

    def _remove_socket_file(self) -> None:
        path, inode, self._socket_inode = self.socket_path, self._socket_inode, None
        if path is not None and inode is not None:
            with contextlib.suppress(OSError):
                if path.lstat().st_ino == inode:  # ours, not a socket another server made since
                    path.unlink()

    # -- sessions ----------------------------------------------------------------------------------
    def register(
        self, episode: Episode, ttl_s: float | None = None, *, state: dict[str, Any] | None = None
    ) -> str:
        """Open a session on `episode`; the token is what the agent sends. `ttl_s` bounds its life;
        `state` starts the session's `state` (for routes mounted beside the tools)."""
        token = secrets.token_urlsafe(32)
        expires_at = time.monotonic() + ttl_s if ttl_s is not None else None
        with self._lock:
            self._sessions[token] = ToolSession(token, episode, expires_at, state=dict(state or {}))
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

    def session_of(self, token: str | None) -> ToolSession | None:
        """The live session of `token`; None for a missing, unknown, revoked or expired one."""
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


def _socket_in_use(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True
