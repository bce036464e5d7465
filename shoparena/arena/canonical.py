"""The canonical trajectory record of an arena evaluation, and the per-problem outcome read from it.

A validator runs a job with the eval runner, whose records name the validator's own run (a random run
id, the private temp file the agent was written to). Before posting it rewrites each record into the
job's canonical form; the server computes the same form from what it knows of the job and refuses a
record that differs. Both sides call `canonical_record`, so they cannot disagree on what it means.

`TrajectoryRecord` is a public contract with no field for a submission or a job, so the arena puts its
provenance in fields whose meaning already fits, and adds none:

| provenance | field |
|---|---|
| submission id | `agent.spec` = `arena:SUBMISSION_ID` (the agent as the arena specifies it; the store's agent filter takes it) |
| code sha256 | `agent.version` = the full sha256 (the file agent's own version is its first 12 digits) |
| miner hotkey | `agent.miner_hotkey`; `agent.agent_id` = `miner:HOTKEY` (one agent, many versions) |
| validator hotkey | `validator_hotkey` |
| job | `run_id` = the job id (every validator's evaluation of one job shares it) |
| problem id, suite, version | `problem.problem_id`, `problem.suite`, `problem.suite_version` (the job's) |
| scoring pipeline version | `scoring_pipeline_version` (checked equal to the arena's, never rewritten) |

`record_id` is `make_id("JOB/VALIDATOR", problem_id, 0)`: one id per (job, validator, problem), so a
retried post can never become a second row.
"""

from __future__ import annotations

from collections.abc import Sequence

from shoparena.arena.models import JobRef, ProblemResultIn, ResultScores
from shoparena.problems.models import Problem
from shoparena.records.trajectory import AgentInfo, TrajectoryRecord
from shoparena.scoring.judge_summary import ERRORED_QUALITY
from shoparena.scoring.metrics import arena_final_score, judge_coefficient

ARENA_AGENT_KIND = "file"
SCORING_MODE = "strict"
MAX_ERROR_CHARS = 4000
PROVENANCE_FIELDS = ("record_id", "run_id", "sample", "agent", "validator_hotkey", "problem")


def canonical_record(record: TrajectoryRecord, job: JobRef, validator_hotkey: str) -> TrajectoryRecord:
    """`record` as the arena stores it: the job's provenance in place of the validator's own run."""
    problem_id = record.problem.problem_id
    return record.model_copy(
        update={
            "record_id": TrajectoryRecord.make_id(f"{job.job_id}/{validator_hotkey}", problem_id, 0),
            "run_id": job.job_id,
            "sample": 0,
            "agent": AgentInfo(
                agent_id=f"miner:{job.miner_hotkey}",
                kind=ARENA_AGENT_KIND,
                version=job.code_sha256,
                spec=f"arena:{job.submission_id}",
                miner_hotkey=job.miner_hotkey,
            ),
            "validator_hotkey": validator_hotkey,
            "problem": record.problem.model_copy(
                update={"suite": job.suite, "suite_version": job.suite_version}
            ),
        }
    )


def problem_outcome(record: TrajectoryRecord) -> ProblemResultIn:
    """The ledger's row for one problem, read off its record (crashes and timeouts are failures).

    A crashed or timed-out episode carries no judge verdict, whatever its record says: validators do
    not judge one, and a verdict on one (an older validator's, a forged record's) must not count."""
    error = record.outcome.error
    if error is not None and len(error) > MAX_ERROR_CHARS:
        error = error[: MAX_ERROR_CHARS - 20] + "… (cut)"
    judge = record.judge if error is None else None
    end_reason = record.outcome.end_reason
    return ProblemResultIn(
        problem_id=record.problem.problem_id,
        bucket=record.problem.bucket,
        success=bool(record.score.success),
        rule_score=record.score.rule,
        judge_quality=judge.quality if judge is not None else None,
        judge_gate=judge.gate if judge is not None else None,
        end_reason=end_reason[:64] if end_reason else None,
        steps_used=record.outcome.steps_used,
        error=error,
        record_id=record.record_id,
    )


def _mean(values: list[float]) -> float | None:
    """Rounded to 9 places: qualities are multiples of 0.1 and a float sum must not land a hair under a
    threshold (the same reason as `judge.coefficient.mean_quality`)."""
    return round(sum(values) / len(values), 9) if values else None


