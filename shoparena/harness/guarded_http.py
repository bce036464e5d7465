"""uvicorn's h11 protocol made safe to face a hostile client: a deadline on each request head, a cap on
open connections, and a head cap that counts every byte of a head however it arrives.

Both servers run it — the tool server (in the evaluator's process, outside the sandbox's memory
cgroup, facing the miner's code) and the arena (facing the internet) — each with its own numbers, as a
subclass made by `guarded_protocol` (or a module-level subclass where uvicorn must pickle it for worker
processes). uvicorn has none of the three: an idle or trickling connection is held forever, there is no
connection limit, and h11 bounds a head only while it is incomplete (`max_incomplete_event_size`), so a
head that arrives in one read — up to the transport's read size, 64–256 KiB — was accepted whole.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_HEAD_BYTES = 16 * 1024
"""A request head (request line and headers) larger than this is refused with 400 and a close."""
HEAD_TIMEOUT_S = 10.0
"""How long a connection may take to send a complete request head (a slow-loris client is closed)."""
DEFAULT_MAX_CONNECTIONS = 1024
_TOO_MANY = b'{"ok": false, "error": "too many open connections to this server"}'
TOO_MANY_CONNECTIONS = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"retry-after: 1\r\ncontent-length: " + str(len(_TOO_MANY)).encode() + b"\r\n\r\n" + _TOO_MANY
)
"""What a connection past the cap gets before it is closed (written raw: no request was parsed)."""


class HeadCountingConnection(h11.Connection):
    """h11's server side, refusing a complete request head over the cap as well as an incomplete one.

    A head is the bytes h11 takes off its receive buffer to make a `Request` event, counted after the
    fact, so nothing is missed: leading blank lines, whitespace h11 strips, folded lines, a head split
    over reads or sent in one. (`_receive_buffer` is h11's, read for its length only; the tests of
    both servers fail if h11 ever stops counting this way.)"""

    def next_event(self) -> Any:
        if self.their_state is not h11.IDLE:
            return super().next_event()
        buffered = len(self._receive_buffer)
        event = super().next_event()
        if isinstance(event, h11.Request):
            size = buffered - len(self._receive_buffer)
            if size > self._max_incomplete_event_size:
                raise h11.RemoteProtocolError(
                    f"request head of {size} bytes is over the {self._max_incomplete_event_size}-byte cap",
                    error_status_hint=431,
                )
        return event


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request head, a cap on open connections and the
    head cap counted whole (`HeadCountingConnection`). A subclass carries a server's numbers."""

    max_connections = DEFAULT_MAX_CONNECTIONS
    head_timeout_s = HEAD_TIMEOUT_S
    max_head_bytes = MAX_HEAD_BYTES
    _head_timer: asyncio.TimerHandle | None = None
    _timed_cycle: object = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = HeadCountingConnection(h11.SERVER, max_incomplete_event_size=self.max_head_bytes)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            transport.write(TOO_MANY_CONNECTIONS)
            transport.close()
            return
        self._await_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._head_timer is not None and self.cycle is not self._timed_cycle:
            self._cancel_head_timer()  # a new request's head is complete

    def on_response_complete(self) -> None:
        self._await_head()  # before super(): it may start a pipelined request at once
        super().on_response_complete()
        if self.cycle is not self._timed_cycle or self.transport.is_closing():
            self._cancel_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        """Close the connection unless a new request head (a new cycle) arrives in time."""
        self._cancel_head_timer()
        self._timed_cycle = self.cycle
        self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_too_slow)

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self.cycle is self._timed_cycle and not self.transport.is_closing():
            self.transport.close()

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None


def guarded_protocol(
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    head_timeout_s: float = HEAD_TIMEOUT_S,
    max_head_bytes: int = MAX_HEAD_BYTES,
    name: str = "GuardedProtocol",
) -> type[GuardedH11Protocol]:
    """A protocol class with these numbers (for a server run in this process: it cannot be pickled)."""
    return type(
        name,
        (GuardedH11Protocol,),
        {
            "max_connections": max_connections,
            "head_timeout_s": head_timeout_s,
            "max_head_bytes": max_head_bytes,
        },
    )
