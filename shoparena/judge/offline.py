"""The offline judge: the four gates by rule (`rules.py`), deterministic, no model, no network.

Used by tests, the demo, and anyone without an endpoint. Its claim goes through the same verification
as the LLM judge's, so the spans it reports are checked the same way.
"""

from __future__ import annotations

from shoparena.judge.gates import CitedSpan, Claim
from shoparena.judge.rules import (
    DEFAULT_RULES,
    RuleSettings,
    check_analyses,
    check_cites_datum,
    check_compares,
    check_reasoned,
)
from shoparena.judge.trace import TraceView, read_trace
from shoparena.judge.verify import verify_claim
from shoparena.problems.models import Problem
from shoparena.records.trajectory import TrajectoryRecord
from shoparena.records.verdict import PASSED, JudgeVerdict

OFFLINE_JUDGE_VERSION = "offline-rules-1"


class OfflineJudge:
    """`judge(record, problem=None) -> JudgeVerdict`; the problem is never needed (the reward is not read)."""

    name = "offline"
    version = OFFLINE_JUDGE_VERSION

    def __init__(self, rules: RuleSettings = DEFAULT_RULES):
        self.rules = rules

    def claim(self, view: TraceView, record: TrajectoryRecord) -> Claim:
        passed: list[str] = []
        spans: list[CitedSpan] = []
        checks = [
            lambda: check_reasoned(view, record.usage, self.rules),
            lambda: check_analyses(view, self.rules),
            lambda: check_cites_datum(view, self.rules),
            lambda: check_compares(view),
        ]
        for run in checks:
            check = run()
            if not check.passed:
                prefix = f"passed {', '.join(passed)}; " if passed else ""
                return Claim(check.gate, f"{prefix}failed {check.gate}: {check.reason}", spans)
            passed.append(f"{check.gate} ({check.reason})")
            spans.extend(CitedSpan(text, check.gate) for text in check.spans)
        return Claim(PASSED, f"passed every gate: {'; '.join(passed)}", spans)

    def __call__(self, record: TrajectoryRecord, problem: Problem | None = None) -> JudgeVerdict:
        view = read_trace(record)
        return verify_claim(
            view,
            self.claim(view, record),
            record.usage,
            judge_model=self.name,
            judge_version=self.version,
            rules=self.rules,
        )

    def close(self) -> None:
        """Nothing to release; judges share the interface of the LLM judge."""
