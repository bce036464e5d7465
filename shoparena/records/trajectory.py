"""The canonical trajectory record (SPEC §6): one per evaluated episode, written by the runner and read
by the judge, the store and the corpus pipeline. This is a public contract: change it only with a new
`schema_version`. Its JSON (`orjson.dumps(record.model_dump(mode="json"))`) is also the store's
canonical bytes, so the field order below is part of every stored record's content hash.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from shoparena.records.calls import CallRecord
from shoparena.records.inference import InferenceLog
from shoparena.records.score import ScoreSummary
from shoparena.records.verdict import JudgeVerdict

TRAJECTORY_SCHEMA = "shoparena.trajectory/2"
"""2: a call record may carry `ungrounded` (grounded answers, issue 22) and the score `grounded`; the
inference log is `shoparena.inference/2`. A /1 record is a /2 record without them (readers take both)."""
READABLE_SCHEMAS = (TRAJECTORY_SCHEMA, "shoparena.trajectory/1")
SCORING_PIPELINE_VERSION = "rules-1"


class AgentInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent_id: str
    kind: str
    version: str
    spec: str
    miner_hotkey: str | None = None


class ProblemInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem_id: str
    bucket: str
    query: str
    suite: str | None = None
    suite_version: str | None = None
    leak_cluster_id: str | None = None
    index: int | None = None
    """0-based position of the problem in the problems file the run read."""


class HarnessInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    profile: str
    protocol: str
    step_cap: int


class Outcome(BaseModel):
    """What the episode ended with (from the harness, not the agent)."""

    model_config = ConfigDict(extra="forbid")

    recommended_product_ids: list[str] | None
    terminated: str | None
    steps_used: int
    end_reason: str | None
    error: str | None = None
    """Crash, timeout or protocol failure of the agent; the episode then scores as a failure."""
    notes: list[str] = Field(default_factory=list)
    """What the harness did on the agent's behalf, e.g. a miner's claimed recommendation replayed."""


class TokenUsage(BaseModel):
    """What an agent's model calls cost in one episode (zero for agents without a model)."""

    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_calls: int = 0

    def add(self, prompt: int = 0, completion: int = 0, calls: int = 1) -> None:
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.model_calls += calls


class Timings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    started_at: str
    wall_s: float
    tool_s: float = 0.0
    """Time spent inside tool calls (the rest is the agent and its model)."""


class TrajectoryRecord(BaseModel):
    """One episode, with everything needed to score, judge, store and train on it again."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = TRAJECTORY_SCHEMA
    record_id: str
    run_id: str
    sample: int = 0
    agent: AgentInfo
    validator_hotkey: str | None = None
    problem: ProblemInfo
    harness: HarnessInfo
    messages: list[dict[str, Any]]
    """The full trace in OpenAI chat format (assistant tool_calls paired with tool messages)."""
    tools: list[dict[str, Any]]
    calls: list[CallRecord]
    """The verified call log: every call with its step, result, latency and origin (llm | code)."""
    outcome: Outcome
    score: ScoreSummary
    scoring_mode: str
    scoring_pipeline_version: str = SCORING_PIPELINE_VERSION
    judge: JudgeVerdict | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)
    """What the agent reported (for in-process agents, what the harness's own model client counted)."""
    inference: InferenceLog | None = None
    """The verified inference log, for agents that reached a model only through the inference proxy
    (miner files); None for agents without one. Absent from the JSON when None, so records without
    a log keep their bytes (and their content hash) exactly."""
    timings: Timings
    shoparena_version: str

    @model_serializer(mode="wrap")
    def _omit_absent_inference(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if self.inference is None:
            data.pop("inference", None)
        return data

    @staticmethod
    def make_id(run_id: str, problem_id: str, sample: int, attempt: int = 0) -> str:
        """One id per episode: a (problem, sample) re-run after an error (`attempt` 1, 2 …) gets its own,
        so both records can be stored; the first attempt's id is what it always was."""
        key = f"{run_id}\x00{problem_id}\x00{sample}" + (f"\x00{attempt}" if attempt else "")
        return hashlib.sha256(key.encode()).hexdigest()[:24]

    @property
    def key(self) -> tuple[str, int]:
        """What resume matches on: the (problem, sample) pair."""
        return self.problem.problem_id, self.sample


def invalid_record_reason(exc: Exception, limit: int = 3) -> str:
    """One line saying why a line is not a trajectory record (pydantic's own message spans many lines):
    the failing fields, or the JSON error. Every reader of trajectory files reports a bad line so."""
    if not isinstance(exc, ValidationError):
        return f"not JSON: {exc}"
    errors = exc.errors()
    parts = [
        f"{'.'.join(str(part) for part in error.get('loc', ())) or 'record'}: {error.get('msg', 'invalid')}"
        for error in errors[:limit]
    ]
    more = len(errors) - limit
    return "not a trajectory record: " + "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")
