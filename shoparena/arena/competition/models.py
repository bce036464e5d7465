"""The competition's shared records: one shape per idea, read and written by the pools, the race
engine, the weights, the public API, the leaderboard page and the season simulator.

Field names follow the season file (`shoparena.arena-season/1`) and the public API, so a record is
written once and served as is. Times are timezone-aware UTC; scores are in [0, 1].
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from shoparena.arena.models import QualifyingStanding

RaceState = Literal["QUALIFYING_OPEN", "RACE_RUNNING", "RACE_COMPLETE", "CANCELLED"]
RACE_STATES: tuple[str, ...] = ("QUALIFYING_OPEN", "RACE_RUNNING", "RACE_COMPLETE", "CANCELLED")
ROTATION_SCHEMA = "shoparena.rotation/2"
ROTATION_SCHEMA_V1 = "shoparena.rotation/1"
"""Manifests frozen before retirement (no `retired_*` lists); still read and verified as they are."""
SEASON_SCHEMA = "shoparena.arena-season/1"


class RotationManifest(BaseModel):
    """One period of the race bank: which leak clusters are open (qualifying), which are held out
    (races) and which are retired (raced: public, never raced or qualified on again). Frozen once
    written; `sha256` hashes its canonical JSON without `sha256` itself."""

    model_config = ConfigDict(extra="forbid")

    schema_: Literal["shoparena.rotation/1", "shoparena.rotation/2"] = Field(
        default=ROTATION_SCHEMA, alias="schema"
    )
    period: int = Field(ge=0)
    starts_at: datetime
    ends_at: datetime
    bank_sha256: str
    open_clusters: list[str]
    heldout_clusters: list[str]
    open_problem_ids: list[str]
    heldout_problem_ids: list[str]
    retired_clusters: list[str] = Field(default_factory=list)
    """Clusters a race drew before this manifest was frozen (schema 2): on neither side, for good."""
    retired_problem_ids: list[str] = Field(default_factory=list)
    sha256: str = ""

    @model_validator(mode="after")
    def _guard(self) -> RotationManifest:
        if set(self.open_clusters) & set(self.heldout_clusters):
            raise ValueError("a leak cluster is both open and held out")
        if set(self.open_problem_ids) & set(self.heldout_problem_ids):
            raise ValueError("a problem is both open and held out")
        if (set(self.open_clusters) | set(self.heldout_clusters)) & set(self.retired_clusters):
            raise ValueError("a retired leak cluster is open or held out")
        if self.schema_ == ROTATION_SCHEMA_V1 and (self.retired_clusters or self.retired_problem_ids):
            raise ValueError(f"a {ROTATION_SCHEMA_V1} manifest has no retired clusters")
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
    name: str | None = None
    """The submission's name as the ledger has it (filled when the race is read; None in records written
    before, or when the ledger has no such submission)."""


class AgentRaceResult(RaceResult):
    """One of an agent's race results, with the race it was scored in."""

    race_id: str


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
    winner_name: str | None = None
    """The crowned submission's name (filled when the race is read)."""
    incumbent_before_name: str | None = None
    """The name of the submission that held the crown when the race opened (filled when read)."""
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
    """The latest race score (or qualifying score for an agent that has not raced; for a provisional
    entry, its score on the arena's problem bank)."""
    success_rate: float = Field(ge=0, le=1)
    judge_coefficient: float | None
    incumbent: bool
    races: int = Field(ge=0)
    """Closed races with a result for this submission (what its agent page lists)."""
    weight: float = Field(ge=0, le=1)
    provisional: bool = False
    """True in an arena without a race bank: ranked by its score on the arena's problem bank (the
    stake-weighted median of its validators' final scores, once their quorum has reported). Not a race
    result: it earns no weight and no crown; races start once the operator adds a race bank."""


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
    """None until a quorum of validators has reported (see `qualifying`)."""
    qualifying: QualifyingStanding | None = None
    """The validators' reports behind the qualifying score (hotkey, stake, score) and its quorum."""
    provisional_score: float | None = Field(default=None, ge=0, le=1)
    """In an arena without a race bank: its score on the arena's problem bank once it stands (what the
    provisional ranking shows). Not a qualifying score: it earns no weight and no crown."""
    qualify_threshold: float | None = None
    """The bar a qualifying score must reach (`qualified` is `qualifying_score >= qualify_threshold`)."""
    race_scores: list[AgentRaceResult] = Field(default_factory=list)
    """Its result in every race it was scored in, oldest first: the leaderboard's `races` counts these."""
    by_bucket: list[BucketScore] = Field(default_factory=list)
    by_axis: dict[str, float] = Field(default_factory=dict)
    """Mean per-axis rule score (the scorer's axes) over its evaluated problems."""
    judge_quality: dict[str, int] = Field(default_factory=dict)
    """How many of its episodes the judge put at each quality level ("0.1" … "0.9")."""
    incumbent: bool = False
    code_release_at: datetime | None = None
    """When its code becomes public: set once it has been crowned; None = never released."""


class Freshness(BaseModel):
    """The race bank's fresh held-out problems at one moment, and whether the next race can open."""

    period: int = Field(ge=0)
    """The rotation period in force."""
    frozen: bool
    """Its manifest is frozen (else these counts are a preview: problems added now still join it)."""
    next_period_at: datetime
    fresh_problems: int = Field(ge=0)
    """Held-out problems whose leak cluster no race has drawn: what races may still draw this period."""
    race_problems: int = Field(ge=1)
    """What one race draws (`competition.race_problems`)."""
    races_left: int = Field(ge=0)
    """Races the fresh problems still fill."""
    open_problems: int = Field(ge=0)
    retired_problems: int = Field(ge=0)
    """Bank problems in a leak cluster some race has drawn: public, never raced or qualified on again."""
    bank_problems: int = Field(ge=0)
    postponed: bool
    reason: str | None = None
    """Why the next race cannot open, and how to add problems (set when `postponed`)."""


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

    def freshness(self) -> Freshness | None:
        """The race bank's fresh held-out problems now, and why the next race waits if it must (None
        before the arena has a race bank)."""
        ...
