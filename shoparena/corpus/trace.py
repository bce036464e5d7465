"""A read-only view of a row's calls, shared by the gates, the ranking signals and the axis rule."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from shoparena.harness import jsontext


class TraceCall(BaseModel):
    turn: int
    """Index of the assistant message that made the call."""
    call_id: str
    name: str
    arguments_text: str
    turn_reasoned: bool
    """Whether that assistant turn carried reasoning text or content next to its calls."""

    def arguments(self) -> dict[str, Any] | None:
        """The arguments as an object, or None when they do not parse to one."""
        try:
            value = jsontext.loads(self.arguments_text) if self.arguments_text.strip() else {}
        except ValueError:
            return None
        return value if isinstance(value, dict) else None


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
