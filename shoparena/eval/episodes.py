"""One episode's trajectory record, built once where the episode ran, and what the parent takes from it.

A worker builds the `TrajectoryRecord` straight from the harness episode and serialises it (in
parallel, without `score` and `judge`); the parent scores, judges and appends those bytes. What the
parent counts with (the answer, the error, usage, time) is the `EpisodeDigest`, derived from the
record; nothing is copied field by field between intermediate shapes.
"""

from __future__ import annotations

import re

import orjson
from pydantic import BaseModel, ConfigDict, Field

from shoparena import __version__
from shoparena.agents.base import AgentRun
from shoparena.eval.config import AgentIdentity, WorkerConfig, utc_now
from shoparena.harness.episode import Episode
from shoparena.harness.tool_specs import DEFAULT_STEP_CAPS
from shoparena.problems.models import Problem
from shoparena.records.inference import InferenceLog
from shoparena.records.score import ScoreSummary
from shoparena.records.trajectory import (
    AgentInfo,
    HarnessInfo,
    Outcome,
    ProblemInfo,
    Timings,
    TokenUsage,
    TrajectoryRecord,
)
from shoparena.records.verdict import JudgeVerdict
from shoparena.scoring.answers import Answer

LATE_FIELDS = frozenset({"score", "judge"})
"""What the parent adds to a worker's record: appended last on each trajectories.jsonl line."""
TIMEOUT_ERROR = "timeout"
"""The error of an episode that ran past its deadline (`--timeout`); a miner file killed at its own
limit records `timeout: agent_main did not return within N s; …` (`file_agent`), the same kind."""
ENDPOINT_ERROR = re.compile(r"https?://\S+: ")
"""How a model endpoint's failure reads: the OpenAI-compatible client's `ModelError` names the URL
first (`URL: gave up after N attempts; last error: …` once its own retries are spent, `URL: MESSAGE`
for a request the endpoint rejected), and the chat loop records it as the episode's error."""
RETRYABLE_ERRORS = ("endpoint", TIMEOUT_ERROR)
"""The error kinds `--retry-errors` re-runs: they say nothing about the agent's policy."""


def error_kind(error: str) -> str:
    """The kind of an episode's `outcome.error` (metrics' `errors_by_kind`):

    - `endpoint`: the model endpoint could not be reached, did not answer in time, or refused the
      request (connection failure, HTTP error) after the client's own retries;
    - `timeout`: the episode ran past `--timeout` (an overloaded endpoint, or the agent's own slowness), or
      a miner file ran past its own per-problem limit (`timeout: …`, with the limit in seconds);
    - `worker crashed`: the process running the episode died (killed, out of memory, a native crash);
    - `agent crashed`: the agent's code raised (a miner file's `agent_main failed: …`, with its traceback);
    - `agent error`: anything else the agent reported (a failed local model call, output it could not
      use, a miner's malformed steps, a reference agent's exception).

    Every kind scores as a failure; `endpoint` and `timeout` are the ones `--retry-errors` re-runs.
    """
    if error == TIMEOUT_ERROR or error.startswith(f"{TIMEOUT_ERROR}:"):
        return TIMEOUT_ERROR
    if ENDPOINT_ERROR.match(error):
        return "endpoint"
    if error.startswith("worker crashed"):
        return "worker crashed"
    if error.startswith(("agent crashed", "agent_main failed")):
        return "agent crashed"
    return "agent error"


def error_end_reason(error: str) -> str:
    """The `end_reason` of an episode that ended in `error`: a timeout says so (its error already does,
    with the limit); any other error reads as the agent's."""
    if error_kind(error) == TIMEOUT_ERROR:
        return error
    return f"agent error: {error}"


class EpisodeTask(BaseModel):
    """One (problem, sample) pair to run; `index` is the problem's 0-based position in the problems file,
    `attempt` how many records of the pair the run holds already (a re-run after an error: 1 or more)."""

    model_config = ConfigDict(extra="forbid")

    index: int
    sample: int
    problem: Problem
    attempt: int = 0

    @property
    def key(self) -> tuple[str, int]:
        return self.problem.problem_id or "", self.sample


def _record(
    task: EpisodeTask,
    config: WorkerConfig,
    identity: AgentIdentity,
    outcome: Outcome,
    timings: Timings,
    step_cap: int,
    *,
    episode: Episode | None = None,
    format_ok: bool | None = None,
    usage: TokenUsage | None = None,
    inference: InferenceLog | None = None,
) -> TrajectoryRecord:
    problem = task.problem
    problem_id = problem.problem_id or ""
    if task.attempt:
        retried = (
            f"attempt {task.attempt + 1} of this (problem, sample), re-run with --retry-errors after a "
            "model-endpoint error or timeout; the earlier record stays in trajectories.jsonl, superseded"
        )
        outcome = outcome.model_copy(update={"notes": [retried, *outcome.notes]})
    return TrajectoryRecord(
        record_id=TrajectoryRecord.make_id(config.run_id, problem_id, task.sample, task.attempt),
        run_id=config.run_id,
        sample=task.sample,
        agent=AgentInfo(
            agent_id=identity.agent_id, kind=identity.kind, version=identity.version, spec=config.agent_spec
        ),
        problem=ProblemInfo(
            problem_id=problem_id,
            bucket=problem.bucket or "product",
            query=problem.query,
            suite=problem.suite,
            suite_version=problem.suite_version,
            leak_cluster_id=problem.leak_cluster_id,
            index=task.index,
        ),
        harness=HarnessInfo(profile=config.profile, protocol=identity.protocol, step_cap=step_cap),
        messages=episode.messages if episode is not None else [],
        tools=episode.tools if episode is not None else [],
        calls=episode.calls if episode is not None else [],
        outcome=outcome,
        score=ScoreSummary(
            format_ok=format_ok, steps=outcome.steps_used, terminated=outcome.terminated is not None
        ),
        scoring_mode=config.scoring_mode,
        usage=usage if usage is not None else TokenUsage(),
        inference=inference,
        timings=timings,
        shoparena_version=__version__,
    )