def result_scores(problems: Sequence[ProblemResultIn]) -> ResultScores:
    """The aggregates of one evaluation (`problems` non-empty).

    q is the mean quality over the judged problems and the problems that ended in an error, each of
    those at the floor quality (`ERRORED_QUALITY`): a crash is not judged, but crashing on the problems
    it would have reasoned badly about must not lift a miner's q. With no problem judged, q is None."""
    successes = sum(problem.success for problem in problems)
    asr = successes / len(problems)
    judged = [p.judge_quality for p in problems if p.judge_quality is not None]
    errored = [ERRORED_QUALITY for p in problems if p.error is not None and p.judge_quality is None]
    q = _mean(judged + errored) if judged else None
    return ResultScores(
        problems=len(problems),
        successes=successes,
        asr=asr,
        mean_rule_score=_mean([p.rule_score for p in problems if p.rule_score is not None]),
        judge_quality=q,
        coefficient=judge_coefficient(q) if q is not None else None,
        final_score=arena_final_score(asr, q) if q is not None else None,
    )


def _short(value: object, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _differences(posted: TrajectoryRecord, expected: TrajectoryRecord) -> list[str]:
    found = []
    for name in PROVENANCE_FIELDS:
        got, want = getattr(posted, name), getattr(expected, name)
        if got != want:
            found.append(f"{name} is {_short(got)}, the job's is {_short(want)}")
    return found


def record_problems(
    records: Sequence[TrajectoryRecord], job: JobRef, problems: Sequence[Problem], validator_hotkey: str
) -> list[str]:
    """What makes `records` not this job's evaluation by this validator (empty: they are).

    One record per problem of the job, each in its canonical form, for the job's problem (same query
    and bucket), scored production-strict under the arena's scoring pipeline."""
    wanted = {problem.problem_id or "": problem for problem in problems}
    found: list[str] = []
    seen: set[str] = set()
    for position, record in enumerate(records):
        problem_id = record.problem.problem_id
        where = f"record {position} (problem {_short(problem_id, 80)})"
        problem = wanted.get(problem_id)
        if problem is None:
            found.append(f"{where}: the problem is not one of job {job.job_id}'s")
            continue
        if problem_id in seen:
            found.append(f"{where}: a second record for the problem (one per problem)")
            continue
        seen.add(problem_id)
        differences = _differences(record, canonical_record(record, job, validator_hotkey))
        if record.problem.query != problem.query or record.problem.bucket != problem.bucket:
            differences.append("its query or bucket is not the job's problem's")
        if record.scoring_mode != SCORING_MODE:
            differences.append(
                f"scoring_mode is {_short(record.scoring_mode)}; the arena scores {SCORING_MODE}"
            )
        if record.scoring_pipeline_version != job.scoring_pipeline_version:
            differences.append(
                f"scoring_pipeline_version is {_short(record.scoring_pipeline_version)}, "
                f"the arena's is {job.scoring_pipeline_version!r}"
            )
        found.extend(f"{where}: {difference}" for difference in differences)
    missing = [problem_id for problem_id in wanted if problem_id not in seen]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        found.append(f"no record for problem(s) {shown}: a result covers every problem of the job")
    return found


def outcome_problems(outcomes: Sequence[ProblemResultIn], records: Sequence[TrajectoryRecord]) -> list[str]:
    """Where the posted per-problem outcomes disagree with what their records say (empty: nowhere)."""
    expected = {record.problem.problem_id: problem_outcome(record) for record in records}
    found: list[str] = []
    posted_ids = set()
    for outcome in outcomes:
        posted_ids.add(outcome.problem_id)
        want = expected.get(outcome.problem_id)
        if want is None:
            found.append(f"outcome for problem {_short(outcome.problem_id, 80)}: no record for it")
        elif outcome != want:
            fields = [
                f"{name} {_short(getattr(outcome, name), 60)} (its record says {_short(getattr(want, name), 60)})"
                for name in ProblemResultIn.model_fields
                if getattr(outcome, name) != getattr(want, name)
            ]
            found.append(f"outcome for problem {outcome.problem_id}: " + "; ".join(fields))
    missing = [problem_id for problem_id in expected if problem_id not in posted_ids]
    if missing:
        found.append(f"no outcome for problem(s) {', '.join(missing[:5])}")
    return found
