"""An arena directory: its configuration (`arena.json`), made once by `arena init` and read by every
later command.

```
ARENA/arena.json   ArenaConfig: catalogue and problem bank (paths, sha256), store URL, code store,
                   nonce store, skew, cooldowns, size limits, job leases, evaluation settings,
                   the competition's section (CompetitionConfig: read by the competition)
ARENA/arena.db     SQLite: the arena's tables and the trajectory store (default; or --store URL)
ARENA/nonces.db    SQLite nonce store (default; or a redis:// URL)
ARENA/code/ab/…    submitted code by sha256 (default; or an s3:// URL)
```
"""

from __future__ import annotations

import hashlib
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from shoparena.arena.auth.nonces import DEFAULT_REDIS_PREFIX
from shoparena.arena.errors import ArenaConfigError
from shoparena.arena.ledger import CooldownPolicy
from shoparena.arena.models import EvaluationSettings, JobPolicy
from shoparena.index.catalog_dir import CatalogDirError, open_catalog, read_meta
from shoparena.problems.io import ProblemFileError, read_problems
from shoparena.scoring.suite import CatalogMismatchError, gold_coverage

CONFIG_FILE = "arena.json"
DEFAULT_STATE_FILE = "arena.db"
DEFAULT_CODE_DIR = "code"
SCHEMA = "shoparena.arena/1"
MIB = 1024 * 1024
SHOWN_REJECTS = 5


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
    qualifying_quorum: int | None = Field(default=None, ge=1)
    """Validators that must report a qualifying run before its score stands (None: 2 when at least two
    validators are registered, else 1 — with a warning on the page); each qualifying job goes to that
    many validators at least."""
    qualifying_stake_share: float = Field(default=0.66, gt=0, le=1)
    """Or: validators holding this share of the validators' stake have reported."""
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
    """Yuma consensus: the stake-weighted quantile each miner's weights are clipped to (the `chain`
    consensus uses the chain's 32767/65535 instead)."""
    weights: Literal["shoparena", "subnet"] = "shoparena"
    """The weight rule: `shoparena` (the crown's share, a real tail share, the rest burns) or `subnet`
    (SN15's: top 0.25, ranks 2…K paid K−1…1 u16 units out of the burn, burn pinned at 65535, N = 1
    burns all, ties by submission id). docs/arena.md compares them."""
    consensus: Literal["shoparena", "chain"] = "shoparena"
    """How validators' vectors combine: `shoparena` clips to the stake-weighted κ-quantile and burns
    the clipped mass; `chain` is Yuma as subtensor runs it: κ = 32767/65535, the burn uid clipped
    like any uid, and the result renormalised over the uids."""
    hysteresis: Literal["fixed", "decaying"] = "fixed"
    """`fixed`: a challenger must beat the incumbent by more than `margin`; `decaying`: the required
    lead starts at `margin` and halves every `margin_half_life_races` races the incumbent holds the
    crown (a decaying challenge threshold, as the subnet's)."""
    margin_half_life_races: float = Field(default=7.0, gt=0)
    """The decaying margin's half-life, in races the incumbent has held the crown."""
    weights_interval_s: int = Field(default=300, ge=0)
    """The last complete race's weights are set again this often (0: only when a race closes), so a
    validator never ages out on chain between daily races (the subnet sets them every 300 s)."""
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


class ArenaConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["shoparena.arena/1"] = Field(default=SCHEMA, alias="schema")
    catalog: str
    problems: str
    problems_sha256: str
    problems_count: int
    store: str = DEFAULT_STATE_FILE
    """Database URL, or a SQLite file path relative to the arena directory."""
    code_store: str = DEFAULT_CODE_DIR
    """A directory relative to the arena directory, or s3://bucket/prefix."""
    nonce_store: str = "sqlite"
    """`sqlite` (nonces.db in the arena directory), a file path, or redis://host:port/db."""
    nonce_prefix: str = DEFAULT_REDIS_PREFIX
    """Key prefix in Redis (several arenas can share one server)."""
    skew_s: int = Field(default=60, ge=1, le=3600)
    cooldown: CooldownPolicy = Field(default_factory=CooldownPolicy)
    jobs: JobPolicy = Field(default_factory=JobPolicy)
    """Leases, heartbeats and how many validators evaluate each submission."""
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)
    """How validators run and score every problem (production-strict)."""
    competition: CompetitionConfig = Field(default_factory=CompetitionConfig)
    """Pools, qualifying, races, promotion, embargo, weights and consensus (SPEC §6)."""
    max_code_bytes: int = Field(default=MIB, ge=1)
    max_body_bytes: int = Field(default=2 * MIB, ge=1)
    """Transport cap of a submit request: the code plus its JSON escaping (≈ 1.1× for ordinary code)."""
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    def store_url(self, arena_dir: Path) -> str:
        if "://" in self.store:
            return self.store
        return str((Path(arena_dir) / self.store).resolve())

    def dump(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json", by_alias=True), option=orjson.OPT_INDENT_2) + b"\n"


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def new_config(
    arena_dir: Path,
    catalog: Path,
    problems: Path,
    *,
    store: str | None = None,
    code_store: str | None = None,
    nonce_store: str | None = None,
    **settings,
) -> ArenaConfig:
    """Check the catalogue and the problem bank and describe a new arena (nothing is written yet)."""
    arena_dir = Path(arena_dir)
    if arena_dir.exists() and not arena_dir.is_dir():
        raise ArenaConfigError(f"--dir {arena_dir} exists and is not a directory; give a new directory")
    if (arena_dir / CONFIG_FILE).exists():
        raise ArenaConfigError(
            f"{arena_dir} is an arena already ({CONFIG_FILE} exists); pick a new directory"
        )
    try:
        read_meta(Path(catalog))
    except (CatalogDirError, ValueError) as exc:
        raise ArenaConfigError(f"--catalog {catalog}: {exc}") from None
    try:
        loaded = read_problems(problems)
    except ProblemFileError as exc:
        raise ArenaConfigError(f"--problems: {exc}") from None
    if loaded.rejects:
        shown = "; ".join(f"{r.location} {r.field}: {r.reason}" for r in loaded.rejects[:SHOWN_REJECTS])
        raise ArenaConfigError(
            f"--problems {problems}: {len(loaded.rejects)} bad record(s) ({shown}); an arena's problem bank "
            "must load cleanly — fix or drop them first"
        )
    if not loaded.problems:
        raise ArenaConfigError(f"--problems {problems}: no problems in the file")
    try:
        backend = open_catalog(Path(catalog))  # its index and store checked too
    except (CatalogDirError, ValueError) as exc:
        raise ArenaConfigError(f"--catalog {catalog}: {exc}") from None
    try:
        coverage = gold_coverage(loaded.problems, backend).require(f"--catalog {catalog}")
    except CatalogMismatchError as exc:
        raise ArenaConfigError(f"--problems {problems}: {exc}") from None
    finally:
        backend.close()
    if coverage:
        warnings.warn(f"--problems {problems}: {coverage}", stacklevel=2)
    values = {"store": store, "code_store": code_store, "nonce_store": nonce_store, **settings}
    try:
        return ArenaConfig(
            catalog=str(Path(catalog).resolve()),
            problems=str(Path(problems).resolve()),
            problems_sha256=_file_sha256(Path(problems)),
            problems_count=len(loaded.problems),
            **{key: value for key, value in values.items() if value is not None},
        )
    except ValidationError as exc:
        raise ArenaConfigError(f"arena settings: {exc}") from None


def write_config(arena_dir: Path, config: ArenaConfig) -> None:
    Path(arena_dir).mkdir(parents=True, exist_ok=True)
    (Path(arena_dir) / CONFIG_FILE).write_bytes(config.dump())


def read_config(arena_dir: Path) -> ArenaConfig:
    path = Path(arena_dir) / CONFIG_FILE
    if not path.exists():
        raise ArenaConfigError(
            f"{arena_dir} is not an arena directory (no {CONFIG_FILE}); make one with `shoparena arena init`"
        )
    try:
        return ArenaConfig.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise ArenaConfigError(f"{path}: {exc}") from None
