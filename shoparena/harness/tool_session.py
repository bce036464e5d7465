"""A tool-server session, and what the routes need of the server that holds the sessions.

The routes (`tool_routes`) look sessions up and read the server's request limits; the server
(`tool_server`) builds its app from the routes. Both depend on this module, and the server satisfies
`SessionHost`, so the routes never import the server.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from shoparena.harness.call_ledger import CallLedger
from shoparena.harness.episode import Episode


@dataclass
class ToolSession:
    """One registered episode, found by its token."""

    token: str
    episode: Episode
    expires_at: float | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Serialises calls: an Episode is not thread-safe, and a log entry's step must match its order."""
    state: dict[str, Any] = field(default_factory=dict)
    """What routes mounted beside the tools keep per session (e.g. the inference proxy's log)."""
    ledger: CallLedger = field(default_factory=CallLedger)
    """The tool calls the episode's inference responses offered: what makes a call's origin `llm`."""
    open_body_bytes: int = 0
    """Body bytes the session's open requests have declared (`tool_routes.BodyBudget`; event loop only)."""


class SessionHost(Protocol):
    """What a route asks of the server it is mounted on (`ToolServer` is one): the session of a token
    and the limits on a request body."""

    max_body_bytes: int
    request_timeout_s: float
    max_open_body_bytes: int

    def session_of(self, token: str | None) -> ToolSession | None: ...
