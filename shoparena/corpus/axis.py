"""Axis classifier (SPEC §8.5): axis A = the model emitted the tool calls; axis B = code emitted them and
the model only classified, scored or narrated.

By origin (when the source recorded who emitted each call): axis B iff code emitted at least half of the
row's non-ending calls (everything except recommend_product/terminate, which a harness may replay on the
agent's word). A row-level `tool_call_origin` of `code`/`llm` decides the same way.

By structure (when it did not): a model's call turn carries its reasoning — text or thinking next to
the calls — while code issues bare calls (an assistant message with tool calls and no text at all).
Axis B iff at least half of the non-ending calls sit in bare turns. A trace with no non-ending calls
is classified on all its calls. docs/corpus.md records the rule's measured accuracy.
"""

from __future__ import annotations

from shoparena.corpus.models import Axis, CorpusRow
from shoparena.corpus.normalise import ENDING_TOOLS
from shoparena.corpus.trace import TraceCall, trace_calls


def axis_by_origin(row: CorpusRow) -> Axis | None:
    meta = row.metadata
    counts = meta.origin_counts
    if counts and (counts.get("llm", 0) + counts.get("code", 0)) > 0:
        return "B" if counts.get("code", 0) * 2 >= counts.get("llm", 0) + counts.get("code", 0) else "A"
    if meta.tool_call_origin == "code":
        return "B"
    if meta.tool_call_origin == "llm":
        return "A"
    return None


def axis_by_structure(calls: list[TraceCall]) -> Axis:
    working = [c for c in calls if c.name not in ENDING_TOOLS] or calls
    if not working:
        return "A"
    bare = sum(1 for c in working if not c.turn_reasoned)
    return "B" if bare * 2 >= len(working) else "A"


def classify_axis(row: CorpusRow, calls: list[TraceCall] | None = None) -> tuple[Axis, str]:
    """(axis, method) with method `origin` or `structure`."""
    axis = axis_by_origin(row)
    if axis is not None:
        return axis, "origin"
    return axis_by_structure(trace_calls(row.messages) if calls is None else calls), "structure"
