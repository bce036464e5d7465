"""The season file (`shoparena.arena-season/1`): what a simulated season did, in records a reader can
check — the competition's config, every submission with admission's verdict, every race as the public
API serves it, the weights after each race, the dishonest validator and what its lie did (nothing,
when the combination works), and where the time went.

Everything but `timing` and `generated_at` is a function of the season's settings and seed:
`comparable()` drops those two, and two runs with one seed compare equal on the rest.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from shoparena.arena.competition.models import SEASON_SCHEMA, Race, WeightVector
from shoparena.arena.config import CompetitionConfig
from shoparena.arena.models import QualifyingReport

WALL_CLOCK_FIELDS = ("timing", "generated_at")


class SeasonSubmission(BaseModel):
    submission_id: str
    hotkey: str
    uid: int | None
    miner: str
    """The roster name of the miner (`NN-file`)."""
    file: str
    day: int
    submitted_at: datetime
    status: str
    """Its ledger status at the end of the season (queued, running, scored, failed, rejected)."""
    intended: Literal["admitted", "rejected"]
    violations: list[dict] = Field(default_factory=list)
    """Admission's violations: rule, kind, line, col, message."""
    qualifying_score: float | None = None
    """None until a quorum of validators reported its qualifying run."""
    qualified: bool | None = None
    qualifying_reports: list[QualifyingReport] = Field(default_factory=list)
    """The validators' reports behind the qualifying score: hotkey, stake, score."""


class SeasonRefusal(BaseModel):
    """A submission the API refused before admission (a cooldown)."""

    hotkey: str
    miner: str
    file: str
    day: int
    status: int
    error: str
    retry_after_s: int | None = None


class SeasonWeights(BaseModel):
    """The weights set after one race: the arena's consensus vector, and what went to the chain."""

    race_id: str | None
    uids: list[int]
    weights: list[float]
    by_validator: list[WeightVector] = Field(default_factory=list)
    chain_block: int | None = None


class RaceLie(BaseModel):
    """One race seen from the dishonest validator's favourite."""

    race_id: str
    raced: bool
    reported_by_liar: float | None = None
    honest_median: float | None = None
    """Stake-weighted median of the honest validators' scores for the favourite."""
    combined: float | None = None
    """The favourite's race score as the arena combined it."""
    consensus_weight: float = 0.0
    honest_weight: float = 0.0
    """The favourite's weight from the honest validators' vectors alone (the same consensus rule)."""


class DishonestReport(BaseModel):
    validator_hotkey: str
    favourite_hotkey: str
    favourite_miner: str
    lies: int
    """Records the dishonest validator posted inflated."""
    accepted_results: int
    """Of its results, how many the arena stored (all of them: it cannot tell a lie from a score)."""
    races: list[RaceLie] = Field(default_factory=list)
    gained_nothing: bool
    """True when, in every race, the favourite's combined score and consensus weight equal what the
    honest validators alone would have given it."""


class DayProgress(BaseModel):
    day: int
    race_id: str | None
    state: str | None
    submitted: int
    admitted: int
    rejected: int
    refused: int
    """Attempts the API refused (not counted in `submitted`)."""
    refused_by_cooldown: int = 0
    """Of `refused`, those that met the hotkey's cooldown (429)."""
    qualifying_jobs: int
    race_jobs: int
    episodes: int
    winner: str | None
    winner_name: str | None = None
    """The crowned submission's miner name (what the progress lines print rather than the hotkey)."""
    promoted: bool
    wall_s: float


class BankTopUp(BaseModel):
    """One `arena bank add` the season's operator ran before a rotation period froze."""

    day: int
    period: int
    seed: int
    asked: int
    """Tasks generated."""
    added: int
    fresh_before: int
    """Fresh held-out problems the period would have held without it."""
    fresh_after: int
    bank_size: int


class SeasonTiming(BaseModel):
    wall_s: float
    episodes: int
    episodes_per_s: float
    phases: dict[str, float]
    """Seconds per phase (setup, submit, qualifying, race, close, write)."""


class SeasonFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["shoparena.arena-season/1"] = Field(default=SEASON_SCHEMA, alias="schema")
    seed: int
    miners: int
    validators: int
    days: int
    sandbox: str
    season_start: datetime
    config: CompetitionConfig
    evaluation: dict
    participants: list[dict]
    """Every hotkey: role, uid, stake, miner name, honest or not."""
    submissions: list[SeasonSubmission]
    refusals: list[SeasonRefusal] = Field(default_factory=list)
    races: list[Race]
    weights: list[SeasonWeights]
    dishonest: DishonestReport | None = None
    bank_top_ups: list[BankTopUp] = Field(default_factory=list)
    """Every `arena bank add` the season's operator ran to keep fresh problems for the races."""
    reused_problems: int = 0
    """Race problems of this season whose leak cluster was public before the race opened: drawn by an
    earlier race, or run in a qualifying job (the firehose serves those trajectories). Always 0."""
    progress: list[DayProgress]
    generated_at: datetime | None = None
    timing: SeasonTiming | None = None

    def dump(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json", by_alias=True), option=orjson.OPT_INDENT_2) + b"\n"

    def write(self, path: Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_name(path.name + ".tmp")
        scratch.write_bytes(self.dump())
        scratch.replace(path)

    def comparable(self) -> dict:
        """The season without its wall-clock fields: equal across runs with one seed."""
        data = self.model_dump(mode="json", by_alias=True)
        for name in WALL_CLOCK_FIELDS:
            data.pop(name, None)
        for day in data["progress"]:
            day.pop("wall_s", None)
        return data


def read_season(path: Path) -> SeasonFile:
    return SeasonFile.model_validate_json(Path(path).read_bytes())
