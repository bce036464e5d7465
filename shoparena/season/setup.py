"""Making (or reopening) the season's arena: a small generated catalogue and problem bank, `arena init`
with the season's settings, the race bank (`bank add`), and the miners' and validators' keys,
registered in the metagraph.

A season registers made-up miners and validators with stake in the arena's metagraph, races them and
pushes weights to its chain, so it plays only in a directory of its own: a missing or empty one (marked
with `simulated.json` before anything else is written) or one an earlier season marked. Anything else —
a real arena, a catalogue, any other non-empty directory — is refused.

Keys are derived from the season seed (a hash of seed, role and index), so the same seed gives the
same hotkeys and the season file can be compared across runs. They are written as ordinary key files
(mode 0600) under `ARENA/keys/`, where `shoparena miner status --key …` can use them afterwards.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from shoparena.arena import Arena, open_arena
from shoparena.arena.auth.keys import KeyFile, keypair_from_seed, write_key_file
from shoparena.arena.config import CONFIG_FILE, CompetitionConfig, read_config
from shoparena.arena.errors import ArenaError
from shoparena.arena.ledger import CooldownPolicy
from shoparena.arena.models import EvaluationSettings, JobPolicy
from shoparena.records.options import CliFlag, Profile, SimilarityName
from shoparena.season.clock import SEASON_EPOCH
from shoparena.season.roster import FAVOURITE_SLOT
from shoparena.season.seasonfile import BankTopUp

KEYS_DIR = "keys"
SIMULATED_MARKER = "simulated.json"
"""The file that marks a directory as the season simulator's arena (see the module)."""
HONEST_STAKE = 100.0
DISHONEST_STAKE = 40.0
"""The dishonest validator holds a minority of the stake whatever the number of validators."""
VALIDATOR_UID_BASE = 100
ENTRANT_UID_BASE = 50
"""Entrants (miners from outside the roster, e.g. the closed loop's distilled model) get uids 51, 52 …"""


class Entrant(BaseModel):
    """A miner from outside the roster: its own file, submitted on the season's first day after the
    roster's miners. The closed loop enters its distilled model this way."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    """Its name in the season file (`participants[].miner`, `submissions[].miner`)."""
    source: str = Field(repr=False)
    """The miner file's text (admission judges it like any other)."""
    about: str = ""


