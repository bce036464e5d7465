"""The season driver: plays `days` of the competition on one machine, on the simulated clock, through
the real pieces — the signed API served by uvicorn on loopback, admission, the job board, real
validators running the sandboxed file agent with strict scoring and the offline judge, the race
engine, the weights and the local chain.

A day (times from the day's start, the clock standing still in between):

| at | what |
|---|---|
| 00:00 | before a rotation period freezes, the operator adds problems (`bank add`) when too few fresh held-out ones are left for its races; the race engine opens the day's race (seed derived from the season seed; its commitment published), or postpones it when no fresh problems are left |
| 00:10 + 10 min × slot | miners whose file is due submit through `POST /v1/miner/submit` (cooldowns apply; a rejected miner tries again 5 min later) |
| 03:00 | every validator claims and evaluates jobs until none is left (qualifying runs) |
| 12:00 | the race starts: each hotkey's latest qualified submission gets a race job |
| 12:05 | the validators evaluate the race jobs |
| 20:00 | the race closes: scores combined, promotion, embargo, seed revealed, weights to the chain |
"""

from __future__ import annotations

import hashlib
import itertools
import time
import warnings
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from shoparena.arena import Arena
from shoparena.arena.auth.keys import keypair_from_seed
from shoparena.arena.db import as_utc
from shoparena.arena.participants.client import ArenaClient, ArenaRefused
from shoparena.arena.participants.validator import JobReport, Validator, ValidatorSettings
from shoparena.season.clock import SEASON_EPOCH, SimClock
from shoparena.season.roster import FAVOURITE_SLOT, miner_source, roster
from shoparena.season.seasonfile import (
    BankTopUp,
    DayProgress,
    SeasonFile,
    SeasonRefusal,
    SeasonSubmission,
    SeasonTiming,
)
from shoparena.season.setup import (
    Participant,
    SeasonSettings,
    keep_bank_fresh,
    open_or_init,
    register_all,
)
from shoparena.season.summary import summarise
from shoparena.season.validators import DishonestValidator, drain

DAY = timedelta(days=1)
SUBMIT_AT = timedelta(minutes=10)
QUALIFY_AT = timedelta(hours=3)
RACE_AT = timedelta(hours=12)
RACE_WORK_AT = timedelta(hours=12, minutes=5)
CLOSE_AT = timedelta(hours=20)
RETRY_AFTER = timedelta(minutes=5)
"""A rejected malicious miner tries again this soon (and meets its cooldown)."""
PHASES = ("setup", "submit", "qualifying", "race", "close", "write")

Progress = Callable[[DayProgress], None]


def race_seed(season_seed: int, race: int) -> str:
    """The seed of the arena's `race`-th race (1-based): secret until it closes, derived so a season can
    be replayed."""
    return hashlib.sha256(f"shoparena-season:{season_seed}:race:{race}".encode()).hexdigest()


def seeded_ids(season_seed: int, after: int = 0) -> Callable[[], str]:
    """Submission ids from the season seed (32 hex digits, as the ledger's own), numbered after the
    `after` submissions the arena holds already (a second season in one directory gets new ids)."""
    counter = itertools.count(after + 1)
    return lambda: hashlib.sha256(
        f"shoparena-season:{season_seed}:submission:{next(counter)}".encode()
    ).hexdigest()[:32]


def resolve_sandbox(choice: str) -> str:
    """`auto`: bubblewrap when it runs here, else none (loudly). `bwrap` asked for but unable to run is
    an error before the season starts (else every job would fail and every race be cancelled)."""
    if choice not in ("auto", "bwrap"):
        return choice
    from shoparena.sandbox import SandboxUnavailable, check_sandbox

    try:
        check_sandbox()
    except SandboxUnavailable as exc:
        if choice == "bwrap":
            from shoparena.arena.errors import ArenaError

            raise ArenaError(
                f"--sandbox bwrap: bubblewrap cannot run here ({exc}); install it (apt-get install -y "
                "bubblewrap) or choose --sandbox auto|none"
            ) from None
        warnings.warn(
            f"bubblewrap cannot run here ({exc}); the season runs miner code WITHOUT a sandbox "
            "(install bubblewrap for the real thing)",
            stacklevel=2,
        )
        return "none"
    return "bwrap"


def _counts(arena: Arena) -> tuple[int, int]:
    """(submissions, races) the arena holds before this season."""
    from sqlalchemy import func, select

    from shoparena.arena.schema import Race, Submission

    with arena.store.engine.connect() as connection:
        submissions = connection.execute(select(func.count()).select_from(Submission.__table__)).scalar()
        races = connection.execute(select(func.count()).select_from(Race.__table__)).scalar()
    return int(submissions or 0), int(races or 0)


