"""The arena API's typed shapes: what the server answers and the client reads, and what the job layer
hands the ledger. One definition per shape, shared by both sides."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shoparena.admission import Violation
from shoparena.records.options import Profile, SimilarityName
from shoparena.records.trajectory import TrajectoryRecord

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


class ResultScores(BaseModel):
    """What an evaluation of a submission scores, computed from its problems the one way the arena does
    (the ledger stores these with every result; `miner try` shows them before a miner submits)."""

    problems: int
    successes: int
    asr: float
    """Success rate over every problem of the job: crashes and timeouts count as failures."""
    mean_rule_score: float | None
    judge_quality: float | None
    """Mean judge quality q over the judged problems (None: none was judged)."""
    coefficient: float | None
    final_score: float | None
    """asr × coefficient (None when nothing was judged: the arena then scores it 0)."""


class ResultView(ResultScores):
    """One validator's evaluation with the arena's own aggregates (SPEC §4: final = ASR × coeff)."""

    job_id: str
    validator_hotkey: str
    suite: str | None
    suite_version: str | None
    scoring_pipeline_version: str
    at: datetime
    per_problem: list[ProblemResultView]


class SubmissionSummary(BaseModel):
    submission_id: str
    name: str
    status: SubmissionStatus
    code_sha256: str
    submitted_at: datetime


class QualifyingReport(BaseModel):
    """One validator's result behind a qualifying score (issue 22)."""

    validator_hotkey: str
    stake: float = Field(ge=0)
    """The validator's stake in the metagraph now."""
    score: float = Field(ge=0, le=1)
    """Its final score of the qualifying run: success rate × judge coefficient (strict)."""


class QualifyingStanding(BaseModel):
    """A qualifying score and the reports behind it. The score stands only once `quorum` validators, or
    validators holding `stake_share` of the validators' stake, have reported; it is then their
    stake-weighted median (as a race's score is), else None."""

    score: float | None = Field(default=None, ge=0, le=1)
    reports: list[QualifyingReport] = Field(default_factory=list)
    quorum: int = Field(ge=1)
    """Validators whose reports make the score stand."""
    stake_share: float = Field(ge=0, le=1)
    """Or this share of the registered validators' stake."""
    reported_stake_share: float = Field(ge=0, le=1)
    stands: bool
    single_validator: bool = False
    """Only one validator is registered: the quorum is 1 and one validator decides (a warning)."""
    detail: str
    """One line: who reported and what the score rests on, or what it still waits for."""


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
    qualifying: QualifyingStanding | None = None
    """Once the competition is on: its qualifying score and the validators' reports behind it."""


# -- the job layer: validators claim jobs, keep their lease alive, post results --------------------------

LEASE_ID_PATTERN = r"^[0-9a-f]{32}$"
LeaseEndKind = Literal["completed", "released", "lapsed"]


class EvaluationSettings(BaseModel):
    """How a job's problems are run and scored: the arena fixes it, so every validator runs the same.

    Scoring is always production-strict (SPEC §4); the title similarity decides partial title hits,
    so it is the arena's choice too (`lexical` needs no model download)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["strict"] = "strict"
    similarity: SimilarityName = "minilm"
    profile: Profile = "oro7"
    step_cap: int | None = Field(default=None, ge=1)
    timeout_s: float = Field(default=300.0, gt=0, le=3600, allow_inf_nan=False)
    """Wall clock per problem; past it the episode fails as a timeout."""
    suite: str | None = Field(default=None, max_length=128)
    """The suite's name in results and records [default: the problems' own, else the bank's file name]."""
    suite_version: str | None = Field(default=None, max_length=128)
    """[default: the problems' own, else the first 16 hex digits of the bank's sha256]."""


class JobPolicy(BaseModel):
    """How jobs are handed out."""

    model_config = ConfigDict(extra="forbid")

    lease_s: int = Field(default=300, ge=2, le=86400)
    """A claim lives this long unless a heartbeat renews it; validators heartbeat every third of it."""
    validators_per_submission: int = Field(default=1, ge=1, le=64)
    """How many validators evaluate each submission (each posts its own result)."""
    max_lapses: int = Field(default=3, ge=1)
    """After this many lapsed leases on a job without a result the submission is `failed`: code that
    kills or hangs every validator that runs it must not hold the queue forever."""
    max_result_bytes: int = Field(default=64 * 1024 * 1024, ge=1024)
    """Body cap of a result post (every problem's full trajectory record)."""

    @property
    def heartbeat_s(self) -> float:
        return self.lease_s / 3


class JobRef(BaseModel):
    """What a job's records must name: the provenance every canonical record carries."""

    job_id: str
    submission_id: str
    miner_hotkey: str
    code_sha256: str
    suite: str | None
    suite_version: str | None
    scoring_pipeline_version: str


class ArenaInfo(BaseModel):
    """`GET /v1/validator/arena`: what a validator needs to have before it claims anything."""

    catalog_fingerprint: str
    catalog_dir: str
    """The catalogue's path on the arena's machine (the default --catalog of a validator beside it)."""
    problems_sha256: str
    problems_count: int
    suite: str | None
    suite_version: str | None
    scoring_pipeline_version: str
    evaluation: EvaluationSettings
    lease_s: int
    heartbeat_s: float


class JobOffer(JobRef):
    """`POST /v1/validator/claim`: a job and this validator's lease on it.

    `problems` carry their rewards: they go to validators only, which score with them; the miner's
    process sees the reward-stripped view the file agent gives it."""

    lease_id: str
    lease_expires_at: datetime
    lease_s: int
    heartbeat_s: float
    name: str
    code_size: int
    catalog_fingerprint: str
    catalog_dir: str
    problems_sha256: str
    evaluation: EvaluationSettings
    problems: list[dict[str, Any]]
    kind: Literal["bank", "qualifying", "race"] = "bank"
    """`bank`: the arena's whole problem bank; `qualifying`: a new submission on problems of the open
    partition; `race`: a racer on its race's drawn problems (every validator evaluates each)."""
    race_id: str | None = None


class LeaseRequest(BaseModel):
    """The body of a heartbeat or a code fetch: everything is in the signed body, nothing in the path."""

    model_config = ConfigDict(extra="forbid", strict=True)

    lease_id: str = Field(pattern=LEASE_ID_PATTERN)


class ReleaseRequest(LeaseRequest):
    reason: str = Field(min_length=1, max_length=2000)


class LeaseView(BaseModel):
    lease_id: str
    job_id: str
    expires_at: datetime
    ended: LeaseEndKind | None = None


class ResultPost(BaseModel):
    """`POST /v1/validator/result`: one outcome and one full trajectory record per problem of the job."""

    model_config = ConfigDict(extra="forbid")

    lease_id: str = Field(pattern=LEASE_ID_PATTERN)
    job_id: str = Field(min_length=1, max_length=64)
    outcomes: list[ProblemResultIn] = Field(min_length=1)
    records: list[TrajectoryRecord] = Field(min_length=1)


class ResultAccepted(BaseModel):
    created: bool
    """False when this (job, validator) had posted the same result before: nothing new was stored."""
    result: ResultView
    record_ids: list[str]