class SeasonSettings(BaseModel):
    """What a season is made of; everything that decides its outcome is here (and in OUT.json)."""

    model_config = ConfigDict(extra="forbid")

    cli_exclude: ClassVar[frozenset[str]] = frozenset(
        {"products", "qualifying_bank", "race_bank", "step_cap", "dishonest", "roster_submits", "entrants"}
        | {"inference_models"}
    )
    """Settings `arena simulate` does not offer (each other field is one of its options, its description
    the help; `--all-honest` is `dishonest` turned round)."""

    miners: Annotated[int, CliFlag(min=1, max=12)] = Field(
        default=12, ge=1, le=12, description="First N miners of the roster."
    )
    validators: Annotated[int, CliFlag(min=1, max=16)] = Field(
        default=3, ge=1, le=16, description="Validators (the last one is dishonest)."
    )
    days: Annotated[int, CliFlag(min=1, max=60)] = Field(
        default=5, ge=1, le=60, description="Days (one race each)."
    )
    seed: int = Field(0, description="Season seed: keys, catalogue, problems, races.")
    products: int = Field(default=3000, ge=200)
    """Catalogue size (generated)."""
    qualifying_bank: int = Field(default=12, ge=3)
    """Problems in the arena's own bank (`arena init --problems`)."""
    race_bank: int = Field(default=24, ge=4)
    """Tasks added to the race bank (each its own leak cluster)."""
    problem_timeout_s: Annotated[float, CliFlag(min=1.0)] = Field(
        default=12.0, gt=0, description="Wall clock per problem (new arenas)."
    )
    step_cap: int | None = Field(default=None, ge=1)
    similarity: Annotated[SimilarityName, CliFlag(type=str)] = Field(
        "lexical",
        description="Title similarity of strict scoring (new arenas): lexical (fast) or minilm (production).",
    )
    """lexical keeps a small season fast on a CPU; minilm is the production choice (the arena's own default
    and SPEC §4's embeddings)."""
    profile: Annotated[Profile, CliFlag(type=str)] = Field(
        "oro7", description="Tool profile the arena races with (new arenas): oro7, upstream4 or full."
    )
    """oro7 is the arena's (ORO's template); upstream4 is ShoppingBench's four tools, the rows the learning
    proof trains on (configs/loop/learn.yaml races with them so the distilled agent meets the tools it
    learned)."""
    sandbox: str = Field(
        "auto", description="bwrap, container, none, or auto (bwrap when it runs here, else none)."
    )
    """auto: none with a warning where bubblewrap does not run."""
    workers: Annotated[int, CliFlag(min=1)] = Field(
        default=1, ge=1, description="Problems each validator runs at once."
    )
    race_problems: Annotated[int, CliFlag(min=1)] = Field(
        default=3, ge=1, description="Problems per race (new arenas)."
    )
    qualifying_problems: Annotated[int, CliFlag(min=1)] = Field(
        default=3, ge=1, description="Problems per qualifying run (new arenas)."
    )
    dishonest: bool = True
    """The last validator lies for its favourite (needs ≥ 2 validators)."""
    qualify_threshold: Annotated[float, CliFlag(min=0.0, max=1.0)] = Field(
        default=0.1, ge=0, le=1, description="Qualifying score needed to race (new arenas)."
    )
    weights: Annotated[Literal["shoparena", "subnet"], CliFlag(type=str)] = Field(
        "shoparena", description="Weight rule (new arenas): shoparena or subnet (SN15's)."
    )
    roster_submits: bool = True
    """False: the roster's miners submit nothing this season and race with their latest qualified
    files (a continuation that only brings `entrants`)."""
    entrants: list[Entrant] = Field(default_factory=list)
    inference_models: dict[str, str] | None = None
    """The validators' inference-proxy allowlist, public name → upstream spec [default: the offline
    reference models]; an entrant's model is served by adding it here."""

    def competition(self) -> CompetitionConfig:
        """The competition knobs a small season runs with (recorded in OUT.json's `config`)."""
        return CompetitionConfig(
            race_problems=self.race_problems,
            qualifying_problems=self.qualifying_problems,
            qualify_threshold=self.qualify_threshold,
            margin=0.02,
            race_cadence_s=86400,
            rotation_cadence_s=2 * 86400,
            heldout_fraction=0.5,
            min_validators=min(2, self.validators),
            weights=self.weights,
        )


class Participant(BaseModel):
    """A key the season signs with: a miner of the roster or a validator."""

    role: str
    index: int
    hotkey: str
    uid: int
    stake: float
    honest: bool = True
    key_file: str
    secret_seed: str = Field(repr=False)


def _seed_of(seed: int, role: str, index: int) -> str:
    return "0x" + hashlib.sha256(f"shoparena-season:{seed}:{role}:{index}".encode()).hexdigest()


def participant(arena_dir: Path, seed: int, role: str, index: int, uid: int, stake: float) -> Participant:
    secret = _seed_of(seed, role, index)
    hotkey = keypair_from_seed(secret).ss58_address
    path = Path(arena_dir) / KEYS_DIR / f"{role}-{index:02d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        write_key_file(path, KeyFile(ss58_address=hotkey, secret_seed=secret))
    return Participant(
        role=role, index=index, hotkey=hotkey, uid=uid, stake=stake, key_file=str(path), secret_seed=secret
    )


