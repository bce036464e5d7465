"""Ranking signals and the per-problem choice (SPEC §8.4).

Rows of one problem are ordered by `rank_key` — verification before recommending, then
think-and-tool-call depth, then distinct search reformulations, then fewer repeated identical calls,
then judge quality — and the best `per_problem` are kept. Rows tied on the whole key are chosen to be
as different from the already chosen ones as possible in tool-call shape (the sequence of tools
called), so two kept rows of one problem teach two ways to solve it; remaining ties go to the
smaller content hash, which makes the choice independent of input order.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

from shoparena.corpus.models import CorpusRow, Signals
from shoparena.corpus.trace import TraceCall, trace_calls
from shoparena.harness.tools import split_ids

SHAPE_LETTERS = {
    "find_product": "F",
    "view_product_information": "V",
    "check_product_match": "C",
    "find_products_in_same_shop": "S",
    "calculate_voucher": "K",
    "view_shop_information": "H",
    "view_voucher_information": "O",
    "recommend_product": "R",
    "terminate": "T",
    "web_search": "W",
}


def _recommended_ids(call: TraceCall) -> set[str]:
    arguments = call.arguments() or {}
    ids = arguments.get("product_ids")
    if isinstance(ids, list):
        return {str(i).strip() for i in ids}
    return set(split_ids(str(ids))) if ids is not None else set()


def compute_signals(row: CorpusRow, calls: list[TraceCall] | None = None) -> Signals:
    calls = trace_calls(row.messages) if calls is None else calls
    reasoned_call_turns = {c.turn for c in calls if c.turn_reasoned}
    queries = set()
    for call in calls:
        if call.name == "find_product":
            q = (call.arguments() or {}).get("q")
            if q is not None:
                queries.add(" ".join(str(q).lower().split()))
    recommend_at = next((i for i, c in enumerate(calls) if c.name == "recommend_product"), None)
    verified = False
    if recommend_at is not None:
        recommended = _recommended_ids(calls[recommend_at])
        for call in calls[:recommend_at]:
            if call.name == "check_product_match":
                verified = True
            elif call.name == "view_product_information":
                viewed = set(split_ids(str((call.arguments() or {}).get("product_ids", ""))))
                verified = verified or bool(viewed & recommended)
    longest = run = 0
    previous = None
    for call in calls:
        key = (call.name, call.arguments_text)
        run = run + 1 if key == previous else 1
        previous = key
        longest = max(longest, run)
    return Signals(
        depth=len(reasoned_call_turns),
        tool_calls=len(calls),
        reformulations=len(queries),
        verified=verified,
        longest_identical_run=longest,
        shape="".join(SHAPE_LETTERS.get(c.name, "?") for c in calls),
    )


def rank_key(signals: Signals, judge_quality: float | None) -> tuple:
    """Larger is better."""
    return (
        int(signals.verified),
        signals.depth,
        signals.reformulations,
        -max(0, signals.longest_identical_run - 1),
        judge_quality or 0.0,
    )


@dataclass(frozen=True, slots=True)
class Candidate:
    """What ranking keeps in memory per row: the key, the shape and a tie-breaking id. A plain
    dataclass: one is built per axis-A row from values the pipeline made itself."""

    seq: int
    key: tuple
    shape: str
    digest: str


def shape_distance(a: str, b: str) -> float:
    return 1.0 - SequenceMatcher(None, a, b, autojunk=False).ratio()


def choose(candidates: list[Candidate], keep: int) -> tuple[list[Candidate], list[Candidate]]:
    """(kept, ranked out) for one problem's rows."""
    remaining = sorted(candidates, key=lambda c: (tuple(-x for x in c.key), c.digest))
    kept: list[Candidate] = []
    while remaining and len(kept) < keep:
        best = remaining[0].key
        tied = [c for c in remaining if c.key == best]
        if kept and len(tied) > 1:
            pick = max(
                tied, key=lambda c: (min(shape_distance(c.shape, k.shape) for k in kept), _neg(c.digest))
            )
        else:
            pick = tied[0]
        kept.append(pick)
        remaining.remove(pick)
    return kept, remaining


def _neg(digest: str) -> tuple:
    """Orders digests descending inside a `max`, so the smallest digest wins remaining ties."""
    return tuple(-ord(ch) for ch in digest)
