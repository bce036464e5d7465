"""The competition's shared records: one shape per idea, read and written by the pools, the race
engine, the weights, the public API, the leaderboard page and the season simulator.

Field names follow the season file (`shoparena.arena-season/1`) and the public API, so a record is
written once and served as is. Times are timezone-aware UTC; scores are in [0, 1].
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

RaceState = Literal["QUALIFYING_OPEN", "RACE_RUNNING", "RACE_COMPLETE", "CANCELLED"]
RACE_STATES: tuple[str, ...] = ("QUALIFYING_OPEN", "RACE_RUNNING", "RACE_COMPLETE", "CANCELLED")
ROTATION_SCHEMA = "shoparena.rotation/1"
SEASON_SCHEMA = "shoparena.arena-season/1"


class CompetitionConfig(BaseModel):
    """Every knob of the competition, kept in `arena.json` under `competition` (defaults = SPEC §6)."""

    model_config = ConfigDict(extra="forbid")

    winner_share: float = Field(default=0.25, ge=0, le=1)
    """Weight of the crowned agent."""
    tail_share: float = Field(default=0.25, ge=0, le=1)
    """Weight shared by ranks 2…K (K = ⌊N/2⌋) in proportion K−1, K−2, …, 1."""
    burn_uid: int = Field(default=0, ge=0)
    """Where every weight not earned goes."""
    margin: float = Field(default=0.02, ge=0, le=1)
    """Hysteresis: a challenger is promoted only when its race score beats the incumbent's by more."""
    qualify_threshold: float = Field(default=0.2, ge=0, le=1)
    """A submission qualifies when its final score on the open partition reaches this."""
    race_problems: int = Field(default=20, ge=1)
    """Problems drawn from the held-out partition for each race."""
    race_cadence_s: int = Field(default=86400, ge=60)
    """One race per period (default daily)."""
    rotation_cadence_s: int = Field(default=7 * 86400, ge=60)
    """How often the race bank is re-partitioned into open and held-out clusters."""
    heldout_fraction: float = Field(default=0.5, gt=0, lt=1)
    """Share of the race bank's clusters held out in each rotation."""
    min_validators: int = Field(default=1, ge=1)
    """A race with fewer reporting validators is CANCELLED."""
    max_judge_failure_rate: float = Field(default=0.5, ge=0, le=1)
    """A race whose share of failed judge calls is above this is CANCELLED."""
    richness_share: float = Field(default=0.0, ge=0, le=1)
    """Agentic-richness term (off by default): this share of the race score comes from the fraction of
    tool calls whose verified origin is `llm`."""
    kappa: float = Field(default=0.5, gt=0, lt=1)
    """Yuma consensus: the stake-weighted quantile each miner's weights are clipped to."""
    time_zone: str = "America/Los_Angeles"
    """The embargo's clock: code is released at the next weekday `release_hour`:00 there."""
    release_hour: int = Field(default=12, ge=0, le=23)
    qualifying_problems: int | None = Field(default=None, ge=1)
    """Problems of the open partition a qualifying run evaluates, drawn per submission from its id
    (None: the whole open partition)."""
    never_touch_suites: list[str] = Field(default_factory=lambda: ["v1", "v2", "v3"])
    """Formal suites: never raced, never in a corpus' train or eval."""

    @model_validator(mode="after")
    def _shares(self) -> CompetitionConfig:
        if self.winner_share + self.tail_share > 1 + 1e-12:
            raise ValueError("winner_share + tail_share must not exceed 1")
        return self


class RotationManifest(BaseModel):
    """One period of the race bank: which leak clusters are open (qualifying) and which are held out
    (races). Frozen once written; `sha256` hashes its canonical JSON without `sha256` itself."""

    model_config = ConfigDict(extra="forbid")

    schema_: Literal["shoparena.rotation/1"] = Field(default=ROTATION_SCHEMA, alias="schema")
    period: int = Field(ge=0)
    starts_at: datetime
    ends_at: datetime
    bank_sha256: str
    open_clusters: list[str]
    heldout_clusters: list[str]
    open_problem_ids: list[str]
    heldout_problem_ids: list[str]
    sha256: str = ""

    @model_validator(mode="after")
    def _guard(self) -> RotationManifest:
        if set(self.open_clusters) & set(self.heldout_clusters):
            raise ValueError("a leak cluster is both open and held out")
        if set(self.open_problem_ids) & set(self.heldout_problem_ids):
            raise ValueError("a problem is both open and held out")
        return self


class ValidatorScore(BaseModel):
    """One validator's evaluation of one racer."""

    validator_hotkey: str
    score: float = Field(ge=0, le=1)
    success_rate: float = Field(ge=0, le=1)
    judge_coefficient: float | None = Field(default=None, ge=0, le=1)
    richness: float | None = Field(default=None, ge=0, le=1)
    """Fraction of tool calls whose verified origin is `llm`."""
    judge_failures: int = Field(default=0, ge=0)
    judge_calls: int = Field(default=0, ge=0)


