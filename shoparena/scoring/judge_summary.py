"""Judge verdicts → q, the coefficient and the arena's final score (SPEC §4): the one summary both
`shoparena eval` (metrics.json) and `shoparena judge` report, so the same verdicts read the same.

The arithmetic itself is `metrics.judge_coefficient` and `metrics.arena_final_score`; this module only
turns verdicts into q. Qualities are multiples of 0.1, so the mean is rounded to 9 places: a float sum
like 0.7 + 0.9 + … must not put q a hair under 0.8 and cost full credit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from shoparena.records.verdict import QUALITY_WHEN_FAILED, REASONED, JudgeVerdict
from shoparena.scoring.metrics import arena_final_score, judge_coefficient

QUALITY_LEVELS: tuple[str, ...] = tuple(f"{q:.1f}" for q in sorted(set(QUALITY_WHEN_FAILED.values())))
ERRORED_QUALITY = QUALITY_WHEN_FAILED[REASONED]
"""The quality an episode that ended in an error (a crash, a timeout) counts with in q. It is not
judged — its trace is no reasoning to grade — but leaving it out of q would let a miner crash on
purpose wherever its reasoning is poor and lift its q on the rest; so it counts as no reasoning."""


def mean_quality(verdicts: Iterable[JudgeVerdict | None]) -> float | None:
    """q over the judged problems (None verdicts are unjudged and left out); None when none was judged."""
    qualities = [v.quality for v in verdicts if v is not None]
    if not qualities:
        return None
    return round(sum(qualities) / len(qualities), 9)


class JudgeSummary(BaseModel):
    """What `eval` (metrics.json's `judge`) and `judge` report about a run's judging."""

    model_config = ConfigDict(extra="forbid")

    judged: int
    unjudged: int
    errored: int = 0
    """Of the unjudged, the episodes that ended in an error: counted in q at `ERRORED_QUALITY`."""
    q: float | None
    coeff: float | None
    final_score: float | None = None
    """success_rate × coeff, when a success rate was given."""
    quality_distribution: dict[str, int] = Field(default_factory=dict)
    """quality level → count, every level listed."""
    gate_distribution: dict[str, int] = Field(default_factory=dict)
    """first failing gate (or passed) → count, every gate listed in the decision tree's order."""


def summarize_verdicts(
    verdicts: Iterable[JudgeVerdict | None], success_rate: float | None = None, errored: int = 0
) -> JudgeSummary:
    """`verdicts` holds one entry per episode, None for an unjudged one; `errored` of those None ended
    in an error (a crash, a timeout) and count in q at `ERRORED_QUALITY` (once any episode is judged)."""
    verdicts = list(verdicts)
    judged = [v for v in verdicts if v is not None]
    qualities = [v.quality for v in judged] + [ERRORED_QUALITY] * errored if judged else []
    q = round(sum(qualities) / len(qualities), 9) if qualities else None
    gates = Counter(v.gate for v in judged)
    qualities = Counter(f"{v.quality:.1f}" for v in judged)
    return JudgeSummary(
        judged=len(judged),
        unjudged=len(verdicts) - len(judged),
        errored=errored,
        q=q,
        coeff=judge_coefficient(q) if q is not None else None,
        final_score=arena_final_score(success_rate, q)
        if q is not None and success_rate is not None
        else None,
        quality_distribution={level: qualities.get(level, 0) for level in QUALITY_LEVELS},
        gate_distribution={gate: gates.get(gate, 0) for gate in QUALITY_WHEN_FAILED},
    )
