"""The judge's decision tree (SPEC §7): four gates in order; the first that fails sets the quality.

Both judges speak in the gates' names (`shoparena.records.verdict`, beside the verdict that carries
them), and the LLM judge is asked to answer with them, so one verification step (`verify.py`) can check
any judge's claim against the trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shoparena.records.verdict import (
    ANALYSES_RESULTS,
    CITES_DATUM,
    COMPARES_CANDIDATES,
    GATES,
    PASSED,
    QUALITY_WHEN_FAILED,
    REASONED,
)

EVIDENCE_GATES: tuple[str, ...] = (ANALYSES_RESULTS, CITES_DATUM, COMPARES_CANDIDATES)
"""The gates a judge must back with a span of the model's own text."""

GATE_QUESTIONS: dict[str, str] = {
    REASONED: "the model really reasoned: real inference with enough completion tokens and reasoning text",
    ANALYSES_RESULTS: "its thinking analyses tool results: text written after an observation refers to "
    "what that observation contained",
    CITES_DATUM: "it cites a specific datum seen in an observation (a price, a product or shop id, an "
    "attribute value) and fabricates none",
    COMPARES_CANDIDATES: "it compares at least two candidate products with a reason",
}


def gate_for_quality(quality: float) -> str:
    """The failing gate a quality stands for (quality is authoritative when a judge's two disagree)."""
    for gate, value in QUALITY_WHEN_FAILED.items():
        if abs(value - quality) < 1e-9:
            return gate
    raise ValueError(f"quality {quality} is not one of {sorted(QUALITY_WHEN_FAILED.values())}")


def gates_passed_before(failing_gate: str) -> tuple[str, ...]:
    """The gates a verdict failing at `failing_gate` claims were passed."""
    if failing_gate == PASSED:
        return GATES
    return GATES[: GATES.index(failing_gate)]


@dataclass
class GateCheck:
    """One gate's outcome by rule, with the spans of the model's text that show it."""

    gate: str
    passed: bool
    reason: str
    spans: list[str] = field(default_factory=list)


@dataclass
class CitedSpan:
    """A span a judge cites, with the gate it supports when the judge said so (None: unattributed)."""

    text: str
    gate: str | None = None


@dataclass
class Claim:
    """A judge's unverified answer: what it says failed first, why, and what it cites."""

    gate: str
    explanation: str
    spans: list[CitedSpan] = field(default_factory=list)

    @property
    def quality(self) -> float:
        return QUALITY_WHEN_FAILED[self.gate]
