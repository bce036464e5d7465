"""Rows counted by reject reason and by bucket as each stage decides their fate: the stages' tallies
add up to the manifest's `reasons` and `by_bucket`."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from shoparena.corpus.models import JUDGE_BELOW_THRESHOLD


@dataclass
class Tally:
    """A plain dataclass: a worker sends one back per chunk, pickled."""

    reasons: Counter[str] = field(default_factory=Counter)
    """Rejects by reason, reasons in the order first met (the CLI lists ties in that order)."""
    buckets: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    """bucket → fate (train, eval, axis_b, rejected) → rows."""
    unjudged: int = 0
    """`judge_below_threshold` rejects that had no judge score at all."""

    def add(self, fate: str, bucket: str | None) -> None:
        self.buckets[bucket or "unknown"][fate] += 1

    def reject(self, reason: str, bucket: str | None, unjudged: bool = False) -> None:
        self.reasons[reason] += 1
        if unjudged and reason == JUDGE_BELOW_THRESHOLD:
            self.unjudged += 1
        self.add("rejected", bucket)

    def merge(self, other: Tally) -> None:
        self.reasons.update(other.reasons)
        for bucket, fates in other.buckets.items():
            self.buckets[bucket].update(fates)
        self.unjudged += other.unjudged
