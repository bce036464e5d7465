"""The reasoning judge's verdict on one trajectory (SPEC §7) and the names of the judge's gates.

The gates are the vocabulary of `JudgeVerdict.gate`: every judge answers in these names, and every
summary of verdicts (the eval's metrics, `shoparena judge`) lists them, so they live with the verdict.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

REASONED = "reasoned"
ANALYSES_RESULTS = "analyses_results"
CITES_DATUM = "cites_datum"
COMPARES_CANDIDATES = "compares_candidates"
PASSED = "passed"

GATES: tuple[str, ...] = (REASONED, ANALYSES_RESULTS, CITES_DATUM, COMPARES_CANDIDATES)
"""In order; each needs every one before it."""

QUALITY_WHEN_FAILED: dict[str, float] = {
    REASONED: 0.1,
    ANALYSES_RESULTS: 0.3,
    CITES_DATUM: 0.5,
    COMPARES_CANDIDATES: 0.7,
    PASSED: 0.9,
}
"""`gate` of a verdict is the first failing gate (or `passed`); this maps it to the quality."""

Quality = Literal[0.1, 0.3, 0.5, 0.7, 0.9]


class JudgeVerdict(BaseModel):
    """The reasoning judge's output for one trajectory (SPEC §7)."""

    model_config = ConfigDict(extra="forbid")

    quality: Quality
    gate: str
    explanation: str
    cited_spans: list[str] = Field(default_factory=list)
    judge_model: str
    judge_version: str
