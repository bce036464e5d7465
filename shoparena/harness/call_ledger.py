"""Verified tool-call origin: which calls a model really emitted, so a call's `llm` origin is a fact.

Agent code behind the tool server (a miner file, a sandboxed program) cannot be asked who wrote a
call: its answer is exactly the claim we cannot trust. What the harness can see is the inference the
agent obtained through the inference proxy. Every tool call in a response the proxy returned is
offered to the episode's ledger; a later tool call that matches an offered call (same name, same
arguments) consumes it and is recorded as `llm`. Anything else is `code`, whatever the agent says.
Each offered call is used at most once, so one response cannot vouch for a loop of calls.

Where the calls of a response are found (the harness's own protocol parsers):
- native `tool_calls` of an OpenAI assistant message (`OPENAI.parse`);
- `<tool_call>…</tool_call>` blocks in the message content, read by `UPSTREAM.parse`, which takes
  both upstream's JSON list of `{"name", "parameters"}` and Qwen3's single `{"name", "arguments"}`
  object per block. Blocks inside `<think>` are thinking, not calls, and are not offered.
A call the parser marks as malformed (no name, arguments that are not a JSON object) is not offered.

Argument matching is canonical JSON equality after parsing (`canonical_arguments`):
- whitespace and key order do not matter (both sides are parsed, keys are sorted);
- arguments sent as a JSON string (OpenAI's `function.arguments`) are parsed first;
- numbers compare by value: `1`, `1.0` and `1e0` are the same; a non-integral float compares by its
  exact binary value (`0.1` and `0.10` are equal, `0.1` and `0.1000001` are not);
- booleans are not numbers (`true` ≠ `1`), `null` is not a missing key, a string is not a number
  (`"2"` ≠ `2`);
- strings compare exactly after JSON unescaping (`"\\u00e9"` = `"é"`): no case folding, no Unicode
  normalisation, no trimming.
The tool server's reserved request keys (`origin`, `call_id`) are removed before matching.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from shoparena.harness import jsontext
from shoparena.harness.models import ParsedCall
from shoparena.harness.protocols import OPENAI, UPSTREAM

DEFAULT_MAX_PENDING = 4096
"""Offered calls an episode keeps unused at most; older ones are dropped first (a model does not
emit thousands of calls a real agent then waits to use)."""


def _normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _normal(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_normal(item) for item in value]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def canonical_arguments(arguments: Any) -> str | None:
    """The canonical JSON text two calls' arguments are compared by; None when they are not an object.

    `arguments` is a dict or its JSON text (see the module docstring for what counts as equal)."""
    if isinstance(arguments, str):
        try:
            arguments = jsontext.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    try:
        return json.dumps(_normal(arguments), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None


def response_tool_calls(message: Any) -> list[ParsedCall]:
    """Every tool call an inference response holds: native `tool_calls` and tagged calls in its content.

    `message` is a chat-completion response, its assistant message, or the generated text."""
    turn = OPENAI.parse(message)
    calls = list(turn.calls)
    text = message if isinstance(message, str) else _content_of(message)
    if text and "<tool_call>" in text:
        calls.extend(UPSTREAM.parse(text).calls)
    return calls


def _content_of(output: Any) -> str | None:
    if isinstance(output, dict) and "choices" in output:
        choices = output.get("choices") or [{}]
        output = choices[0].get("message", {}) if isinstance(choices[0], dict) else {}
    if not isinstance(output, dict):
        return None
    content = output.get("content")
    if isinstance(content, list):
        return "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return content if isinstance(content, str) else None


@dataclass
class OfferedCall:
    """One tool call of an inference response, waiting to be used by a tool call of the agent."""

    response: int
    """Which response of the episode offered it (the proxy's sequence number)."""
    index: int
    """Its position among that response's calls."""
    name: str
    key: str
    used_by: str | None = None
    """The call id the tool call that used it was recorded under."""


@dataclass
class CallLedger:
    """The calls the episode's inference responses offered, and which of them were used. Thread-safe."""

    max_pending: int = DEFAULT_MAX_PENDING
    _pending: dict[tuple[str, str], list[OfferedCall]] = field(default_factory=dict)
    _count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    offered: int = 0
    """Calls offered so far (those with a name and object arguments)."""
    used: int = 0
    dropped: int = 0
    """Offered calls dropped unused because more than `max_pending` were waiting."""
    unverified_claims: int = 0
    """Tool calls the agent claimed as `llm` that matched no offered call (recorded as `code`)."""

    def offer(
        self, response: int, calls: Iterable[ParsedCall], skip: Collection[int] = ()
    ) -> list[OfferedCall]:
        """Offer the calls of one response; returns what was offered (malformed calls are skipped, and
        so are the positions in `skip`: calls the proxy found the model could not have chosen)."""
        offered = []
        for index, call in enumerate(calls):
            if call.error is not None or call.arguments is None or not call.name or index in skip:
                continue
            key = canonical_arguments(call.arguments)
            if key is None:
                continue
            offered.append(OfferedCall(response, index, call.name, key))
        with self._lock:
            for item in offered:
                self._pending.setdefault((item.name, item.key), []).append(item)
                self._count += 1
                self.offered += 1
            while self._count > self.max_pending:
                self._drop_oldest()
        return offered

    def consume(self, name: str, arguments: Any) -> OfferedCall | None:
        """The earliest unused offered call with this name and these arguments, now used; else None."""
        with self._lock:
            if not self._pending:  # most calls of most agents: no inference, nothing to canonicalise
                return None
        key = canonical_arguments(arguments)
        if key is None:
            return None
        with self._lock:
            waiting = self._pending.get((name, key))
            if not waiting:
                return None
            item = waiting.pop(0)
            if not waiting:
                del self._pending[(name, key)]
            self._count -= 1
            self.used += 1
            return item

    def note_unverified_claim(self) -> None:
        with self._lock:
            self.unverified_claims += 1

    @property
    def pending(self) -> int:
        with self._lock:
            return self._count

    def _drop_oldest(self) -> None:
        oldest = min(self._pending, key=lambda k: (self._pending[k][0].response, self._pending[k][0].index))
        waiting = self._pending[oldest]
        waiting.pop(0)
        if not waiting:
            del self._pending[oldest]
        self._count -= 1
        self.dropped += 1
