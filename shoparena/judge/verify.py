"""Verification of any judge's claim against the record, in code: no judge's word is taken as is.

- Gate 1 (`reasoned`) is a fact of the record (who emitted the calls, how much the model wrote, what
  inference was reported): when the rule fails it, the verdict is 0.1 whatever the judge said.
- Every cited span must occur verbatim in the trace (whitespace runs compare as one space). A span that
  does not is fabricated: the gate it was cited for fails (an unattributed one fails the first evidence
  gate the judge claims passed, the conservative reading).
- Each evidence gate a judge claims passed needs a verified span of the model's own text: for
  `analyses_results` in a turn written after a tool result, for `cites_datum` one holding a datum the
  verified log returned.

A judge may always be stricter than the rules; verification only ever lowers a quality.
"""

from __future__ import annotations

from shoparena.judge.gates import EVIDENCE_GATES, CitedSpan, Claim, gates_passed_before
from shoparena.judge.rules import DEFAULT_RULES, RuleSettings, check_reasoned, datums_in
from shoparena.judge.trace import TraceView, collapse_whitespace
from shoparena.records.trajectory import TokenUsage
from shoparena.records.verdict import (
    ANALYSES_RESULTS,
    CITES_DATUM,
    QUALITY_WHEN_FAILED,
    REASONED,
    JudgeVerdict,
)

MIN_SPAN_CHARS = 4
MAX_EXPLANATION_CHARS = 1200


def _short(text: str, limit: int = 80) -> str:
    text = collapse_whitespace(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _SpanCheck:
    def __init__(self, view: TraceView, span: CitedSpan):
        self.span = span
        self.gate = span.gate if span.gate in EVIDENCE_GATES else None
        """A span cited for a gate that needs no evidence counts as unattributed."""
        places = (
            list(view.occurrences(span.text)) if len(collapse_whitespace(span.text)) >= MIN_SPAN_CHARS else []
        )
        self.in_trace = bool(places)
        self.by_model = any(by_model for _, _, by_model in places)
        after = {turn.message_index for turn in view.turns if turn.after_observation}
        self.after_observation = any(by_model and index in after for index, _, by_model in places)


def verify_claim(
    view: TraceView,
    claim: Claim,
    usage: TokenUsage,
    *,
    judge_model: str,
    judge_version: str,
    rules: RuleSettings = DEFAULT_RULES,
) -> JudgeVerdict:
    """The verdict a claim is worth once checked against the trace and the verified log."""
    notes: list[str] = []
    reasoned = check_reasoned(view, usage, rules)
    checks = [_SpanCheck(view, span) for span in claim.spans]
    fabricated = [c for c in checks if not c.in_trace]
    for check in fabricated:
        notes.append(f"cited span not in the trace: {_short(check.span.text)!r}")

    final_gate = claim.gate
    if not reasoned.passed:
        final_gate = REASONED
        if claim.gate != REASONED:
            notes.append(f"gate {REASONED} failed by rule: {reasoned.reason}")
    else:
        claimed = gates_passed_before(claim.gate)
        first_evidence_gate = next((g for g in EVIDENCE_GATES if g in claimed), None)
        for gate in EVIDENCE_GATES:
            if gate not in claimed:
                break
            failure = _evidence_failure(view, gate, checks, gate == first_evidence_gate)
            if failure:
                final_gate = gate
                notes.append(f"gate {gate} failed verification: {failure}")
                break

    verified_spans = list(dict.fromkeys(c.span.text for c in checks if c.in_trace))
    if final_gate == REASONED and not reasoned.passed:
        explanation = reasoned.reason
    else:
        explanation = claim.explanation.strip() or f"first failing gate: {final_gate}"
    if notes:
        explanation = f"{explanation} [verification: {'; '.join(notes)}]"
    if len(explanation) > MAX_EXPLANATION_CHARS:
        explanation = explanation[: MAX_EXPLANATION_CHARS - 1] + "…"
    return JudgeVerdict(
        quality=QUALITY_WHEN_FAILED[final_gate],
        gate=final_gate,
        explanation=explanation,
        cited_spans=verified_spans,
        judge_model=judge_model,
        judge_version=judge_version,
    )


def _evidence_failure(view: TraceView, gate: str, checks: list[_SpanCheck], first: bool) -> str | None:
    for check in checks:
        if check.in_trace:
            continue
        if check.gate == gate or (check.gate is None and first):
            return f"its cited span {_short(check.span.text)!r} does not occur in the trace"
    relevant = [c for c in checks if c.in_trace and c.by_model and c.gate in (gate, None)]
    if gate == ANALYSES_RESULTS:
        relevant = [c for c in relevant if c.after_observation]
    if gate == CITES_DATUM:
        relevant = [c for c in relevant if datums_in(c.span.text, view.observed, view.query)]
    if not relevant:
        what = {
            ANALYSES_RESULTS: "a span of the model's text written after a tool result",
            CITES_DATUM: "a span of the model's text holding a datum the verified log returned",
        }.get(gate, "a span of the model's own text")
        return f"claimed passed without {what}"
    return None
