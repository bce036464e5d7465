"""The canonical trajectory record (SPEC §6): one per evaluated episode, written by the runner and read
by the judge, the store and the corpus pipeline. This is a public contract: change it only with a new
`schema_version`.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from shoparena.agents.base import TokenUsage
from shoparena.agents.inference_log import InferenceLog
from shoparena.harness.models import CallRecord

TRAJECTORY_SCHEMA = "shoparena.trajectory/1"
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


class JudgeVerdict(BaseModel):
    """The reasoning judge's output for one trajectory (SPEC §7)."""

    model_config = ConfigDict(extra="forbid")

    quality: Literal[0.1, 0.3, 0.5, 0.7, 0.9]
    gate: str
    explanation: str
    cited_spans: list[str] = Field(default_factory=list)
    judge_model: str
    judge_version: str


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
    score: dict[str, Any]
    """`ProblemScore.summary()` of the scorer: success, rule, per-axis ratios, shop, budget …"""
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
    def make_id(run_id: str, problem_id: str, sample: int) -> str:
        return hashlib.sha256(f"{run_id}\x00{problem_id}\x00{sample}".encode()).hexdigest()[:24]

    @property
    def key(self) -> tuple[str, int]:
        """What resume matches on: the (problem, sample) pair."""
        return self.problem.problem_id, self.sample
