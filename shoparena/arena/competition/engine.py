"""The race engine (SPEC §6): QUALIFYING_OPEN → RACE_RUNNING → RACE_COMPLETE | CANCELLED, one race per
`race_cadence_s`, driven by an injectable clock so the season simulator can play days in seconds.

- `open_race`: a fresh seed is stored (secret until close), its commitment published, and the race's
  problems drawn by it from the held-out partition of the rotation in force.
- `start_race`: every hotkey's latest qualified submission (the incumbent's too) gets one race job on
  the same problems; every registered validator evaluates every racer and posts its own result.
- `close_race`: per racer and validator a `ValidatorScore`; the race score is the stake-weighted median
  of them; ranking, cancellation, promotion with hysteresis, the code embargo, the seed revealed; each
  validator's own weight vector, their Yuma consensus, stored and pushed to the chain adapter.
- `tick`: whatever is due now (what `arena serve` and the simulator call).

Every state change is a new row (races, race_events, race_entries, race_outcomes, weight_vectors).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, insert, select

from shoparena.arena.arena import Arena
from shoparena.arena.competition import rules
from shoparena.arena.competition.job_source import CompetitionJobSource
from shoparena.arena.competition.models import Race, RaceResult, ValidatorScore, WeightVector
from shoparena.arena.db import writing
from shoparena.arena.errors import ArenaError
from shoparena.arena.jobs.board import JobBoard
from shoparena.arena.models import QualifyingStanding
from shoparena.arena.tables import PROBLEM_RESULTS as PROBLEMS
from shoparena.arena.tables import RACE_ENTRIES as ENTRIES
from shoparena.arena.tables import RACE_EVENTS as EVENTS
from shoparena.arena.tables import RACE_OUTCOMES as OUTCOMES
from shoparena.arena.tables import RACES, SUBMISSIONS
from shoparena.arena.tables import SUBMISSION_RESULTS as RESULTS
from shoparena.arena.tables import WEIGHT_VECTORS as VECTORS

log = logging.getLogger("shoparena.race")
CLOSED = ("RACE_COMPLETE", "CANCELLED")
MAX_TICK_STEPS = 4


def closed_race(race: Any, now: datetime, **outcome: Any) -> Race:
    """The served record of a race row as it closes: the row's frozen draw plus the close's outcome."""
    return Race(
        race_id=race.race_id,
        opened_at=race.opened_at,
        closed_at=now,
        rotation_period=race.rotation_period,
        rotation_sha256=race.rotation_sha256,
        seed_commitment=race.seed_commitment,
        seed=race.seed,
        problem_ids=list(race.problem_ids),
        race_clusters=list(race.race_clusters),
        open_clusters=list(race.open_clusters),
        incumbent_before=race.incumbent_before,
        **outcome,
    )


class RaceError(ArenaError):
    """A race step that cannot happen now (wrong state, nothing to draw from): says what to do."""


class RacePostponed(RaceError):
    """Too few fresh held-out problems for the next race (issue 22): it waits, never racing stale ones;
    the message says how many are left and how to add more."""


@dataclass(frozen=True)
class Qualifier:
    hotkey: str
    uid: int | None
    submission_id: str
    submitted_at: datetime
    qualifying_score: float


@dataclass(frozen=True)
class RaceState:
    """A race's row and its newest state."""

    row: Any
    state: str

    @property
    def race_id(self) -> str:
        return self.row.race_id


def _as_datetime(value: datetime | float) -> datetime:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("the engine's clock must give timezone-aware datetimes")
        return value.astimezone(UTC)
    return datetime.fromtimestamp(value, UTC)


def _median_or_none(values: list[float | None], stakes: list[float]) -> float | None:
    pairs = [(value, stake) for value, stake in zip(values, stakes, strict=True) if value is not None]
    if not pairs:
        return None
    return rules.stake_weighted_median([v for v, _ in pairs], [s for _, s in pairs])