def build_world(arena_dir: Path, settings: SeasonSettings, sandbox_timeout_s: float | None = None) -> Path:
    """A catalogue and the arena's problem bank under `arena_dir/world/` (reused when present)."""
    from shoparena.problems.world import generated_world

    world = Path(arena_dir) / "world"
    generated_world(
        world,
        products=settings.products,
        seed=settings.seed,
        problems=settings.qualifying_bank,
        problems_file="qualifying.jsonl",
    )
    return world


def claim_for_season(arena_dir: Path) -> None:
    """Make sure a season may play in `arena_dir`, marking it when it is missing or empty; an
    `ArenaError` naming the directory and the reason otherwise."""
    arena_dir = Path(arena_dir)
    marker = arena_dir / SIMULATED_MARKER
    if marker.is_file():
        return
    fake = "made-up miners, validators with stake and chain weights"
    if arena_dir.exists() and not arena_dir.is_dir():
        raise ArenaError(f"{arena_dir} is not a directory; simulate in a new or empty directory")
    held = sorted(p.name for p in arena_dir.iterdir()) if arena_dir.exists() else []
    if (arena_dir / CONFIG_FILE).exists():
        if not _made_by_an_older_season(arena_dir):
            raise ArenaError(
                f"{arena_dir} is an arena the season simulator did not make (it has no {SIMULATED_MARKER}): "
                f"a season would put {fake} into it. Simulate in a new or empty directory"
            )
    elif held:
        shown = ", ".join(held[:5]) + (", …" if len(held) > 5 else "")
        raise ArenaError(
            f"{arena_dir} is not empty and is not an arena the season simulator made (it holds {shown}): a "
            f"season would write an arena into it (arena.json, arena.db, world/, keys/, chain/) with {fake}. "
            "Simulate in a new or empty directory"
        )
    arena_dir.mkdir(parents=True, exist_ok=True)
    marker.write_text(
        json.dumps(
            {
                "made_by": "shoparena arena simulate",
                "about": "a simulated season's arena: its miners, validators, stakes and weights are made up",
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )


def made_by_a_season(arena_dir: Path) -> bool:
    """Whether the season simulator made `arena_dir` (its marker, or an older season's clock stamp):
    its races ran on the season's simulated clock, so the real one finds every race day past."""
    arena_dir = Path(arena_dir)
    return (arena_dir / SIMULATED_MARKER).is_file() or (
        (arena_dir / CONFIG_FILE).is_file() and _made_by_an_older_season(arena_dir)
    )


def _made_by_an_older_season(arena_dir: Path) -> bool:
    """An arena a season made before seasons marked theirs: created on the season's clock (`arena init`
    stamps the machine's)."""
    try:
        return read_config(arena_dir).created_at == SEASON_EPOCH
    except ArenaError:
        return False


def open_or_init(arena_dir: Path, settings: SeasonSettings) -> Arena:
    """The season's arena: made with `arena init` + `bank add` when `arena_dir` is new (or empty), else
    reopened when a season made it; any other directory is refused (`claim_for_season`)."""
    from shoparena.arena import init_arena

    arena_dir = Path(arena_dir)
    claim_for_season(arena_dir)
    if (arena_dir / CONFIG_FILE).exists():
        return open_arena(arena_dir)
    world = build_world(arena_dir, settings)
    init_arena(
        arena_dir,
        world / "catalog",
        world / "qualifying.jsonl",
        cooldown=CooldownPolicy(full_s=12 * 3600, security_s=3600, format_s=300),
        jobs=JobPolicy(lease_s=3600, validators_per_submission=settings.validators, max_lapses=3),
        evaluation=EvaluationSettings(
            similarity=settings.similarity,
            profile=settings.profile,
            timeout_s=settings.problem_timeout_s,
            step_cap=settings.step_cap,
        ),
        competition=settings.competition(),
        created_at=SEASON_EPOCH,  # rotation periods count from here: the season's clock, not the machine's
    )
    add_race_bank(arena_dir, settings)
    return open_arena(arena_dir)


def add_race_bank(arena_dir: Path, settings: SeasonSettings) -> None:
    from shoparena.arena.competition.bank import add_to_bank

    add_to_bank(arena_dir, settings.race_bank, settings.seed)


TOP_UP_TRIES = 3
"""Generated batches the operator tries before a period (a batch can land in raced or never-touch
clusters and add nothing fresh)."""


def top_up_seed(season_seed: int, period: int, attempt: int) -> int:
    """The generator seed of the operator's `attempt`-th batch before `period`: never the first bank's."""
    digest = hashlib.sha256(f"shoparena-season:{season_seed}:bank:{period}:{attempt}".encode()).digest()
    return 1_000_000 + int.from_bytes(digest[:4], "big")


def keep_bank_fresh(arena: Arena, settings: SeasonSettings, at, day: int) -> list[BankTopUp]:
    """What a careful operator does before a rotation period freezes (issue 22): a raced problem is
    never raced again, so the bank must hold enough fresh held-out problems for every race of the
    period, and problems added once the period is frozen only join the next one. When the period
    holding `at` is not frozen yet and its preview holds fewer fresh held-out problems than its races
    need, add generated tasks (`arena bank add` with a new seed) until it does."""
    from shoparena.arena.competition.bank import add_to_bank
    from shoparena.arena.competition.freshness import arena_freshness

    config = arena.config.competition
    races = max(1, -(-config.rotation_cadence_s // config.race_cadence_s))
    needed = races * config.race_problems
    done: list[BankTopUp] = []
    for attempt in range(TOP_UP_TRIES):
        fresh = arena_freshness(arena, at)
        if fresh is None or fresh.frozen or fresh.fresh_problems >= needed:
            break
        asked = math.ceil((needed - fresh.fresh_problems) / config.heldout_fraction) + config.race_problems
        seed = top_up_seed(settings.seed, fresh.period, attempt)
        report = add_to_bank(arena.dir, asked, seed)
        after = arena_freshness(arena, at)
        done.append(
            BankTopUp(
                day=day,
                period=fresh.period,
                seed=seed,
                asked=asked,
                added=report.added,
                fresh_before=fresh.fresh_problems,
                fresh_after=after.fresh_problems if after is not None else 0,
                bank_size=report.bank_size,
            )
        )
    return done


def register_all(
    arena: Arena, arena_dir: Path, settings: SeasonSettings
) -> tuple[list[Participant], list[Participant], list[Participant]]:
    """The miners' (uids 1…N), entrants' (uids 51…) and validators' keys, registered with their stakes.
    An entrant's key is derived from its name, so the same entrant keeps its hotkey across seasons."""
    miners = [
        participant(arena_dir, settings.seed, "miner", i, uid=i, stake=0.0)
        for i in range(1, settings.miners + 1)
    ]
    entrants = [
        participant(
            arena_dir, settings.seed, f"entrant-{entrant.name}", 0, uid=ENTRANT_UID_BASE + i, stake=0.0
        )
        for i, entrant in enumerate(settings.entrants, start=1)
    ]
    validators = []
    for i in range(1, settings.validators + 1):
        dishonest = (
            settings.dishonest
            and settings.validators >= 2
            and settings.miners >= FAVOURITE_SLOT
            and i == settings.validators
        )
        stake = DISHONEST_STAKE if dishonest else HONEST_STAKE
        key = participant(arena_dir, settings.seed, "validator", i, uid=VALIDATOR_UID_BASE + i, stake=stake)
        validators.append(key.model_copy(update={"honest": not dishonest}))
    for person in miners + entrants:
        arena.metagraph.register(person.hotkey, "miner", stake=person.stake, uid=person.uid)
    for person in validators:
        arena.metagraph.register(person.hotkey, "validator", stake=person.stake, uid=person.uid)
    return miners, entrants, validators