class RaceResult(BaseModel):
    """One racer's result: `score` is the stake-weighted median of its validators' scores."""

    hotkey: str
    uid: int | None
    submission_id: str
    score: float = Field(ge=0, le=1)
    success_rate: float = Field(ge=0, le=1)
    judge_coefficient: float | None = Field(default=None, ge=0, le=1)
    richness: float | None = Field(default=None, ge=0, le=1)
    submitted_at: datetime
    by_validator: list[ValidatorScore] = Field(default_factory=list)


class Race(BaseModel):
    """One race, as the API serves it and the season file records it.

    `seed` and `problem_ids` stay None until the race closes (the commitment is public from the start)."""

    race_id: str
    state: RaceState
    opened_at: datetime
    closed_at: datetime | None = None
    rotation_period: int
    rotation_sha256: str
    seed_commitment: str = Field(pattern=r"^[0-9a-f]{64}$")
    """SHA-256 hex digest of the seed's UTF-8 text, published at open."""
    seed: str | None = None
    problem_ids: list[str] | None = None
    race_clusters: list[str] | None = None
    open_clusters: list[str]
    results: list[RaceResult] = Field(default_factory=list)
    """Best first (score descending, ties to the earlier submission)."""
    incumbent_before: str | None = None
    """Hotkey holding the crown when the race opened."""
    winner: str | None = None
    """Hotkey holding the crown after the race."""
    winner_submission_id: str | None = None
    promoted: bool = False
    code_release_at: datetime | None = None
    cancel_reason: str | None = None


class WeightVector(BaseModel):
    """Weights over uids: non-negative, summing to 1, uids ascending and distinct."""

    race_id: str | None
    uids: list[int]
    weights: list[float]
    source: Literal["race", "consensus", "validator"] = "race"
    validator_hotkey: str | None = None
    """Set when `source` is `validator`: that validator's own vector."""

    @field_validator("weights")
    @classmethod
    def _non_negative(cls, weights: list[float]) -> list[float]:
        if any(w < 0 or w != w for w in weights):
            raise ValueError("weights must be non-negative numbers")
        return weights

    @model_validator(mode="after")
    def _shape(self) -> WeightVector:
        if len(self.uids) != len(self.weights):
            raise ValueError("uids and weights differ in length")
        if self.uids != sorted(set(self.uids)):
            raise ValueError("uids must be ascending and distinct")
        if self.weights and abs(sum(self.weights) - 1.0) > 1e-9:
            raise ValueError(f"weights sum to {sum(self.weights)}, not 1")
        return self

    def as_dict(self) -> dict[int, float]:
        return dict(zip(self.uids, self.weights, strict=True))


class LeaderboardEntry(BaseModel):
    rank: int = Field(ge=1)
    hotkey: str
    uid: int | None
    submission_id: str
    name: str
    score: float = Field(ge=0, le=1)
    """The latest race score (or qualifying score for an agent that has not raced)."""
    success_rate: float = Field(ge=0, le=1)
    judge_coefficient: float | None
    incumbent: bool
    races: int = Field(ge=0)
    weight: float = Field(ge=0, le=1)


class BucketScore(BaseModel):
    bucket: str
    problems: int = Field(ge=0)
    success_rate: float = Field(ge=0, le=1)


class AgentDetail(BaseModel):
    """`GET /v1/agents/{submission_id}`: one submission's standing in the competition."""

    submission_id: str
    hotkey: str
    uid: int | None
    name: str
    status: str
    """The submission's ledger status (queued, running, scored, failed, rejected)."""
    qualified: bool | None
    """None until its qualifying run is scored."""
    qualifying_score: float | None
    race_scores: list[RaceResult] = Field(default_factory=list)
    by_bucket: list[BucketScore] = Field(default_factory=list)
    by_axis: dict[str, float] = Field(default_factory=dict)
    """Mean per-axis rule score (the scorer's axes) over its evaluated problems."""
    judge_quality: dict[str, int] = Field(default_factory=dict)
    """How many of its episodes the judge put at each quality level ("0.1" … "0.9")."""
    incumbent: bool = False
    code_release_at: datetime | None = None
    """When its code becomes public: set once it has been crowned; None = never released."""


class CompetitionReader(Protocol):
    """What the public API and the leaderboard page read (the race engine implements it over the
    arena's database; the season simulator reads it too)."""

    def leaderboard(self) -> list[LeaderboardEntry]: ...

    def races(self, limit: int = 50) -> list[Race]: ...

    def race(self, race_id: str) -> Race | None: ...

    def agent(self, submission_id: str) -> AgentDetail | None: ...

    def weights(self) -> WeightVector | None:
        """The latest consensus weights (None before the first complete race)."""
        ...
