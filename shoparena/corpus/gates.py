"""The quality and format gates (SPEC §8.2–8.3). A row gets the reason of the first gate it fails, in
`GATE_REASONS` order (cheap checks first, token counting last)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from shoparena.corpus.models import (
    JUDGE_BELOW_THRESHOLD,
    OUTCOME_FAILED,
    RECOMMEND_COUNT,
    RECOMMEND_UNGROUNDED,
    RECOMMEND_UNRESOLVED,
    THINK_THEN_STOP,
    TOO_LONG,
    UNPAIRED_TOOL_CALL,
    CorpusRow,
)
from shoparena.corpus.normalise import ENDING_TOOLS
from shoparena.corpus.trace import TraceCall
from shoparena.harness.tools import split_ids

DEFAULT_MAX_LENGTH = 14336
DEFAULT_MIN_QUALITY = 0.5


class GateFailure(BaseModel):
    reason: str
    detail: str


def quality_gate(row: CorpusRow, min_quality: float) -> GateFailure | None:
    quality = row.metadata.judge_quality
    if quality is None:
        return GateFailure(
            reason=JUDGE_BELOW_THRESHOLD, detail="unjudged (no judge quality): counts as below"
        )
    if quality < min_quality:
        return GateFailure(reason=JUDGE_BELOW_THRESHOLD, detail=f"judge quality {quality} < {min_quality}")
    return None


def outcome_gate(row: CorpusRow, require_success: bool) -> GateFailure | None:
    """With `require_success`, a row whose episode is recorded as failed (strict scoring) is dropped: its
    reasoning may be fine, but SFT on it teaches a wrong answer. A row without a recorded outcome passes."""
    if require_success and row.metadata.score_success is False:
        return GateFailure(reason=OUTCOME_FAILED, detail="the episode failed (score.success is false)")
    return None


def pairing_gate(messages: list[dict]) -> GateFailure | None:
    """Every call answered by exactly one later tool message with its id, and no tool message unasked."""
    open_ids: dict[str, int] = {}
    answered: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                call_id = call.get("id")
                if not call_id:
                    return GateFailure(
                        reason=UNPAIRED_TOOL_CALL, detail=f"messages[{index}]: a tool call has no id"
                    )
                if call_id in open_ids or call_id in answered:
                    return GateFailure(
                        reason=UNPAIRED_TOOL_CALL, detail=f"messages[{index}]: duplicate call id {call_id!r}"
                    )
                open_ids[call_id] = index
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_ids:
                what = "answers no earlier call" if call_id not in answered else "answers a call twice"
                return GateFailure(
                    reason=UNPAIRED_TOOL_CALL, detail=f"messages[{index}]: tool message {call_id!r} {what}"
                )
            del open_ids[call_id]
            answered.add(call_id)
    if open_ids:
        call_id, index = next(iter(open_ids.items()))
        return GateFailure(
            reason=UNPAIRED_TOOL_CALL, detail=f"messages[{index}]: call {call_id!r} has no tool response"
        )
    return None


def recommend_ids(call: TraceCall) -> list[str] | None:
    """The ids of a recommend_product call, or None when its arguments do not parse."""
    arguments: Any = call.arguments()
    if arguments is None:
        return None
    ids = arguments.get("product_ids")
    if isinstance(ids, list):
        ids = ",".join(str(i) for i in ids)
    if not isinstance(ids, str | int):
        return None
    parsed = split_ids(str(ids))
    return parsed or None


def recommend_gates(calls: list[TraceCall], catalog: Any | None) -> GateFailure | None:
    recommends = [c for c in calls if c.name == "recommend_product"]
    if len(recommends) != 1:
        return GateFailure(
            reason=RECOMMEND_COUNT, detail=f"{len(recommends)} recommend_product calls; exactly 1 required"
        )
    ids = recommend_ids(recommends[0])
    if ids is None:
        return GateFailure(
            reason=RECOMMEND_UNRESOLVED,
            detail=f"recommend_product arguments do not parse to product ids: {recommends[0].arguments_text[:80]!r}",
        )
    if catalog is not None:
        found = catalog.get_products(ids)
        missing = [i for i in ids if i not in found]
        if missing:
            return GateFailure(
                reason=RECOMMEND_UNRESOLVED,
                detail=f"ids the catalogue does not return: {', '.join(missing[:5])}",
            )
    return None


def grounding_gate(row: CorpusRow) -> GateFailure | None:
    """A recorded recommendation of products no search of its episode returned (the call record's
    `ungrounded`, issue 22) is an answer from memory, not from the trace: it teaches nothing true."""
    if row.metadata.ungrounded is not None:
        return GateFailure(reason=RECOMMEND_UNGROUNDED, detail=f"recommend_product {row.metadata.ungrounded}")
    return None


def ending_gate(messages: list[dict], calls: list[TraceCall]) -> GateFailure | None:
    """The last assistant turn must end the episode (call recommend_product/terminate) or be a plain
    answer after an ending call; a last turn of thinking only, or of other tool calls, stopped mid-work."""
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"), None)
    if last is None:
        return GateFailure(reason=THINK_THEN_STOP, detail="no assistant turn")
    message = messages[last]
    names = [c["function"]["name"] for c in message.get("tool_calls") or []]
    if names:
        if ENDING_TOOLS & set(names):
            return None
        return GateFailure(
            reason=THINK_THEN_STOP,
            detail=f"ends after calling {', '.join(names)} without recommend_product/terminate",
        )
    ended_before = any(c.name in ENDING_TOOLS for c in calls if c.turn < last)
    if ended_before and (message.get("content") or "").strip():
        return None
    what = "a thinking-only turn" if (message.get("reasoning_content") or "").strip() else "an empty turn"
    if (message.get("content") or "").strip():
        what = "a text turn before any recommend_product/terminate"
    return GateFailure(reason=THINK_THEN_STOP, detail=f"ends on {what}")


def length_gate(tokens: int, max_length: int) -> GateFailure | None:
    if tokens > max_length:
        return GateFailure(reason=TOO_LONG, detail=f"{tokens} tokens > max_length {max_length}")
    return None
