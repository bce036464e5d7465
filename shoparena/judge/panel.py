"""A panel of annotators on one trace (SPEC §11: the multi-annotator review of the Trac-style oracle).

One judge is one opinion: an LLM judge has its moods, a model family its blind spots, and a miner who
studies one judge can write for it. A panel asks several — the offline rules and any number of LLM
judges, each through its own verification (`judge.verify`: gate 1 checked in code, every cited span
verbatim in the trace and backing the gate it is cited for) — and takes the **lower median** quality:
with two annotators the stricter one, with three the middle one, so one lenient (or fooled) annotator
cannot lift a trace and one harsh one cannot sink it. The verdict's gate and cited spans are those of
the first annotator at the median, and its explanation lists every annotator's quality and gate and
how many agreed, so a disagreement is visible in every record.

An annotator that fails (an endpoint down, its circuit breaker open) is left out; the panel answers
while at least `quorum` annotators did (default: a majority), else it fails like a judge does
(`JudgeError`), and the record goes unjudged rather than judged by a minority.
"""

from __future__ import annotations

from typing import Any

from shoparena.judge.llm import JudgeError
from shoparena.problems.models import Problem
from shoparena.records.trajectory import TrajectoryRecord
from shoparena.records.verdict import JudgeVerdict

PANEL_VERSION = "panel-1"


class PanelJudge:
    def __init__(self, judges: list[Any], quorum: int | None = None):
        if not judges:
            raise ValueError("a panel needs at least one annotator")
        self.judges = judges
        self.quorum = quorum if quorum is not None else len(judges) // 2 + 1
        if not 1 <= self.quorum <= len(judges):
            raise ValueError(f"quorum {self.quorum}: between 1 and the {len(judges)} annotators")
        self.name = "panel(" + ",".join(getattr(j, "name", type(j).__name__) for j in judges) + ")"
        self.version = PANEL_VERSION + "+" + "+".join(str(getattr(j, "version", "?")) for j in judges)

    def __call__(self, record: TrajectoryRecord, problem: Problem | None = None) -> JudgeVerdict:
        answers: list[tuple[str, JudgeVerdict]] = []
        failures: list[str] = []
        for judge in self.judges:
            name = getattr(judge, "name", type(judge).__name__)
            try:
                answers.append((name, judge(record, problem)))
            except JudgeError as exc:
                failures.append(f"{name}: {exc}")
        if len(answers) < self.quorum:
            raise JudgeError(
                f"panel: {len(answers)} of {len(self.judges)} annotators answered (quorum {self.quorum}): "
                + "; ".join(failures)
            )
        qualities = sorted(verdict.quality for _, verdict in answers)
        median = qualities[(len(qualities) - 1) // 2]
        chosen = next(verdict for _, verdict in answers if verdict.quality == median)
        agreeing = sum(1 for _, verdict in answers if verdict.quality == median)
        votes = ", ".join(f"{name} {verdict.quality:.1f} ({verdict.gate})" for name, verdict in answers)
        missing = f"; not answering: {'; '.join(failures)}" if failures else ""
        return JudgeVerdict(
            quality=median,
            gate=chosen.gate,
            explanation=(
                f"panel of {len(answers)}: median {median:.1f}, {agreeing} of {len(answers)} agree ({votes})"
                f"{missing}. {chosen.explanation}"
            ),
            cited_spans=chosen.cited_spans,
            judge_model=self.name,
            judge_version=self.version,
        )

    def close(self) -> None:
        for judge in self.judges:
            judge.close()
