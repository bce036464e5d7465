"""Serve an ASGI app with uvicorn from a background thread of this process, on a real TCP socket.

Why here: the model server (and its tests and benchmark) and the arena's `running(app)` run a FastAPI
app in-process. `ServerThread` is the start/stop of a uvicorn server in a daemon thread that `AppThread`
and the tool server (`harness.tool_server`, with its own sockets and settings) both run on.

HTTP is parsed by h11, never httptools (uvicorn's httptools protocol buffers a request head without
any bound); the socket is TCP with `IPPROTO_TCP` so asyncio sets TCP_NODELAY (otherwise a reply's
header and body writes wait on delayed ACKs).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any, ClassVar

START_TIMEOUT_S = 30.0
STOP_GRACE_S = 5.0
"""How long `stop()` lets requests in flight finish before uvicorn cancels them."""
BACKLOG = 1024
CONNECT_HOST = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


class QuietCancellation(logging.Filter):
    """Drops uvicorn's "Exception in ASGI application" for a request cancelled because its server was
    made to stop (`stop()` past its grace, Ctrl-C in the loop): that is the stop doing its job, and a
    traceback of anyio's internals on the user's terminal reads as a crash."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, asyncio.CancelledError)


def _quiet_cancellations() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, QuietCancellation) for f in logger.filters):
        logger.addFilter(QuietCancellation())


class ServerThread:
    """A uvicorn server serving already-bound sockets from a daemon thread, from `start` (it is
    listening) to `stop`."""

    def __init__(self, server: Any, thread: threading.Thread):
        self.server = server
        self.thread = thread

    @classmethod
    def start(
        cls, config: Any, sockets: Sequence[socket.socket], *, name: str, failed: str, timeout_s: float
    ) -> ServerThread:
        """Run `config` on `sockets` in a thread named `name`; when it does not start, the sockets are
        closed and the error is `failed` and why."""
        import uvicorn

        server = uvicorn.Server(config)
        failure: list[BaseException] = []

        def serve() -> None:
            try:
                server.run(sockets=list(sockets))
            except BaseException as exc:  # reported by start(); a thread's exception would be lost
                failure.append(exc)

        thread = threading.Thread(target=serve, name=name, daemon=True)
        thread.start()
        deadline = time.monotonic() + timeout_s
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.002)
        if not server.started:
            server.should_exit = True
            thread.join(timeout=2)
            for sock in sockets:
                sock.close()
            why = f": {type(failure[0]).__name__}: {failure[0]}" if failure else ""
            raise RuntimeError(f"{failed}{why}")
        return cls(server, thread)

    def stop(self, grace_s: float) -> None:
        """Ask the server to exit; past `grace_s`, requests still in flight are cancelled."""
        self.server.should_exit = True
        self.thread.join(timeout=grace_s)
        if self.thread.is_alive():
            self.server.force_exit = True
            self.thread.join(timeout=2)

    def wait(self) -> None:
        """Block until the server stops (Ctrl-C in a CLI)."""
        while self.thread.is_alive():
            self.thread.join(timeout=0.5)


class AppThread:
    """`app` served on `host:port` (port 0: a free one) while started; a context manager.

    `url` is `http://HOST:PORT` once started (loopback for a wildcard HOST). uvicorn options (log_level, access_log, …) pass through;
    `http` may be "h11" (the default) or a subclass of uvicorn's h11 protocol (the arena's guarded one), never httptools.
    """

    FIXED: ClassVar[dict[str, str]] = {"lifespan": "off"}
    """Always so: no lifespan events, whatever the options say."""

    def __init__(
        self, app: Any, host: str = "127.0.0.1", port: int = 0, *, name: str = "app", **options: Any
    ):
        self.app = app
        self.host = host
        self.port = port
        self.name = name
        self.options = {"log_level": "warning", "access_log": False, **options}
        self._running: ServerThread | None = None
        self._socket: socket.socket | None = None

    @property
    def url(self) -> str:
        if self._running is None:
            raise RuntimeError(f"{self.name}: not started")
        host = CONNECT_HOST.get(self.host, self.host)  # a wildcard address is reached on loopback
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    def start(self) -> AppThread:
        import uvicorn

        if self._running is not None:
            return self
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.listen(BACKLOG)
        except OSError as exc:
            sock.close()
            raise OSError(f"{self.name}: cannot listen on {self.host}:{self.port}: {exc}") from None
        self.port = sock.getsockname()[1]
        options = {**self.options, "http": self.options.get("http", "h11")}
        if isinstance(options["http"], str) and options["http"] != "h11":
            raise ValueError(
                f"{self.name}: HTTP is parsed by h11 (or a subclass of its protocol), not {options['http']}"
            )
        config = uvicorn.Config(self.app, **self.FIXED, backlog=BACKLOG, **options)
        _quiet_cancellations()  # after Config: it (re)configures uvicorn's loggers
        self._running = ServerThread.start(
            config,
            [sock],
            name=f"{self.name}:{self.port}",
            failed=f"{self.name} did not start on {self.host}:{self.port}",
            timeout_s=START_TIMEOUT_S,
        )
        self._socket = sock
        return self

    def stop(self) -> None:
        running, self._running = self._running, None
        if running is None:
            return
        running.stop(STOP_GRACE_S)
        if self._socket is not None:
            self._socket.close()

    def serve_forever(self) -> None:
        """Block until the server stops (Ctrl-C in a CLI)."""
        if self._running is None:
            raise RuntimeError(f"{self.name}: not started")
        self._running.wait()

    def __enter__(self) -> AppThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