def season_start(arena: Arena, engine) -> datetime:
    """Day 1's start: the season epoch in a new arena; in one that has run before, the first day boundary
    (the epoch's time of day) after its creation and after its last race's period."""
    from shoparena.arena.errors import ArenaError

    start = max(SEASON_EPOCH, as_utc(arena.config.created_at))
    current = engine.current()
    if current is not None:
        if current.state not in ("RACE_COMPLETE", "CANCELLED"):
            raise ArenaError(
                f"race {current.race_id} of {arena.dir} is {current.state}: close it first "
                "(`shoparena arena race close`) or simulate in a new directory"
            )
        start = max(
            start, as_utc(current.row.opened_at) + timedelta(seconds=arena.config.competition.race_cadence_s)
        )
    if start > SEASON_EPOCH:
        days = -(-(start - SEASON_EPOCH) // DAY)
        start = SEASON_EPOCH + days * DAY
    return start


class Season:
    """One season over `arena_dir` (made when missing). `run()` plays it and returns the season file."""

    def __init__(self, arena_dir: Path, settings: SeasonSettings, progress: Progress | None = None):
        self.arena_dir = Path(arena_dir)
        self.settings = settings
        self.progress = progress
        self.clock = SimClock(SEASON_EPOCH)
        self.phases = dict.fromkeys(PHASES, 0.0)
        self.episodes = 0
        self.submissions: list[SeasonSubmission] = []
        self.refusals: list[SeasonRefusal] = []
        self.days: list[DayProgress] = []
        self.top_ups: list[BankTopUp] = []
        self.sandbox = resolve_sandbox(settings.sandbox)
        self.start = SEASON_EPOCH
        self.prior_submissions = self.prior_races = 0

    # -- timing --------------------------------------------------------------------------------------

    def _timed(self, phase: str, started: float) -> None:
        self.phases[phase] += time.perf_counter() - started

    # -- the season ----------------------------------------------------------------------------------

    def run(self) -> SeasonFile:
        wall = time.perf_counter()
        with open_or_init(self.arena_dir, self.settings) as arena:
            season = self._play(arena, wall)
        wall_s = time.perf_counter() - wall
        season.generated_at = datetime.now(UTC)
        season.timing = SeasonTiming(
            wall_s=round(wall_s, 3),
            episodes=self.episodes,
            episodes_per_s=round(self.episodes / wall_s, 3) if wall_s > 0 else 0.0,
            phases={k: round(v, 3) for k, v in self.phases.items()},
        )
        return season

    def _play(self, arena: Arena, started: float) -> SeasonFile:
        from shoparena.arena.api.app import create_app, running
        from shoparena.arena.competition.engine import RaceEngine

        settings = self.settings
        self.prior_submissions, self.prior_races = _counts(arena)
        arena.ledger.new_id = seeded_ids(settings.seed, self.prior_submissions)
        miners, entrants, validator_keys = register_all(arena, self.arena_dir, settings)
        specs = roster(settings.miners)
        favourite = next((m for m, s in zip(miners, specs, strict=True) if s.slot == FAVOURITE_SLOT), None)
        engine = RaceEngine(arena, clock=self.clock)
        self.start = season_start(arena, engine)
        self.clock.set(self.start)
        app = create_app(arena, clock=self.clock)
        self._timed("setup", started)
        with ExitStack() as stack:
            url = stack.enter_context(running(app))
            miner_clients = [
                stack.enter_context(ArenaClient(url, keypair_from_seed(m.secret_seed), clock=self.clock))
                for m in miners
            ]
            entering = [
                (
                    entrant,
                    key,
                    stack.enter_context(
                        ArenaClient(url, keypair_from_seed(key.secret_seed), clock=self.clock)
                    ),
                )
                for entrant, key in zip(settings.entrants, entrants, strict=True)
            ]
            validators = [stack.enter_context(self._validator(url, key, favourite)) for key in validator_keys]
            for validator in validators:
                validator.check()
            for day in range(1, settings.days + 1):
                self._day(day, arena, engine, specs, miners, miner_clients, validators, entering)
        started = time.perf_counter()
        season = self._season_file(
            arena, engine, specs, miners, validator_keys, validators, favourite, entrants
        )
        self._timed("write", started)
        return season

    def _validator(self, url: str, key: Participant, favourite: Participant | None) -> _Closing:
        client = ArenaClient(url, keypair_from_seed(key.secret_seed), clock=self.clock)
        options = ValidatorSettings(
            sandbox=self.sandbox,
            workers=self.settings.workers,
            judge="offline",
            inference_models=self.settings.inference_models,
        )
        if not key.honest and favourite is not None:
            return _Closing(DishonestValidator(client, favourite.hotkey, options), client)
        return _Closing(Validator(client, options), client)

    def _day(self, day, arena: Arena, engine, specs, miners, clients, validators, entering=()) -> None:
        started_day = time.perf_counter()
        from shoparena.arena.competition.engine import RacePostponed

        start = self.start + (day - 1) * DAY
        self.clock.set(start)
        self.top_ups += keep_bank_fresh(arena, self.settings, start, day)
        try:
            race = engine.open_race(start, seed=race_seed(self.settings.seed, self.prior_races + day))
        except RacePostponed:
            race = None

        started = time.perf_counter()
        before = len(self.submissions), len(self.refusals)
        for spec, miner, client in zip(specs, miners, clients, strict=True):
            if not self.settings.roster_submits:
                break
            due = [spec.file] if day == 1 else [r.file for r in spec.resubmissions if r.day == day]
            for file in due:
                intended = "admitted" if (spec.admitted or file != spec.file) else "rejected"
                self.clock.set(start + SUBMIT_AT + timedelta(minutes=10 * spec.slot))
                self._submit(day, spec.name, miner, client, file, miner_source(file), intended)
                if day == 1 and not spec.admitted:  # a rejected miner tries again at once: the cooldown
                    self.clock.set(start + SUBMIT_AT + timedelta(minutes=10 * spec.slot) + RETRY_AFTER)
                    self._submit(day, spec.name, miner, client, file, miner_source(file), intended)
        for slot, (entrant, key, client) in enumerate(entering if day == 1 else (), start=len(specs) + 1):
            self.clock.set(start + SUBMIT_AT + timedelta(minutes=10 * slot))
            self._submit(day, entrant.name, key, client, entrant.name, entrant.source, "admitted")
        self._timed("submit", started)

        started = time.perf_counter()
        self.clock.set(start + QUALIFY_AT)
        qualifying = self._work(validators)
        self._timed("qualifying", started)

        closed, racing = None, (0, 0)
        if race is not None:
            started = time.perf_counter()
            self.clock.set(start + RACE_AT)
            engine.start_race(start + RACE_AT)
            self.clock.set(start + RACE_WORK_AT)
            racing = self._work(validators)
            self._timed("race", started)

            started = time.perf_counter()
            self.clock.set(start + CLOSE_AT)
            closed = engine.close_race(start + CLOSE_AT)
            self._timed("close", started)

        new = self.submissions[before[0] :]
        refused = self.refusals[before[1] :]
        progress = DayProgress(
            day=day,
            race_id=closed.race_id if closed else None,
            state=closed.state if closed else "POSTPONED",
            submitted=len(new),
            admitted=sum(1 for s in new if s.status == "admitted"),
            rejected=sum(1 for s in new if s.status == "rejected"),
            refused=len(refused),
            refused_by_cooldown=sum(1 for r in refused if r.error == "cooldown"),
            qualifying_jobs=qualifying[0],
            race_jobs=racing[0],
            episodes=qualifying[1] + racing[1],
            winner=closed.winner if closed else None,
            winner_name=next(
                (
                    s.miner
                    for s in self.submissions
                    if closed and s.submission_id == closed.winner_submission_id
                ),
                None,
            ),
            promoted=closed.promoted if closed else False,
            wall_s=round(time.perf_counter() - started_day, 3),
        )
        self.days.append(progress)
        if self.progress is not None:
            self.progress(progress)

    def _submit(
        self,
        day: int,
        name: str,
        miner: Participant,
        client: ArenaClient,
        file: str,
        source: str,
        intended: Literal["admitted", "rejected"],
    ) -> None:
        try:
            answer = client.submit(f"{name}:{file}", source)
        except ArenaRefused as exc:
            self.refusals.append(
                SeasonRefusal(
                    hotkey=miner.hotkey,
                    miner=name,
                    file=file,
                    day=day,
                    status=exc.status,
                    error=exc.error,
                    retry_after_s=exc.retry_after_s,
                )
            )
            return
        violations = [v.model_dump(mode="json") for v in getattr(answer, "violations", [])]
        self.submissions.append(
            SeasonSubmission(
                submission_id=answer.submission_id,
                hotkey=miner.hotkey,
                uid=miner.uid,
                miner=name,
                file=file,
                day=day,
                submitted_at=self.clock.now(),
                status=answer.status,
                intended=intended,
                violations=violations,
            )
        )

    def _work(self, validators: list[Validator]) -> tuple[int, int]:
        """(jobs posted, episodes run) by all validators until the queue is empty for each."""
        jobs = episodes = 0

        def counted(_validator: Validator, report: JobReport) -> None:
            nonlocal jobs, episodes
            if report.status == "posted":
                jobs += 1
                episodes += report.problems

        drain([v.validator for v in validators], counted)
        self.episodes += episodes
        return jobs, episodes

    def _season_file(
        self, arena, engine, specs, miners, validator_keys, validators, favourite, entrants
    ) -> SeasonFile:
        return summarise(self, arena, engine, specs, miners, validator_keys, validators, favourite, entrants)


class _Closing:
    """A validator and its client, closed together (as `with` does)."""

    def __init__(self, validator: Validator, client: ArenaClient):
        self.validator = validator
        self.client = client

    def __enter__(self) -> _Closing:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.validator.close()
        self.client.close()

    def check(self):
        return self.validator.check()
