"""The judge's public entry points: build a judge from a spec, judge one record, judge a file.

A judge is any callable `judge(record, problem=None) -> JudgeVerdict`; the eval runner takes one
without importing this package (agents sit below judge).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shoparena.index.staging import staged_file
from shoparena.judge.llm import JudgeCircuitOpen, JudgeError, LLMJudge
from shoparena.judge.offline import OfflineJudge
from shoparena.judge.panel import PanelJudge
from shoparena.problems.models import Problem
from shoparena.records.trajectory import TrajectoryRecord, invalid_record_reason
from shoparena.records.verdict import JudgeVerdict
from shoparena.scoring.judge_summary import JudgeSummary, summarize_verdicts


class JudgeSpecError(ValueError):
    """A judge spec that names no judge; the message says what to write."""


class Judge(Protocol):
    name: str
    version: str

    def __call__(self, record: TrajectoryRecord, problem: Problem | None = None) -> JudgeVerdict: ...

    def close(self) -> None: ...


def make_judge(spec: str, **options: Any) -> Judge:
    """`offline` → OfflineJudge(**options); `openai:MODEL` → LLMJudge([MODEL, *fallback], **options);
    `panel:SPEC,SPEC,…` → PanelJudge of those (the LLM options go to each `openai:` member; `quorum`
    to the panel).

    LLM options: base_url, api_key, fallback (list or comma-separated), timeout_s, max_retries,
    backoff_s, max_tokens, temperature, json_mode, breaker_threshold.
    """
    kind, _, target = spec.strip().partition(":")
    if kind == "panel" and target.strip():
        quorum = options.pop("quorum", None)
        members = [member.strip() for member in target.split(",") if member.strip()]
        llm_options = {k: v for k, v in options.items() if k != "fallback"}
        judges = [
            make_judge(member, **(llm_options if member.startswith("openai:") else {})) for member in members
        ]
        try:
            return PanelJudge(judges, quorum=int(quorum) if quorum is not None else None)
        except ValueError as exc:
            raise JudgeSpecError(f"judge spec {spec!r}: {exc}") from None
    if kind == "offline" and not target:
        return OfflineJudge(**options)
    if kind == "openai" and target.strip():
        fallback = options.pop("fallback", None) or []
        if isinstance(fallback, str):
            fallback = [m for m in fallback.split(",") if m.strip()]
        return LLMJudge([target.strip(), *fallback], **options)
    raise JudgeSpecError(
        f"judge spec {spec!r}: use 'offline', 'openai:MODEL' (e.g. openai:gpt-4o-mini) or "
        "'panel:SPEC,SPEC,…' (e.g. panel:offline,openai:gpt-4o-mini,openai:gpt-4.1)"
    )


_DEFAULT_JUDGE = OfflineJudge()


def judge_record(
    record: TrajectoryRecord, problem: Problem | None = None, judge: Judge | None = None
) -> JudgeVerdict:
    """One record's verdict (the offline judge unless one is given); the record is not changed."""
    return (judge or _DEFAULT_JUDGE)(record, problem)


class LineReject(BaseModel):
    model_config = ConfigDict(extra="forbid")

    line: int
    error: str


class JudgeFileReport(BaseModel):
    """The outcome of judging one trajectories file."""

    model_config = ConfigDict(extra="forbid")

    input: str
    output: str
    records: int
    """Valid records read (each is written out, judged or not; with none, no output file is written)."""
    judge_failures: int
    stopped_early: bool
    """The judge's circuit breaker opened; the remaining records were written without a verdict."""
    failed: bool
    """Judging failed for the run: stopped early, or more than half the records went unjudged."""
    rejects: list[LineReject] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)
    summary: JudgeSummary


class _NothingToWrite(Exception):
    pass


def judge_file(
    input_path: Path | str,
    output_path: Path | str,
    judge: Judge,
    progress: Callable[[int], None] | None = None,
) -> JudgeFileReport:
    """Judge every record of a trajectories JSONL into `output_path` (the verdict set as `judge`).

    A line that is not a valid record is reported and skipped; a record the judge cannot judge is
    written unjudged (judge: null) and reported; the rest go on. A record of an episode that ended in
    an error (a crash, a timeout) is written unjudged: it has no reasoning to grade. The output appears
    whole when the file is done (`staged_file`), and not at all when no line was a record.
    """
    input_path, output_path = Path(input_path), Path(output_path)
    if input_path.resolve() == output_path.resolve():
        raise ValueError(f"{output_path}: write the judged records to a new file, not over the input")
    rejects: list[LineReject] = []
    failures: list[str] = []
    verdicts: list[JudgeVerdict | None] = []
    successes: list[bool] = []
    stopped = False
    attempted = 0
    errored = 0
    judged = 0
    output_path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(_NothingToWrite), staged_file(output_path) as partial:
        with input_path.open("rb") as source, partial.open("wb") as sink:
            for number, line in enumerate(source, start=1):
                if progress:
                    progress(1)
                if not line.strip():
                    continue
                try:
                    record = TrajectoryRecord.model_validate(orjson.loads(line))
                except (orjson.JSONDecodeError, ValidationError) as exc:
                    rejects.append(LineReject(line=number, error=invalid_record_reason(exc)))
                    continue
                verdict: JudgeVerdict | None = None
                errored += bool(record.outcome.error)
                if not stopped and not record.outcome.error:  # a crash or timeout is not judged
                    attempted += 1
                    try:
                        verdict = judge(record)
                        judged += 1
                    except JudgeCircuitOpen as exc:
                        stopped = True
                        failures.append(f"line {number}: {exc}")
                    except JudgeError as exc:
                        failures.append(f"line {number}: {exc}")
                        if getattr(getattr(judge, "stats", None), "circuit_open", False):
                            stopped = True
                record.judge = verdict
                verdicts.append(verdict)
                if record.score.success is not None:
                    successes.append(record.score.success)
                sink.write(orjson.dumps(record.model_dump(mode="json")) + b"\n")
        if not verdicts:
            raise _NothingToWrite  # an empty output would pass for a judged file: write none
    judged_failures = attempted - judged
    success_rate = sum(successes) / len(successes) if successes else None
    return JudgeFileReport(
        input=str(input_path),
        output=str(output_path),
        records=len(verdicts),
        judge_failures=judged_failures,
        stopped_early=stopped,
        failed=stopped or judged_failures * 2 > attempted,
        rejects=rejects,
        failures=failures,
        summary=summarize_verdicts(verdicts, success_rate, errored=errored),
    )
