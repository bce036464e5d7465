"""A read-only view of a row's calls, shared by the gates, the ranking signals and the axis rule."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shoparena.harness import jsontext

_ARGUMENTS_CACHE: dict[str, dict[str, Any] | None] = {}
_ARGUMENTS_CACHE_SIZE = 50_000
"""Parsed arguments by text: rows of one corpus repeat many calls (`terminate`, the same searches)."""


@dataclass(slots=True)
class TraceCall:
    """A plain dataclass, not a model: it is built from an already-validated row, ~10 per row, and
    validating it again cost more than the gates that read it."""

    turn: int
    """Index of the assistant message that made the call."""
    call_id: str
    name: str
    arguments_text: str
    turn_reasoned: bool
    """Whether that assistant turn carried reasoning text or content next to its calls."""
    _parsed: bool = field(default=False, init=False, repr=False, compare=False)
    _arguments: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    def arguments(self) -> dict[str, Any] | None:
        """The arguments as an object, or None when they do not parse to one. Parsed once per text
        (cached, bounded); the dict is shared, so callers read it and never mutate it."""
        if not self._parsed:
            text = self.arguments_text
            if text in _ARGUMENTS_CACHE:
                self._arguments = _ARGUMENTS_CACHE[text]
            else:
                try:
                    value = jsontext.loads(text) if text.strip() else {}
                except ValueError:
                    value = None
                self._arguments = value if isinstance(value, dict) else None
                if len(_ARGUMENTS_CACHE) >= _ARGUMENTS_CACHE_SIZE:
                    _ARGUMENTS_CACHE.clear()
                _ARGUMENTS_CACHE[text] = self._arguments
            self._parsed = True
        return self._arguments


def trace_calls(messages: list[dict]) -> list[TraceCall]:
    calls = []
    for index, message in enumerate(messages):
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        reasoned = bool(
            (message.get("reasoning_content") or "").strip() or (message.get("content") or "").strip()
        )
        for call in message["tool_calls"]:
            calls.append(
                TraceCall(
                    turn=index,
                    call_id=call.get("id") or "",
                    name=call["function"]["name"],
                    arguments_text=call["function"]["arguments"],
                    turn_reasoned=reasoned,
                )
            )
    return calls