def episode_record(
    task: EpisodeTask,
    config: WorkerConfig,
    identity: AgentIdentity,
    episode: Episode,
    agent_run: AgentRun,
    error: str | None,
    started_at: str,
    wall_s: float,
) -> TrajectoryRecord:
    """The record of an episode the agent ran (to its end, a crash or a timeout). Its `score` holds
    only how the episode ended; the parent's scorer adds the rest."""
    turns = episode.turns
    calls = episode.calls
    outcome = Outcome(
        recommended_product_ids=episode.recommended_product_ids,
        terminated=episode.terminated,
        steps_used=episode.steps_used,
        end_reason=episode.end_reason or (error_end_reason(error) if error else "agent returned"),
        error=error,
        notes=[*agent_run.notes, *episode.notes],
    )
    timings = Timings(started_at=started_at, wall_s=wall_s, tool_s=sum(c.latency_s for c in calls))
    return _record(
        task,
        config,
        identity,
        outcome,
        timings,
        episode.step_cap,
        episode=episode,
        format_ok=(not any(t.format_errors for t in turns)) if turns else None,
        usage=agent_run.usage,
        inference=agent_run.inference,
    )


def failed_record(
    task: EpisodeTask, config: WorkerConfig, identity: AgentIdentity, error: str
) -> TrajectoryRecord:
    """The record of an episode that produced nothing usable (a killed or crashed worker)."""
    outcome = Outcome(
        recommended_product_ids=None,
        terminated=None,
        steps_used=0,
        end_reason=error_end_reason(error),
        error=error,
    )
    step_cap = config.step_cap or DEFAULT_STEP_CAPS.get(config.profile, 0)
    return _record(
        task, config, identity, outcome, Timings(started_at=utc_now("milliseconds"), wall_s=0.0), step_cap
    )


def record_answer(record: TrajectoryRecord) -> Answer:
    """The answer an episode counts as (what `shoparena score` would be given for it).

    An errored episode (crash, timeout) answers nothing: it is a failure whatever it recommended.
    """
    outcome = record.outcome
    return Answer(
        problem_id=record.problem.problem_id,
        index=record.problem.index,
        product_ids=[] if outcome.error else list(outcome.recommended_product_ids or []),
        sample=record.sample,
        steps=outcome.steps_used,
        terminated=outcome.terminated is not None,
        format_ok=record.score.format_ok,
    )


def recommendation_grounded(record: TrajectoryRecord) -> bool | None:
    """Whether the recommendation that stands (the first counted recommend_product the episode ran)
    named only products the episode's searches had returned; None when there is none."""
    for call in record.calls:
        if call.name == "recommend_product" and call.counted and call.error is None:
            return call.ungrounded is None
    return None


class EpisodeDigest(BaseModel):
    """What the run's counts and metrics need of one recorded episode: derived from its record."""

    answer: Answer
    error: str | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)
    wall_s: float = 0.0
    success: bool = False
    judge: JudgeVerdict | None = None
    grounded: bool | None = None
    """Whether the recommendation that stands was grounded (None: no recommendation recorded)."""

    @property
    def key(self) -> tuple[str, int]:
        return self.answer.problem_id or "", self.answer.sample

    @property
    def error_kind(self) -> str | None:
        return error_kind(self.error) if self.error else None

    @property
    def retryable(self) -> bool:
        """Whether `--retry-errors` re-runs this episode (see `error_kind`)."""
        return self.error_kind in RETRYABLE_ERRORS

    @classmethod
    def of(cls, record: TrajectoryRecord) -> EpisodeDigest:
        return cls(
            answer=record_answer(record),
            error=record.outcome.error,
            usage=record.usage,
            wall_s=record.timings.wall_s,
            success=bool(record.score.success),
            judge=record.judge if not record.outcome.error else None,  # an errored episode is not judged
            grounded=recommendation_grounded(record),
        )


class EpisodeOutput(BaseModel):
    """What crosses the process boundary: the record as JSON without `score` and `judge` (one object,
    `{...}`), and its digest. Workers serialise in parallel, so the parent only scores and appends."""

    model_config = ConfigDict(extra="forbid")

    digest: EpisodeDigest
    body: bytes

    @classmethod
    def of(cls, record: TrajectoryRecord) -> EpisodeOutput:
        body = orjson.dumps(record.model_dump(mode="json", exclude=LATE_FIELDS))
        return cls(digest=EpisodeDigest.of(record), body=body)
