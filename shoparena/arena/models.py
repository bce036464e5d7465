"""The arena API's typed shapes: what the server answers and the client reads, and what the job layer
hands the ledger. One definition per shape, shared by both sides."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shoparena.arena.admission import Violation

Role = Literal["miner", "validator"]
ROLES: tuple[str, ...] = ("miner", "validator")
SubmissionStatus = Literal["queued", "running", "scored", "failed", "rejected"]
STATUSES: tuple[str, ...] = ("queued", "running", "scored", "failed", "rejected")
RefusalReason = Literal["skew", "replay", "signature", "unknown_hotkey", "wrong_role", "bad_headers"]
REFUSAL_REASONS: tuple[str, ...] = (
    "skew",
    "replay",
    "signature",
    "unknown_hotkey",
    "wrong_role",
    "bad_headers",
)
MAX_NAME_CHARS = 128


class NeuronInfo(BaseModel):
    hotkey: str
    role: Role
    stake: float
    uid: int | None = None
    source: str = "local"
    updated_at: datetime


class SubmitRequest(BaseModel):
    """The body of `POST /v1/miner/submit`."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    code: str

    @field_validator("name")
    @classmethod
    def _printable(cls, value: str) -> str:
        if not value.isprintable() or value != value.strip():
            raise ValueError("name must be printable text without surrounding blanks")
        return value


class SubmitAccepted(BaseModel):
    submission_id: str
    status: Literal["admitted"] = "admitted"
    code_sha256: str
    next_submission_at: datetime


class SubmitRejected(BaseModel):
    submission_id: str
    status: Literal["rejected"] = "rejected"
    violations: list[Violation]
    next_submission_at: datetime


class Refusal(BaseModel):
    """Every non-2xx answer: `error` is machine-readable, `message` is for people."""

    error: str
    reason: str | None = None
    """For 401s: skew, replay, signature, unknown_hotkey, wrong_role or bad_headers."""
    message: str
    retry_after_s: int | None = None


class WhoAmI(BaseModel):
    hotkey: str
    role: Role
    stake: float
    uid: int | None = None


class SubmissionEvent(BaseModel):
    status: SubmissionStatus
    actor: str
    job_id: str | None = None
    detail: str | None = None
    at: datetime


class ProblemResultIn(BaseModel):
    """One problem of a validator's evaluation, as the job layer hands it to the ledger."""

    model_config = ConfigDict(extra="forbid")

    problem_id: str = Field(min_length=1, max_length=128)
    bucket: str | None = Field(default=None, max_length=32)
    success: bool
    rule_score: float | None = Field(default=None, ge=0, le=1)
    judge_quality: float | None = Field(default=None, ge=0, le=1)
    judge_gate: str | None = Field(default=None, max_length=64)
    end_reason: str | None = Field(default=None, max_length=64)
    steps_used: int | None = Field(default=None, ge=0)
    error: str | None = Field(default=None, max_length=4000)
    record_id: str | None = Field(default=None, max_length=64)


class ResultIn(BaseModel):
    """A validator's whole evaluation of one submission (every problem of the suite, failures too)."""

    model_config = ConfigDict(extra="forbid")

    submission_id: str
    job_id: str = Field(min_length=1, max_length=64)
    validator_hotkey: str = Field(min_length=1, max_length=64)
    suite: str | None = Field(default=None, max_length=128)
    suite_version: str | None = Field(default=None, max_length=128)
    scoring_pipeline_version: str = Field(min_length=1, max_length=64)
    problems: list[ProblemResultIn] = Field(min_length=1)

    @field_validator("problems")
    @classmethod
    def _distinct(cls, problems: list[ProblemResultIn]) -> list[ProblemResultIn]:
        seen: set[str] = set()
        for problem in problems:
            if problem.problem_id in seen:
                raise ValueError(f"problem {problem.problem_id} is listed twice")
            seen.add(problem.problem_id)
        return problems


class ProblemResultView(ProblemResultIn):
    pass


class ResultView(BaseModel):
    """One validator's evaluation with the arena's own aggregates (SPEC §4: final = ASR × coeff)."""

    job_id: str
    validator_hotkey: str
    suite: str | None
    suite_version: str | None
    scoring_pipeline_version: str
    problems: int
    successes: int
    asr: float
    mean_rule_score: float | None
    judge_quality: float | None
    coefficient: float | None
    final_score: float | None
    at: datetime
    per_problem: list[ProblemResultView]


class SubmissionSummary(BaseModel):
    submission_id: str
    name: str
    status: SubmissionStatus
    code_sha256: str
    submitted_at: datetime


class SubmissionView(BaseModel):
    """`GET /v1/miner/submissions/{id}`."""

    submission_id: str
    miner_hotkey: str
    name: str
    code_sha256: str
    code_size: int
    submitted_at: datetime
    status: SubmissionStatus
    status_at: datetime
    violations: list[Violation] = Field(default_factory=list)
    events: list[SubmissionEvent]
    results: list[ResultView] = Field(default_factory=list)
    """One per validator evaluation, oldest first; empty until scored."""