def latest_admitted(
    arena: Arena, connection: Connection, submission_ids: list[str]
) -> dict[str, tuple[Any, int]]:
    """Of `submission_ids`, each registered miner's newest admitted one: hotkey → (the submission's
    id, hotkey and creation row, the miner's uid). Qualifying and the bank-less leaderboard both rank
    a miner by its latest submission only, so a resubmission replaces the one before."""
    miners = {n.hotkey: n.uid for n in arena.metagraph.all(connection) if n.role == "miner"}
    rows = connection.execute(
        select(SUBMISSIONS.c.submission_id, SUBMISSIONS.c.miner_hotkey, SUBMISSIONS.c.created_at)
        .where(SUBMISSIONS.c.submission_id.in_(submission_ids), SUBMISSIONS.c.admitted.is_(True))
        .order_by(SUBMISSIONS.c.id)
    ).all()
    return {row.miner_hotkey: (row, miners[row.miner_hotkey]) for row in rows if row.miner_hotkey in miners}


class RaceEngine:
    """Races over one opened arena. `clock()` gives the time (a datetime or Unix seconds); every method
    takes `now` too, which wins over the clock."""

    def __init__(
        self,
        arena: Arena,
        clock: Callable[[], datetime | float] = time.time,
        chain: Any | None = None,
        board: JobBoard | None = None,
    ):
        self.arena = arena
        self.engine = arena.store.engine
        self.config = arena.config.competition
        self.clock = clock
        self.board = board or JobBoard(
            arena,
            clock=lambda: _as_datetime(self.clock()).timestamp(),
            source=CompetitionJobSource(arena.dir, arena.config, arena.store.engine),
        )
        self._chain = chain

    def now(self, now: datetime | None = None) -> datetime:
        return _as_datetime(now if now is not None else self.clock())

    @property
    def chain(self):
        """The chain adapter weights are pushed to (the local, append-only ledger by default)."""
        if self._chain is None:
            from shoparena.arena.competition.chain import LocalChain

            self._chain = LocalChain(self.arena.dir, self.arena.metagraph)
        return self._chain

    # -- reading -----------------------------------------------------------------------------------

    def _state(self, connection: Connection, row) -> RaceState:
        state = connection.execute(
            select(EVENTS.c.state)
            .where(EVENTS.c.race_id == row.race_id)
            .order_by(EVENTS.c.id.desc())
            .limit(1)
        ).scalar_one()
        return RaceState(row=row, state=state)

    def current(self, connection: Connection | None = None) -> RaceState | None:
        """The newest race and its state (None before the first race)."""
        if connection is None:
            with self.engine.connect() as fresh:
                return self.current(fresh)
        row = connection.execute(select(RACES).order_by(RACES.c.id.desc()).limit(1)).first()
        return None if row is None else self._state(connection, row)

    def get(self, race_id: str) -> RaceState | None:
        with self.engine.connect() as connection:
            row = connection.execute(select(RACES).where(RACES.c.race_id == race_id)).first()
            return None if row is None else self._state(connection, row)

    def crown(self, connection: Connection | None = None) -> tuple[str | None, str | None]:
        """(hotkey, submission id) holding the crown: the winner of the newest complete race."""
        if connection is None:
            with self.engine.connect() as fresh:
                return self.crown(fresh)
        row = connection.execute(
            select(OUTCOMES.c.winner, OUTCOMES.c.winner_submission_id)
            .where(OUTCOMES.c.state == "RACE_COMPLETE")
            .order_by(OUTCOMES.c.id.desc())
            .limit(1)
        ).first()
        return (row.winner, row.winner_submission_id) if row is not None else (None, None)

    def _stakes(self, connection: Connection | None = None) -> dict[str, float]:
        return {n.hotkey: n.stake for n in self.arena.metagraph.all(connection) if n.role == "validator"}

    def _uids(self, connection: Connection | None = None) -> dict[str, int | None]:
        return {n.hotkey: n.uid for n in self.arena.metagraph.all(connection)}

    def qualifying_scores(self, connection: Connection) -> dict[str, float]:
        """submission id → its qualifying score, for the submissions whose score stands: the
        stake-weighted median of its validators' final scores on its qualifying job (success rate ×
        judge coefficient, strict), once a quorum of validators has reported (`qualifying`)."""
        standings = self.qualifying_standings(connection)
        return {sid: found.score for sid, found in standings.items() if found.score is not None}

    def qualifying_standings(self, connection: Connection) -> dict[str, QualifyingStanding]:
        """submission id → its qualifying score (or None until the quorum) and the reports behind it."""
        from shoparena.arena.competition.qualifying import qualifying_standings

        return qualifying_standings(connection, self._stakes(connection), self.config)

    def qualifiers(self, connection: Connection | None = None) -> list[Qualifier]:
        """Each registered miner's latest qualified submission (score ≥ `qualify_threshold`)."""
        if connection is None:
            with self.engine.connect() as fresh:
                return self.qualifiers(fresh)
        scores = self.qualifying_scores(connection)
        qualified = [sid for sid, score in scores.items() if score >= self.config.qualify_threshold]
        latest = [
            Qualifier(
                hotkey=row.miner_hotkey,
                uid=uid,
                submission_id=row.submission_id,
                submitted_at=row.created_at,
                qualifying_score=scores[row.submission_id],
            )
            for row, uid in latest_admitted(self.arena, connection, qualified).values()
        ]
        return sorted(latest, key=lambda q: (q.submitted_at, q.submission_id))

    # -- the state machine -------------------------------------------------------------------------

    def _event(self, connection: Connection, race_id: str, state: str, now: datetime, detail: str) -> None:
        connection.execute(insert(EVENTS).values(race_id=race_id, state=state, detail=detail, created_at=now))

    def open_race(self, now: datetime | None = None, seed: str | None = None) -> RaceState:
        """Open the next race: store a fresh seed (secret until close), publish its commitment, draw the
        problems from the fresh held-out problems of the rotation in force now — never from a leak
        cluster an earlier race drew (`RacePostponed` when fewer than `race_problems` are left)."""
        from shoparena.arena.competition.bank import read_bank
        from shoparena.arena.competition.freshness import postponement, retired_clusters
        from shoparena.arena.competition.pools import (
            draw_race_problems,
            fresh_heldout,
            period_of,
            rotation_at,
        )

        now = self.now(now)
        seed = seed if seed is not None else rules.new_seed()
        with self.engine.connect() as connection:
            current = self.current(connection)
            if current is not None and current.state not in CLOSED:
                raise RaceError(f"race {current.race_id} is {current.state}; close it before opening another")
            retired = retired_clusters(connection)
        manifest = rotation_at(self.arena.dir, self.arena.config, now, retired=retired)
        bank = read_bank(self.arena.dir)
        fresh = len(fresh_heldout(manifest, bank, retired))
        if fresh < self.config.race_problems:
            ends = period_of(self.arena.config, now)[2]
            raise RacePostponed(postponement(fresh, self.config.race_problems, manifest.period, True, ends))
        draw = draw_race_problems(manifest, bank, seed, self.config.race_problems, retired)
        cadence = timedelta(seconds=self.config.race_cadence_s)
        with writing(self.engine) as connection:
            current = self.current(connection)
            if current is not None and current.state not in CLOSED:
                raise RaceError(f"race {current.race_id} is {current.state}; close it before opening another")
            sequence = connection.execute(select(RACES.c.id).order_by(RACES.c.id.desc()).limit(1)).scalar()
            race_id = f"race-{(sequence or 0) + 1:05d}"
            incumbent, _ = self.crown(connection)
            connection.execute(
                insert(RACES).values(
                    race_id=race_id,
                    opened_at=now,
                    starts_at=now + cadence / 2,
                    deadline_at=now + cadence,
                    rotation_period=manifest.period,
                    rotation_sha256=manifest.sha256,
                    rotation=manifest.model_dump(mode="json", by_alias=True),
                    seed=seed,
                    seed_commitment=rules.seed_commitment(seed),
                    problem_ids=draw.problem_ids,
                    race_clusters=draw.race_clusters,
                    open_clusters=list(manifest.open_clusters),
                    incumbent_before=incumbent,
                    bank_sha256=bank.sha256,
                )
            )
            self._event(
                connection,
                race_id,
                "QUALIFYING_OPEN",
                now,
                f"{len(draw.problem_ids)} problems drawn from period {manifest.period}'s {fresh} fresh held-out "
                "problems",
            )
            row = connection.execute(select(RACES).where(RACES.c.race_id == race_id)).one()
        return RaceState(row=row, state="QUALIFYING_OPEN")

    def _expect(self, connection: Connection, state: str) -> RaceState:
        current = self.current(connection)
        if current is None:
            raise RaceError("no race yet; open one first (`shoparena arena race open`)")
        if current.state != state:
            raise RaceError(f"race {current.race_id} is {current.state}, not {state}")
        return current

    def start_race(self, now: datetime | None = None) -> RaceState:
        """Fix the racers (each hotkey's latest qualified submission) and make their race jobs: the same
        problems for everyone, evaluated by every registered validator."""
        now = self.now(now)
        fingerprint = self.board.specs.inputs.fingerprint()
        with writing(self.engine) as connection:
            current = self._expect(connection, "QUALIFYING_OPEN")
            race = current.row
            racers = self.qualifiers(connection)
            for racer in racers:
                spec = self.board.specs.spec(
                    "race", racer.submission_id, list(race.problem_ids), fingerprint, race.race_id
                )
                self.board.specs.insert_job(connection, spec, racer.submission_id, fingerprint, now)
                connection.execute(
                    insert(ENTRIES).values(
                        race_id=race.race_id,
                        hotkey=racer.hotkey,
                        submission_id=racer.submission_id,
                        job_id=spec.job_id,
                        qualifying_score=racer.qualifying_score,
                        submitted_at=racer.submitted_at,
                        created_at=now,
                    )
                )
            self._event(connection, race.race_id, "RACE_RUNNING", now, f"{len(racers)} racer(s)")
        return RaceState(row=race, state="RACE_RUNNING")

    def entries(self, connection: Connection, race_id: str):
        return connection.execute(
            select(ENTRIES).where(ENTRIES.c.race_id == race_id).order_by(ENTRIES.c.id)
        ).all()

    def complete(self, race_id: str) -> bool:
        """Every racer has a result from every registered validator."""
        validators = set(self._stakes())
        with self.engine.connect() as connection:
            for entry in self.entries(connection, race_id):
                posted = set(
                    connection.execute(
                        select(RESULTS.c.validator_hotkey).where(RESULTS.c.job_id == entry.job_id)
                    ).scalars()
                )
                if not validators <= posted:
                    return False
        return bool(validators)

    def _richness(self, record_ids: list[str | None]) -> float | None:
        """Fraction of the tool calls whose verified origin is `llm`, over a result's records."""
        llm = total = 0
        for record_id in record_ids:
            record = self.arena.store.get(record_id) if record_id else None
            if record is None:
                continue
            counted = [call for call in record.calls if call.counted]
            total += len(counted)
            llm += sum(call.origin == "llm" for call in counted)
        return llm / total if total else None

    def validator_scores(self, connection: Connection, job_id: str) -> list[ValidatorScore]:
        """One `ValidatorScore` per validator that posted a result for the job, in posting order."""
        scores = []
        results = connection.execute(
            select(RESULTS).where(RESULTS.c.job_id == job_id).order_by(RESULTS.c.id)
        ).all()
        for result in results:
            problems = connection.execute(select(PROBLEMS).where(PROBLEMS.c.result_id == result.id)).all()
            # a crashed or timed-out problem is not judged: it is no judge failure (else a miner
            # crashing on purpose could push a race past max_judge_failure_rate and cancel it)
            judgeable = [problem for problem in problems if problem.error is None]
            failures = sum(problem.judge_quality is None for problem in judgeable)
            richness = (
                self._richness([problem.record_id for problem in problems])
                if self.config.richness_share
                else None
            )
            if richness is None and self.config.richness_share:
                richness = 0.0
            scores.append(
                ValidatorScore(
                    validator_hotkey=result.validator_hotkey,
                    score=rules.final_score(
                        result.asr, result.coefficient, richness, self.config.richness_share
                    ),
                    success_rate=result.asr,
                    judge_coefficient=result.coefficient,
                    richness=richness,
                    judge_failures=failures,
                    judge_calls=len(judgeable),
                )
            )
        return scores

    def close_race(self, now: datetime | None = None) -> Race:
        """Aggregate, rank, cancel or promote, reveal the seed, compute and store the weights, push them.

        An error while closing (anything but a wrong state) CANCELS the race with the error as its
        reason, the crown unchanged, instead of leaving it RUNNING: otherwise every later tick would
        fail the same way and no race would ever open again (issue 23)."""
        now = self.now(now)
        try:
            return self._close(now)
        except RaceError:
            raise
        except Exception as exc:
            log.exception("closing the race failed; it is cancelled")
            return self._cancel_failed_close(now, f"closing the race failed: {type(exc).__name__}: {exc}")

    def _cancel_failed_close(self, now: datetime, reason: str) -> Race:
        with writing(self.engine) as connection:
            race = self._expect(connection, "RACE_RUNNING").row
            winner, winner_submission = self.crown(connection)
            served = closed_race(
                race,
                now,
                state="CANCELLED",
                winner=winner,
                winner_submission_id=winner_submission,
                code_release_at=self._release_of(connection, winner, winner_submission),
                cancel_reason=reason,
            )
            connection.execute(
                insert(OUTCOMES).values(
                    race_id=race.race_id,
                    state="CANCELLED",
                    winner=winner,
                    winner_submission_id=winner_submission,
                    promoted=False,
                    code_release_at=served.code_release_at,
                    race=served.model_dump(mode="json"),
                    created_at=now,
                )
            )
            self._event(connection, race.race_id, "CANCELLED", now, f"cancelled: {reason}")
        return served

    def _close(self, now: datetime) -> Race:
        stakes = self._stakes()
        uids = self._uids()
        with writing(self.engine) as connection:
            current = self._expect(connection, "RACE_RUNNING")
            race = current.row
            results: list[RaceResult] = []
            reported: set[str] = set()
            failures = calls = 0
            for entry in self.entries(connection, race.race_id):
                by_validator = self.validator_scores(connection, entry.job_id)
                if not by_validator:
                    continue
                weights = [stakes.get(v.validator_hotkey, 0.0) for v in by_validator]
                reported.update(v.validator_hotkey for v in by_validator)
                failures += sum(v.judge_failures for v in by_validator)
                calls += sum(v.judge_calls for v in by_validator)
                results.append(
                    RaceResult(
                        hotkey=entry.hotkey,
                        uid=uids.get(entry.hotkey),
                        submission_id=entry.submission_id,
                        score=rules.stake_weighted_median([v.score for v in by_validator], weights),
                        success_rate=rules.stake_weighted_median(
                            [v.success_rate for v in by_validator], weights
                        ),
                        judge_coefficient=_median_or_none(
                            [v.judge_coefficient for v in by_validator], weights
                        ),
                        richness=_median_or_none([v.richness for v in by_validator], weights),
                        submitted_at=entry.submitted_at,
                        by_validator=by_validator,
                    )
                )
            profile = self.config.weights
            ranked = rules.rank(results, profile)
            racers = len(self.entries(connection, race.race_id))
            reason = (
                "nobody qualified for the race"
                if racers == 0
                else rules.cancellation(
                    len(reported),
                    self.config.min_validators,
                    failures,
                    calls,
                    self.config.max_judge_failure_rate,
                )
            )
            crown_hotkey, crown_submission = self.crown(connection)
            release_before = self._release_of(connection, crown_hotkey, crown_submission)
            if reason is not None:
                state = "CANCELLED"
                winner, winner_submission, promoted, release = (
                    crown_hotkey,
                    crown_submission,
                    False,
                    release_before,
                )
                detail = f"cancelled: {reason}"
            else:
                state = "RACE_COMPLETE"
                promotion = rules.promotion(
                    ranked, race.incumbent_before, self._margin(connection, race.incumbent_before), profile
                )
                winner, winner_submission, promoted = (
                    promotion.winner,
                    promotion.winner_submission_id,
                    promotion.promoted,
                )
                release = (
                    rules.code_release_at(now, self.config.time_zone, self.config.release_hour)
                    if promoted
                    else release_before
                )
                detail = promotion.reason
            served = closed_race(
                race,
                now,
                state=state,
                results=ranked,
                winner=winner,
                winner_submission_id=winner_submission,
                promoted=promoted,
                code_release_at=release,
                cancel_reason=reason,
            )
            connection.execute(
                insert(OUTCOMES).values(
                    race_id=race.race_id,
                    state=state,
                    winner=winner,
                    winner_submission_id=winner_submission,
                    promoted=promoted,
                    code_release_at=release,
                    race=served.model_dump(mode="json"),
                    created_at=now,
                )
            )
            self._event(connection, race.race_id, state, now, detail)
            consensus = None
            if state == "RACE_COMPLETE":
                vectors = self.validator_vectors(
                    ranked, uids.get(winner) if winner else None, race.race_id, crowned_hotkey=winner
                )
                consensus = self._consensus(vectors, stakes, race.race_id)
                for vector in [*vectors, consensus]:
                    self._store_vector(connection, vector, now)
        if consensus is not None:
            self.push(consensus, now)
        return served

    def _release_of(
        self, connection: Connection, hotkey: str | None, submission_id: str | None
    ) -> datetime | None:
        """When the crowned submission's code is released (set by the race that promoted it)."""
        if submission_id is None:
            return None
        row = connection.execute(
            select(OUTCOMES.c.code_release_at)
            .where(OUTCOMES.c.winner_submission_id == submission_id, OUTCOMES.c.promoted.is_(True))
            .order_by(OUTCOMES.c.id)
            .limit(1)
        ).first()
        return row.code_release_at if row is not None else None

    # -- weights -----------------------------------------------------------------------------------

    def _margin(self, connection: Connection, incumbent: str | None) -> float:
        """The lead a challenger needs: `margin`, or with `hysteresis: decaying` the margin halved every
        `margin_half_life_races` races the incumbent has held the crown (`rules.challenge_margin`)."""
        if self.config.hysteresis == "fixed" or incumbent is None:
            return self.config.margin
        winners = connection.execute(
            select(OUTCOMES.c.winner)
            .where(OUTCOMES.c.state == "RACE_COMPLETE")
            .order_by(OUTCOMES.c.id.desc())
        ).scalars()
        held = 0
        for winner in winners:
            if winner != incumbent:
                break
            held += 1
        return rules.challenge_margin(self.config.margin, held, self.config.margin_half_life_races)

    def validator_vectors(
        self,
        ranked: list[RaceResult],
        crowned_uid: int | None,
        race_id: str,
        crowned_hotkey: str | None = None,
    ) -> list[WeightVector]:
        """Each reporting validator's own vector: `race_weights` over ITS scores of the racers."""
        from shoparena.arena.competition.weights import race_weights

        per: dict[str, list[RaceResult]] = {}
        for result in ranked:
            for score in result.by_validator:
                mine = result.model_copy(
                    update={
                        "score": score.score,
                        "success_rate": score.success_rate,
                        "judge_coefficient": score.judge_coefficient,
                        "richness": score.richness,
                        "by_validator": [score],
                    }
                )
                per.setdefault(score.validator_hotkey, []).append(mine)
        vectors = []
        for hotkey in sorted(per):
            vector = race_weights(
                rules.rank(per[hotkey], self.config.weights),
                crowned_uid,
                self.config,
                race_id,
                crowned_hotkey,
            )
            vectors.append(vector.model_copy(update={"source": "validator", "validator_hotkey": hotkey}))
        return vectors

    def _consensus(self, vectors: list[WeightVector], stakes: dict[str, float], race_id: str) -> WeightVector:
        from shoparena.arena.competition.consensus import yuma_consensus

        return yuma_consensus(
            vectors,
            stakes,
            self.config.kappa,
            self.config.burn_uid,
            race_id=race_id,
            mode=self.config.consensus,
        )

    @staticmethod
    def _store_vector(connection: Connection, vector: WeightVector, now: datetime) -> None:
        connection.execute(
            insert(VECTORS).values(
                race_id=vector.race_id,
                source=vector.source,
                validator_hotkey=vector.validator_hotkey,
                uids=vector.uids,
                weights=vector.weights,
                created_at=now,
            )
        )

    def latest_weights(
        self, source: str = "consensus", connection: Connection | None = None
    ) -> WeightVector | None:
        if connection is None:
            with self.engine.connect() as fresh:
                return self.latest_weights(source, fresh)
        row = connection.execute(
            select(VECTORS).where(VECTORS.c.source == source).order_by(VECTORS.c.id.desc()).limit(1)
        ).first()
        if row is None:
            return None
        return WeightVector(
            race_id=row.race_id,
            uids=list(row.uids),
            weights=list(row.weights),
            source=row.source,
            validator_hotkey=row.validator_hotkey,
        )

    def push(self, vector: WeightVector, now: datetime | None = None) -> bool:
        """Set the weights on the chain adapter; a failure is logged and recorded (`cadence`: retried
        with backoff, shown by `arena status`) rather than undoing a closed race."""
        from shoparena.arena.competition.cadence import record_push

        now = self.now(now)
        interval = self.config.weights_interval_s
        try:
            self.chain.set_weights(vector)
        except Exception as exc:
            log.warning("setting the weights of %s on the chain failed: %s", vector.race_id, exc)
            record_push(self.arena.dir, vector.race_id, now, interval, f"{type(exc).__name__}: {exc}")
            return False
        record_push(self.arena.dir, vector.race_id, now, interval)
        return True

    def repush(self, now: datetime | None = None) -> str | None:
        """Set the last complete race's consensus weights again when the cadence says so (every
        `weights_interval_s`, or a failed push's retry); what it did, or None."""
        from shoparena.arena.competition.cadence import push_due

        now = self.now(now)
        if not push_due(self.arena.dir, now, self.config.weights_interval_s):
            return None
        vector = self.latest_weights()
        if vector is None:
            return None
        ok = self.push(vector, now)
        return f"{'set' if ok else 'failed to set'} the weights of {vector.race_id} again"

    # -- what is due -------------------------------------------------------------------------------

    def tick(self, now: datetime | None = None) -> list[str]:
        """Advance whatever is due at `now`: open the next race once the cadence allows, start it when its
        qualifying window ends, close it when every result is in or its deadline passed. Returns what
        it did (e.g. ["opened race-00001"]); a race that cannot open for want of fresh problems is
        postponed (the reason is what it did) and tried again at the next tick."""
        now = self.now(now)
        done: list[str] = []
        for _ in range(MAX_TICK_STEPS):
            current = self.current()
            if current is None or current.state in CLOSED:
                cadence = timedelta(seconds=self.config.race_cadence_s)
                if current is not None and now < current.row.opened_at + cadence:
                    break
                try:
                    opened = self.open_race(now)
                except RacePostponed as exc:
                    log.info("%s", exc)
                    done.append(str(exc))
                    break
                done.append(f"opened {opened.race_id}")
            elif current.state == "QUALIFYING_OPEN":
                if now < current.row.starts_at:
                    break
                self.start_race(now)
                done.append(f"started {current.race_id}")
            else:
                if now < current.row.deadline_at and not self.complete(current.race_id):
                    break
                closed = self.close_race(now)
                done.append(f"closed {closed.race_id} ({closed.state})")
        return done
