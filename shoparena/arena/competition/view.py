"""The competition as the public reads it: `CompetitionView(arena)` implements `CompetitionReader` over
the arena's database (the public API, the leaderboard page and the season simulator read it).

Nothing secret leaves here: a race's seed and problems stay None until its outcome row exists (the
commitment is public from the start).

The standings and the recent races (what the page `/` and `GET /v1/leaderboard` read on every request)
are cached, keyed on the version of the data they read (`competition.cache`): each is computed on one
connection in one snapshot, and the version is read in that same snapshot, so a cached answer is
exactly the answer for its version. Why each key is complete is said at `leaderboard` and `races`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TypeVar

from sqlalchemy import Connection, Table, select

from shoparena.arena.arena import Arena
from shoparena.arena.competition import rules
from shoparena.arena.competition.cache import COMPUTE, HIT, CacheInfo, ReadCache, data_version
from shoparena.arena.competition.engine import RaceEngine, latest_admitted
from shoparena.arena.competition.models import (
    AgentDetail,
    AgentRaceResult,
    BucketScore,
    Freshness,
    LeaderboardEntry,
    Race,
    RaceResult,
    WeightVector,
)
from shoparena.arena.tables import (
    JOBS,
    PROBLEM_RESULTS,
    RACE_ENTRIES,
    RACE_EVENTS,
    RACE_OUTCOMES,
    RACES,
    SUBMISSION_RESULTS,
    SUBMISSIONS,
    WEIGHT_VECTORS,
)

AXES = ("title", "price", "service", "sku_attr", "knowledge")
"""The scorer's per-axis ratios in a record's score (None when a problem asks nothing of the axis)."""
LEADERBOARD_TABLES = (SUBMISSIONS, JOBS, SUBMISSION_RESULTS, RACE_ENTRIES, RACE_OUTCOMES, WEIGHT_VECTORS)
"""Every table `leaderboard` reads (besides the metagraph's `neurons`); all append-only."""
RACES_TABLES = (RACES, RACE_EVENTS, RACE_OUTCOMES)
"""Every table `races` reads that can change its answer; all append-only. (It also reads the racers'
names from `submissions`, but a race names only submissions that existed before it closed, and a
submission's row never changes: a new submission cannot change a race already read.)"""
CACHE_ENTRIES = 32
MAX_CACHED_RACES = 200
"""`races(limit)` is cached up to the public API's cap; a longer list (the season summary's) is not."""
T = TypeVar("T")


class CompetitionView:
    """Read-only answers for the public API (`CompetitionReader`).

    One view per arena (its cache holds that arena's answers only). `cache_entries=0` turns the cache
    off. Answers may be shared between callers: treat them as read-only (copy before changing)."""

    def __init__(self, arena: Arena, engine: RaceEngine | None = None, cache_entries: int = CACHE_ENTRIES):
        self.arena = arena
        self.db = arena.store.engine
        self.races_engine = engine or RaceEngine(arena)
        self.config = arena.config.competition
        self._cache = ReadCache(cache_entries)

    # -- the cache ---------------------------------------------------------------------------------

    @contextmanager
    def _snapshot(self) -> Iterator[Connection]:
        """One connection in one read transaction that sees one state of the database throughout: on
        SQLite (WAL) every transaction does; PostgreSQL needs REPEATABLE READ for it (its default,
        READ COMMITTED, takes a new snapshot per statement). A read-only transaction at that level
        never fails to serialise."""
        with self.db.connect() as connection:
            if connection.dialect.name == "postgresql":
                connection.execution_options(isolation_level="REPEATABLE READ")
            with connection.begin():
                yield connection

    def _read(
        self,
        name: Hashable,
        settings: Callable[[], Hashable],
        tables: Sequence[Table],
        neurons: bool,
        compute: Callable[[Connection], T],
    ) -> T:
        """`compute(connection)`, or the answer cached for the same key: `name`, `settings()` (what
        the answer depends on outside the database) and the version of `tables` (and, with `neurons`,
        of the metagraph) in the snapshot `compute` would read."""
        with self._snapshot() as connection:
            if not self._cache.max_entries:
                return compute(connection)
            before = settings()
            key = (name, before, data_version(connection, tables, neurons))
            state, found = self._cache.claim(key)
            if state == HIT:
                return found
            if state == COMPUTE:
                try:
                    answer = compute(connection)
                except BaseException as exc:
                    self._cache.fail(key, exc)
                    raise
                # settings changed while computing (a test tightening the threshold): not kept
                self._cache.fill(key, answer, keep=settings() == before)
                return answer
        return found.result()  # another thread computes this key: wait for it holding no connection

    def cache_info(self) -> CacheInfo:
        return self._cache.info()

    def clear_cache(self) -> None:
        self._cache.clear()

    # -- races -------------------------------------------------------------------------------------

    def _race(self, connection: Connection, row) -> Race:
        outcome = connection.execute(
            select(RACE_OUTCOMES.c.race).where(RACE_OUTCOMES.c.race_id == row.race_id)
        ).first()
        if outcome is not None:
            return self._named(connection, Race.model_validate(outcome.race))
        state = self.races_engine._state(connection, row).state
        race = Race(
            race_id=row.race_id,
            state=state,
            opened_at=row.opened_at,
            rotation_period=row.rotation_period,
            rotation_sha256=row.rotation_sha256,
            seed_commitment=row.seed_commitment,
            open_clusters=list(row.open_clusters),
            incumbent_before=row.incumbent_before,
        )
        return self._named(connection, race)

    def _named(self, connection: Connection, race: Race) -> Race:
        """The race with its submissions' names (racers, the crown after it, the crown before it): what a
        person reads instead of hotkeys. The crown before is the submission the newest earlier outcome
        crowned, when that hotkey held it."""
        before = None
        if race.incumbent_before is not None:
            before = connection.execute(
                select(RACE_OUTCOMES.c.winner_submission_id)
                .where(RACE_OUTCOMES.c.winner == race.incumbent_before)
                .where(RACE_OUTCOMES.c.race_id != race.race_id)
                .where(RACE_OUTCOMES.c.created_at <= race.opened_at)
                .order_by(RACE_OUTCOMES.c.id.desc())
                .limit(1)
            ).scalar()
        wanted = {r.submission_id for r in race.results} | {race.winner_submission_id, before}
        wanted.discard(None)
        if not wanted:
            return race
        names = dict(
            connection.execute(
                select(SUBMISSIONS.c.submission_id, SUBMISSIONS.c.name).where(
                    SUBMISSIONS.c.submission_id.in_(sorted(wanted))
                )
            ).all()
        )
        return race.model_copy(
            update={
                "results": [r.model_copy(update={"name": names.get(r.submission_id)}) for r in race.results],
                "winner_name": names.get(race.winner_submission_id or ""),
                "incumbent_before_name": names.get(before or ""),
            }
        )

    @staticmethod
    def _results_by_submission(connection: Connection, submission_id: str | None = None) -> dict[str, list]:
        """submission id → [(race id, its result)] over every closed race, oldest first: the one count of
        an agent's races (the leaderboard's `races`, the agent page's rows). A race counts when it has a
        result for that submission: not a cancelled race, not another submission of the same hotkey."""
        query = select(RACE_OUTCOMES.c.race_id, RACE_OUTCOMES.c.race).order_by(RACE_OUTCOMES.c.id)
        if submission_id is not None:
            query = query.join(RACE_ENTRIES, RACE_ENTRIES.c.race_id == RACE_OUTCOMES.c.race_id).where(
                RACE_ENTRIES.c.submission_id == submission_id
            )
        found: dict[str, list] = defaultdict(list)
        for row in connection.execute(query).all():
            for result in row.race.get("results") or []:
                if submission_id is None or result.get("submission_id") == submission_id:
                    found[result["submission_id"]].append((row.race_id, result))
        return found

    def races(self, limit: int = 50) -> list[Race]:
        """Newest first.

        Cached (up to `MAX_CACHED_RACES`) on `limit` and the version of `RACES_TABLES`: a race is its
        `races` row, its newest `race_events` row (its state) and its `race_outcomes` row; nothing here
        reads the clock or the configuration."""
        if limit > MAX_CACHED_RACES:
            with self._snapshot() as connection:
                return self._races(connection, limit)
        answer = self._read(
            ("races", limit), tuple, RACES_TABLES, False, lambda c: tuple(self._races(c, limit))
        )
        return list(answer)

    def _races(self, connection: Connection, limit: int) -> list[Race]:
        rows = connection.execute(select(RACES).order_by(RACES.c.id.desc()).limit(limit)).all()
        return [self._race(connection, row) for row in rows]

    def race(self, race_id: str) -> Race | None:
        with self.db.connect() as connection:
            row = connection.execute(select(RACES).where(RACES.c.race_id == race_id)).first()
            return None if row is None else self._race(connection, row)

    def weights(self) -> WeightVector | None:
        return self.races_engine.latest_weights("consensus")

    def freshness(self) -> Freshness | None:
        """The race bank's fresh problems now (what the page `/` and `GET /v1/freshness` read).

        Cached on the rotation period of now, the race bank file's identity, size and modification
        time, the frozen periods and the version of the races table: the answer is computed from the
        bank, the frozen manifests (never rewritten once frozen), the retired clusters (every row of
        `races`) and the period, and from nothing else."""
        from shoparena.arena.competition.bank import bank_path
        from shoparena.arena.competition.freshness import freshness, retired_clusters
        from shoparena.arena.competition.pools import frozen_periods, period_of

        arena_dir = self.arena.dir
        now = self.races_engine.now()
        path = bank_path(arena_dir)

        def settings() -> Hashable:
            try:
                stat = path.stat()
            except FileNotFoundError:
                return None
            bank = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
            return (period_of(self.arena.config, now)[0], bank, tuple(frozen_periods(arena_dir)))

        def compute(connection: Connection) -> Freshness | None:
            if not path.exists():
                return None
            return freshness(arena_dir, self.arena.config, now, retired_clusters(connection))

        return self._read("freshness", settings, (RACES,), False, compute)

    # -- standings ---------------------------------------------------------------------------------

    def _qualifying_results(self, connection: Connection, kind: str = "qualifying") -> dict[str, list]:
        rows = connection.execute(
            select(SUBMISSION_RESULTS)
            .join(JOBS, JOBS.c.job_id == SUBMISSION_RESULTS.c.job_id)
            .where(JOBS.c.kind.is_(None) if kind == "bank" else JOBS.c.kind == kind)  # bank jobs: NULL
            .order_by(SUBMISSION_RESULTS.c.id)
        ).all()
        per: dict[str, list] = defaultdict(list)
        for row in rows:
            per[row.submission_id].append(row)
        return per

    def _bank_results(self, connection: Connection) -> dict[str, list]:
        return self._qualifying_results(connection, "bank")

    def leaderboard(self) -> list[LeaderboardEntry]:
        """The incumbent first, then every other racer of the newest complete race by race score, then
        qualified agents that have not raced yet by qualifying score.

        Cached on the qualifying threshold and the version of `LEADERBOARD_TABLES` and the metagraph.
        The key is complete because that is everything the answer is computed from:
        - the crown and the newest complete race's results: `race_outcomes`;
        - races per hotkey: `race_entries` joined to `race_outcomes`;
        - the consensus weights: the newest `weight_vectors` row of source consensus;
        - the qualifiers (`RaceEngine.qualifiers`): qualifying results (`submission_results` joined to
          `jobs` for the job kind), validators' stakes and miners' roles and uids (`neurons`), each
          submission's hotkey, admission and time (`submissions`), `qualify_threshold` and the
          qualifying quorum (`qualifying_quorum`, `qualifying_stake_share`);
        - success rates and judge coefficients: the same results; names: `submissions`.
        None of it reads the clock: no embargo, rotation or deadline enters the standings, and the
        crown changes only with a new `race_outcomes` row. A new row in any of these tables (a
        qualifying result, a job, a submission, a race entry or outcome, weights) or any change to a
        neuron's role, stake or uid changes the key.

        An arena without a race bank (the key holds whether the bank file exists) runs no
        competition: its validators evaluate bank jobs, which no race reads. Each registered miner's
        latest submission whose bank score stands (`_bank_standings`) is listed after the
        competition's rows as a `provisional` entry: ranked by that score, with no weight and no
        crown, whatever the weight vectors say, and never a qualifier."""
        config = self.races_engine.config  # what `qualifiers` reads its threshold and quorum from
        answer = self._read(
            "leaderboard",
            lambda: (
                config.qualify_threshold,
                config.qualifying_quorum,
                config.qualifying_stake_share,
                self._bankless(),
            ),
            LEADERBOARD_TABLES,
            True,
            lambda connection: tuple(self._leaderboard(connection)),
        )
        return list(answer)

    def _leaderboard(self, connection: Connection) -> list[LeaderboardEntry]:
        """The standings as `connection` sees them (every read on it: one snapshot, one pooled
        connection)."""
        engine = self.races_engine
        crown, _ = engine.crown(connection)
        latest = engine.latest_weights("consensus", connection)
        weights = (latest or WeightVector(race_id=None, uids=[], weights=[])).as_dict()
        raced = {sid: len(results) for sid, results in self._results_by_submission(connection).items()}
        last = connection.execute(
            select(RACE_OUTCOMES.c.race)
            .where(RACE_OUTCOMES.c.state == "RACE_COMPLETE")
            .order_by(RACE_OUTCOMES.c.id.desc())
            .limit(1)
        ).first()
        results = [RaceResult.model_validate(r) for r in (last.race["results"] if last else [])]
        qualifiers = engine.qualifiers(connection)
        qualifying = self._qualifying_results(connection)
        names = dict(connection.execute(select(SUBMISSIONS.c.submission_id, SUBMISSIONS.c.name)).all())
        rows: list[tuple[tuple, dict]] = []
        seen: set[str] = set()
        for position, result in enumerate(results):
            seen.add(result.hotkey)
            rows.append(
                (
                    (result.hotkey != crown, 0, position),
                    {
                        "hotkey": result.hotkey,
                        "uid": result.uid,
                        "submission_id": result.submission_id,
                        "score": result.score,
                        "success_rate": result.success_rate,
                        "judge_coefficient": result.judge_coefficient,
                    },
                )
            )
        for qualifier in qualifiers:
            if qualifier.hotkey in seen:
                continue
            evaluated = qualifying.get(qualifier.submission_id, [])
            rates = [row.asr for row in evaluated] or [0.0]
            coefficients = [row.coefficient for row in evaluated if row.coefficient is not None]
            rows.append(
                (
                    (qualifier.hotkey != crown, 1, -qualifier.qualifying_score, qualifier.submitted_at),
                    {
                        "hotkey": qualifier.hotkey,
                        "uid": qualifier.uid,
                        "submission_id": qualifier.submission_id,
                        "score": qualifier.qualifying_score,
                        "success_rate": sorted(rates)[(len(rates) - 1) // 2],
                        "judge_coefficient": sorted(coefficients)[(len(coefficients) - 1) // 2]
                        if coefficients
                        else None,
                    },
                )
            )
        rows.sort(key=lambda item: item[0])
        entries = [
            LeaderboardEntry(
                rank=rank,
                name=names.get(values["submission_id"], ""),
                incumbent=values["hotkey"] == crown,
                races=raced.get(values["submission_id"], 0),
                weight=weights.get(values["uid"], 0.0) if values["uid"] is not None else 0.0,
                **values,
            )
            for rank, (_, values) in enumerate(rows, start=1)
        ]
        if self._bankless():
            seen |= {entry.hotkey for entry in entries}
            entries += self._provisional(connection, names, seen, start=len(entries) + 1)
        return entries

    def _bankless(self) -> bool:
        """The arena has no race bank: no competition runs, its validators evaluate bank jobs."""
        from shoparena.arena.competition.bank import bank_path

        return not bank_path(self.arena.dir).exists()

    def _provisional(
        self, connection: Connection, names: dict[str, str], seen: set[str], start: int
    ) -> list[LeaderboardEntry]:
        """Each registered miner's latest submission with a standing bank score (hotkeys in `seen`
        left out), best first: provisional entries, which earn no weight and hold no crown."""
        standings = self._bank_standings(connection)
        scores = {sid: found.score for sid, found in standings.items() if found.score is not None}
        latest = latest_admitted(self.arena, connection, list(scores))
        uids = {hotkey: uid for hotkey, (_row, uid) in latest.items()}
        results = self._bank_results(connection)
        ranked = sorted(
            (row for hotkey, (row, _uid) in latest.items() if hotkey not in seen),
            key=lambda row: (-scores[row.submission_id], row.created_at, row.submission_id),
        )
        entries = []
        for rank, row in enumerate(ranked, start=start):
            evaluated = results.get(row.submission_id, [])
            rates = sorted(result.asr for result in evaluated) or [0.0]
            coefficients = sorted(r.coefficient for r in evaluated if r.coefficient is not None)
            entries.append(
                LeaderboardEntry(
                    rank=rank,
                    hotkey=row.miner_hotkey,
                    uid=uids[row.miner_hotkey],
                    submission_id=row.submission_id,
                    name=names.get(row.submission_id, ""),
                    score=scores[row.submission_id],
                    success_rate=rates[(len(rates) - 1) // 2],
                    judge_coefficient=coefficients[(len(coefficients) - 1) // 2] if coefficients else None,
                    incumbent=False,
                    races=0,
                    weight=0.0,
                    provisional=True,
                )
            )
        return entries

    def agent(self, submission_id: str) -> AgentDetail | None:
        """One submission's standing: qualifying, races, per-bucket and per-axis means over every problem
        a validator evaluated it on, the judge's quality distribution, the embargo."""
        view = self.arena.ledger.get(submission_id)
        if view is None:
            return None
        engine = self.races_engine
        crown_hotkey, crown_submission = engine.crown()
        with self.db.connect() as connection:
            standing = engine.qualifying_standings(connection).get(submission_id)
            provisional = self._bank_score(connection, submission_id) if self._bankless() else None
            raced = self._results_by_submission(connection, submission_id).get(submission_id, [])
            problems = connection.execute(
                select(PROBLEM_RESULTS)
                .join(SUBMISSION_RESULTS, SUBMISSION_RESULTS.c.id == PROBLEM_RESULTS.c.result_id)
                .where(SUBMISSION_RESULTS.c.submission_id == submission_id)
                .order_by(PROBLEM_RESULTS.c.id)
            ).all()
            release = engine._release_of(connection, None, submission_id)
        race_scores = [
            AgentRaceResult.model_validate({**result, "race_id": race_id, "name": view.name})
            for race_id, result in raced
        ]
        buckets: dict[str, list[bool]] = defaultdict(list)
        judged: Counter[str] = Counter()
        for problem in problems:
            buckets[problem.bucket or "unknown"].append(problem.success)
            if problem.judge_quality is not None:
                judged[f"{problem.judge_quality:.1f}"] += 1
        qualifying = standing.score if standing is not None else None
        neuron = self.arena.metagraph.get(view.miner_hotkey)
        return AgentDetail(
            submission_id=submission_id,
            hotkey=view.miner_hotkey,
            uid=neuron.uid if neuron is not None else None,
            name=view.name,
            status=view.status,
            qualified=None if qualifying is None else qualifying >= self.config.qualify_threshold,
            qualifying_score=qualifying,
            qualify_threshold=self.config.qualify_threshold,
            qualifying=standing,
            provisional_score=provisional,
            race_scores=race_scores,
            by_bucket=[
                BucketScore(bucket=bucket, problems=len(hits), success_rate=sum(hits) / len(hits))
                for bucket, hits in sorted(buckets.items())
            ],
            by_axis=self._axes([problem.record_id for problem in problems]),
            judge_quality=dict(sorted(judged.items())),
            incumbent=crown_submission == submission_id and crown_hotkey == view.miner_hotkey,
            code_release_at=release,
        )

    def _bank_standings(self, connection: Connection) -> dict:
        """Submission id → its standing on the arena's problem bank (bank jobs): the stake-weighted
        median of its validators' final scores, once as many validators have reported as the job
        layer hands each bank job to (`jobs.validators_per_submission`), or validators holding
        `qualifying_stake_share` of the stake."""
        from shoparena.arena.competition.qualifying import qualifying_standings

        engine = self.races_engine
        quorum = {"qualifying_quorum": self.arena.config.jobs.validators_per_submission}
        config = engine.config.model_copy(update=quorum)
        return qualifying_standings(connection, engine._stakes(connection), config, kind="bank")

    def _bank_score(self, connection: Connection, submission_id: str) -> float | None:
        """`submission_id`'s standing score on the arena's problem bank, if any."""
        found = self._bank_standings(connection).get(submission_id)
        return found.score if found is not None else None

    def _axes(self, record_ids: list[str | None]) -> dict[str, float]:
        """Mean per-axis ratio over the records that ask something of each axis."""
        values: dict[str, list[float]] = defaultdict(list)
        for record_id in record_ids:
            record = self.arena.store.get(record_id) if record_id else None
            if record is None:
                continue
            for axis in AXES:
                ratio = getattr(record.score, axis)
                if ratio is not None:
                    values[axis].append(ratio)
        return {axis: sum(v) / len(v) for axis, v in values.items() if v}

    def code_release_at(self, submission_id: str) -> datetime | None:
        """When a crowned submission's code is public (None: never crowned, never released)."""
        with self.db.connect() as connection:
            return self.races_engine._release_of(connection, None, submission_id)


def recompute_draw(arena: Arena, race_id: str):
    """The race's problems recomputed from its revealed seed and its frozen rotation manifest, with the
    race bank as it was then and the clusters the races before it drew (retired): (race, draw,
    matches). Refused while the seed is still secret."""
    from shoparena.arena.competition.bank import read_bank
    from shoparena.arena.competition.engine import RaceError
    from shoparena.arena.competition.freshness import retired_clusters
    from shoparena.arena.competition.pools import draw_race_problems, manifest_path, read_manifest

    race = CompetitionView(arena).race(race_id)
    if race is None:
        raise RaceError(f"no race {race_id} in this arena (`shoparena arena race status --dir ARENA`)")
    if race.seed is None:
        raise RaceError(
            f"race {race_id} is {race.state}: its seed is revealed when it closes; until then only the "
            f"commitment {race.seed_commitment} is public"
        )
    if rules.seed_commitment(race.seed) != race.seed_commitment:
        raise RaceError(f"race {race_id}: the revealed seed does not hash to the published commitment")
    bank = read_bank(arena.dir)
    manifest = read_manifest(manifest_path(arena.dir, race.rotation_period))
    if manifest.sha256 != race.rotation_sha256:
        raise RaceError(
            f"race {race_id} was drawn from rotation {race.rotation_sha256[:12]}…, but the frozen manifest of "
            f"period {race.rotation_period} on disk is {manifest.sha256[:12]}…: the rotation file was replaced"
        )
    with arena.store.engine.connect() as connection:
        retired = retired_clusters(connection, before_race=race_id)  # public: every earlier race is closed
    draw = draw_race_problems(
        manifest, bank.as_of(manifest.bank_sha256), race.seed, len(race.problem_ids or []) or 1, retired
    )
    return race, draw, draw.problem_ids == race.problem_ids and draw.race_clusters == race.race_clusters
