"""Submissions admitted before the arena had a race bank (the job layer's backlog): once the competition
is on, a claim gives each one that is still its hotkey's current submission one qualifying job, on the
open partition of the competition's first rotation period, queued behind what was already waiting.

A real arena (SQLite, and PostgreSQL for the main path) made without a race bank; the race bank arrives
later (the file `arena bank add` writes); submissions go through the ledger, jobs through the real job
board, results are real canonical records (re-cast from one real run of the benign miner over both
banks)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlalchemy import select

from shoparena.admission import check_submission
from shoparena.arena.competition.bank import read_bank
from shoparena.arena.competition.engine import RaceEngine
from shoparena.arena.competition.pools import manifest_path, qualifying_problems, read_manifest
from shoparena.arena.ledger import CooldownActive, CooldownPolicy
from shoparena.arena.tables import JOBS
from tests.arena.arena_helpers import Key, make_arena
from tests.arena.competition.race_helpers import RACE_BANK, Racing, by_miner
from tests.arena.job_helpers import EVALUATION, NO_COOLDOWN

CADENCE_S = 3600
"""One rotation period an hour, so a test can put a submission in a period before the race bank's."""
LEASE_S = 60
FULL_COOLDOWN_S = CooldownPolicy().full_s


class Backlog(Racing):
    """A `Racing` arena whose race bank the operator adds only when the test says so."""

    def __init__(self, arena, miners, validators, records, race_bank: Path):
        super().__init__(arena, miners, validators, records)
        self.race_bank = race_bank

    def add_race_bank(self) -> None:
        shutil.copyfile(self.race_bank, Path(self.arena.dir) / RACE_BANK)

    def submit_with(self, miner: Key, tweak: str = "", cooldown_s: int = 0, code: str | None = None) -> str:
        """A submission through the ledger with its admission verdict and the cooldown it starts."""
        body = (code if code is not None else self.code + tweak).encode()
        sha = self.arena.code.put(body)
        self.clock.advance(seconds=1)
        return self.arena.ledger.record(
            hotkey=miner.hotkey,
            name="agent.py",
            code_sha256=sha,
            code_size=len(body),
            violations=check_submission(body),
            cooldown_s=cooldown_s,
            now=self.clock.at,
        )

    def statuses(self, submission_id: str) -> list[str]:
        return [event.status for event in self.arena.ledger.get(submission_id).events]

    def jobs(self, submission_id: str, kind: str | None = "qualifying") -> list:
        with self.arena.store.engine.connect() as connection:
            rows = connection.execute(
                select(JOBS).where(JOBS.c.submission_id == submission_id).order_by(JOBS.c.id)
            ).all()
        return [row for row in rows if row.kind == kind]

    def frozen_periods(self) -> list[int]:
        folder = Path(self.arena.dir) / "rotations"
        return sorted(int(path.stem.removeprefix("period-")) for path in folder.glob("period-*.json"))

    def manifest(self, period: int):
        return read_manifest(manifest_path(Path(self.arena.dir), period), read_bank(Path(self.arena.dir)))

    def engine(self) -> RaceEngine:
        return RaceEngine(self.arena, clock=self.clock, board=self.board)

    def lapse(self) -> None:
        """Let every open lease run out (the next claim sweeps them)."""
        self.clock.advance(seconds=LEASE_S + 1)


def make_backlog(tmp_path, catalog, job_bank, race_bank, records, store=None, **competition) -> Backlog:
    """Three miners, three validators (equal stake), no race bank yet; qualifying on 2 open problems
    (threshold 0), one rotation period an hour."""
    miners, validators = [Key() for _ in range(3)], [Key() for _ in range(3)]
    arena = make_arena(
        tmp_path / "arena",
        catalog,
        job_bank,
        {},
        store=store,
        evaluation=EVALUATION,
        jobs={"lease_s": LEASE_S, "max_lapses": 2},
        cooldown=NO_COOLDOWN,
        competition={
            "race_problems": 2,
            "qualifying_problems": 2,
            "qualify_threshold": 0.0,
            "race_cadence_s": 3600,
            "rotation_cadence_s": CADENCE_S,
            "qualifying_quorum": 1,  # one validator a qualifying job: the quorum is test_qualifying_quorum's
            **competition,
        },
    )
    for uid, key in enumerate(miners, start=1):
        arena.metagraph.register(key.hotkey, "miner", 0.0, uid=uid)
    for uid, key in enumerate(validators, start=100):
        arena.metagraph.register(key.hotkey, "validator", 10.0, uid=uid)
    return Backlog(arena, miners, validators, records, race_bank)


@pytest.fixture
def both_records(raw_records, race_records):
    """The benign miner's records over the arena's bank and over the race bank."""
    records = [*raw_records, *race_records]
    assert len({record.problem.problem_id for record in records}) == len(records)
    return records


@pytest.fixture
def backlog(tmp_path, small_catalog_dir, job_bank, race_bank, both_records):
    made = make_backlog(tmp_path, small_catalog_dir, job_bank, race_bank, both_records)
    yield made
    made.arena.close()


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_a_submission_scored_before_the_race_bank_gets_a_qualifying_job_and_races(
    request, dialect, tmp_path, small_catalog_dir, job_bank, race_bank, both_records
):
    store = request.getfixturevalue("pg_store_url") if dialect == "postgresql" else None
    backlog = make_backlog(tmp_path, small_catalog_dir, job_bank, race_bank, both_records, store=store)
    try:
        early = backlog.submit(backlog.miners[0])
        assert backlog.drain() == 1  # the arena's whole bank: the only job there is without a race bank
        assert len(backlog.jobs(early, kind=None)) == 1
        assert backlog.statuses(early) == ["queued", "running", "scored"]

        backlog.add_race_bank()  # the bug: nothing ever gave `early` a qualifying job from here on
        assert backlog.drain() == 1
        (job,) = backlog.jobs(early)
        events = backlog.arena.ledger.get(early).events
        assert [e.status for e in events] == ["queued", "running", "scored", "queued", "running", "scored"]
        assert events[3].job_id is None and "race bank" in events[3].detail
        assert events[5].job_id == job.job_id
        assert backlog.drain() == 0  # one qualifying run, never a second

        engine = backlog.engine()
        assert [q.submission_id for q in engine.qualifiers()] == [early]
        engine.open_race()
        engine.start_race()
        assert backlog.drain() == len(backlog.validators)  # it races like any qualified submission
    finally:
        backlog.arena.close()


def test_it_qualifies_on_the_competitions_first_period_never_its_own(
    tmp_path, small_catalog_dir, job_bank, race_bank, both_records
):
    """The period its submission time fell in had no race bank: a rotation frozen for it now would be a
    partition of today's bank nobody under the competition can get, whose open clusters may be held out
    — raced — now. It qualifies on exactly what a submission made when the competition started does, and
    every validator and every retry gets the same job, whichever period they claim in."""
    backlog = make_backlog(
        tmp_path, small_catalog_dir, job_bank, race_bank, both_records, qualifying_problems=None
    )
    a, b, c = backlog.miners
    v0, v1, v2 = backlog.validators
    try:
        early = backlog.submit(a)  # period 0
        assert backlog.drain() == 1
        backlog.clock.advance(seconds=2 * CADENCE_S)  # period 2: the operator adds the race bank
        backlog.add_race_bank()
        assert backlog.frozen_periods() == []

        first = backlog.board.claim(v0.hotkey)
        assert first.submission_id == early and first.kind == "qualifying"
        assert backlog.frozen_periods() == [2]  # never period 0
        start = backlog.manifest(2)
        ids = [problem["problem_id"] for problem in first.problems]
        assert ids == start.open_problem_ids and not set(ids) & set(start.heldout_problem_ids)

        fresh = backlog.submit(b)  # made under the competition, in the same period
        offer = backlog.evaluate(v1)
        assert offer.submission_id == fresh and [p["problem_id"] for p in offer.problems] == ids

        # its lease runs out in the next period; a retry still gets the same job
        backlog.clock.advance(seconds=CADENCE_S)
        retry = backlog.board.claim(v2.hotkey)
        assert (retry.submission_id, retry.job_id) == (early, first.job_id)
        assert len(backlog.jobs(early)) == 1 and backlog.frozen_periods() == [2]
        later = backlog.submit(c)  # period 3 under the competition: period 3's rotation
        offer = backlog.board.claim(v0.hotkey)
        assert offer.submission_id == later and backlog.frozen_periods() == [2, 3]
        assert [p["problem_id"] for p in offer.problems] == backlog.manifest(3).open_problem_ids
    finally:
        backlog.arena.close()


def test_one_queued_before_the_race_bank_and_never_run_qualifies_on_the_first_period_too(backlog):
    """Submitting while there is no race bank (and no validator) picks no partition either."""
    waiting = backlog.submit(backlog.miners[0])  # period 0, nobody claims it
    backlog.clock.advance(seconds=2 * CADENCE_S)
    backlog.add_race_bank()
    offer = backlog.board.claim(backlog.validators[0].hotkey)
    assert (offer.submission_id, offer.kind) == (waiting, "qualifying")
    assert backlog.frozen_periods() == [2]
    bank = read_bank(Path(backlog.arena.dir))
    assert [p["problem_id"] for p in offer.problems] == qualifying_problems(
        backlog.manifest(2), bank, waiting, 2
    )


def test_the_draw_of_n_open_problems_is_the_first_periods_salted_with_its_id(backlog):
    early = backlog.submit(backlog.miners[0])
    assert backlog.drain() == 1
    backlog.clock.advance(seconds=CADENCE_S)
    backlog.add_race_bank()
    offer = backlog.board.claim(backlog.validators[0].hotkey)
    bank = read_bank(Path(backlog.arena.dir))
    assert [p["problem_id"] for p in offer.problems] == qualifying_problems(
        backlog.manifest(1), bank, early, 2
    )


def test_replaced_rejected_and_failed_submissions_get_no_qualifying_job(backlog):
    a, b, c = backlog.miners
    v0, v1, v2 = backlog.validators
    # c's code hangs every validator: its bank job lapses `max_lapses` times and it is failed
    hung = backlog.submit(c)
    assert backlog.board.claim(v0.hotkey).submission_id == hung
    backlog.lapse()
    assert backlog.board.claim(v1.hotkey).submission_id == hung
    backlog.lapse()
    assert backlog.board.claim(v2.hotkey) is None and backlog.statuses(hung)[-1] == "failed"
    # a replaced its first file; b's second file was rejected, so its first is still its current one
    replaced = backlog.submit_with(a)
    current_a = backlog.submit_with(a, tweak="\n# v2\n")
    current_b = backlog.submit_with(b)
    rejected = backlog.submit_with(
        b, code="import subprocess\n\n\ndef agent_main(problem_data):\n    return []\n"
    )
    assert backlog.statuses(rejected) == ["rejected"]
    assert backlog.drain() == 3

    backlog.add_race_bank()
    assert backlog.drain() == 2
    assert [len(backlog.jobs(sid)) for sid in (replaced, current_a, current_b, rejected, hung)] == [
        0,
        1,
        1,
        0,
        0,
    ]
    assert backlog.statuses(replaced) == ["queued", "running", "scored"]
    assert backlog.statuses(hung)[-1] == "failed" and backlog.statuses(rejected) == ["rejected"]
    qualified = {q.hotkey: q.submission_id for q in backlog.engine().qualifiers()}
    assert qualified == {a.hotkey: current_a, b.hotkey: current_b}
    assert backlog.drain() == 0


def test_it_waits_behind_what_was_queued_when_the_competition_reached_it(backlog):
    """Oldest first by submission would put every submission from before the race bank ahead of every
    newer one; it enters the queue when the competition starts for it instead."""
    a, b, c = backlog.miners
    old = backlog.submit(a)
    assert backlog.drain() == 1
    backlog.add_race_bank()
    queued_before = backlog.submit(b)
    claims = [backlog.board.claim(backlog.validators[0].hotkey)]  # this claim queues `old`
    queued_after = backlog.submit(c)
    claims += [backlog.board.claim(v.hotkey) for v in backlog.validators[1:]]
    assert [offer.submission_id for offer in claims] == [queued_before, old, queued_after]
    assert {offer.kind for offer in claims} == {"qualifying"}


def test_it_is_no_way_to_a_second_qualifying_run_or_round_the_cooldown(backlog):
    """A miner gets the one qualifying run its file never had, nothing more: a failed run is not
    retried, and another run needs another submission, which waits out the cooldown as ever."""
    a = backlog.miners[0]
    backlog.arena.config.competition.qualify_threshold = 0.5
    early = backlog.submit_with(a, cooldown_s=FULL_COOLDOWN_S)
    assert backlog.drain() == 1
    backlog.add_race_bank()
    assert backlog.drain(outcome=by_miner({a.hotkey: 0.0})) == 1  # its qualifying run fails
    assert backlog.engine().qualifiers() == []
    backlog.clock.advance(seconds=LEASE_S + 1)
    assert backlog.drain() == 0 and len(backlog.jobs(early)) == 1
    with pytest.raises(CooldownActive):
        backlog.submit_with(a, tweak="\n# v2\n", cooldown_s=FULL_COOLDOWN_S)

    backlog.clock.advance(seconds=FULL_COOLDOWN_S)
    second = backlog.submit_with(a, tweak="\n# v2\n", cooldown_s=FULL_COOLDOWN_S)
    assert backlog.drain(outcome=by_miner({a.hotkey: 0.0})) == 1
    assert [len(backlog.jobs(sid)) for sid in (early, second)] == [1, 1]
    assert backlog.drain() == 0 and backlog.engine().qualifiers() == []


def test_with_two_validators_a_submission_both_evaluated_on_the_bank_gets_both_on_one_job(backlog):
    a = backlog.miners[0]
    backlog.arena.config.jobs.validators_per_submission = 2
    replaced = backlog.submit(a)
    current = backlog.submit(a, tweak="\n# v2\n")
    assert backlog.drain() == 4  # two bank results each

    backlog.add_race_bank()
    assert backlog.drain() == 2
    (job,) = backlog.jobs(current)
    results = backlog.arena.ledger.get(current).results
    assert sorted(r.validator_hotkey for r in results if r.job_id == job.job_id) == sorted(
        v.hotkey for v in backlog.validators[:2]
    )
    assert backlog.jobs(replaced) == []


def test_the_first_period_is_kept_however_late_a_backlog_is_reached(backlog):
    """The competition started in period 1 (a race froze it); a submission from before that, reached
    only in period 4, still qualifies on period 1 — the durable start, the same for anyone who asks."""
    early = backlog.submit(backlog.miners[0])
    assert backlog.drain() == 1
    backlog.clock.advance(seconds=CADENCE_S)
    backlog.add_race_bank()
    engine = backlog.engine()
    engine.open_race()  # freezes period 1; no validator claims yet
    assert backlog.frozen_periods() == [1]
    backlog.clock.advance(seconds=3 * CADENCE_S)
    offer = backlog.board.claim(backlog.validators[0].hotkey)
    assert offer.submission_id == early
    assert [p["problem_id"] for p in offer.problems] == qualifying_problems(
        backlog.manifest(1), read_bank(Path(backlog.arena.dir)), early, 2
    )
    assert backlog.frozen_periods() == [1]


def test_an_old_bank_lease_that_lapses_later_leaves_the_qualifying_run_alone(backlog):
    """A validator took the bank job and went silent; meanwhile the competition started and another
    validator is running the submission's qualifying job. The old lease lapsing is the bank job's
    affair: it must not put the submission back in the queue (or fail it) under the running job."""
    backlog.arena.config.jobs.validators_per_submission = 2
    early = backlog.submit(backlog.miners[0])
    silent = backlog.board.claim(backlog.validators[0].hotkey)  # takes the bank job, never posts
    assert silent is not None
    backlog.drain([backlog.validators[1]])
    assert backlog.statuses(early) == ["queued", "running", "scored"]
    backlog.add_race_bank()
    backlog.clock.advance(seconds=LEASE_S // 2)
    running = backlog.board.claim(backlog.validators[2].hotkey)  # the qualifying job, still running
    assert running is not None and running.job_id != silent.job_id
    backlog.clock.advance(seconds=LEASE_S // 2 + 2)  # the silent lease ran out; the running one has not
    backlog.board.claim(backlog.validators[1].hotkey)  # a claim sweeps lapsed leases
    events = backlog.arena.ledger.get(early).events
    after = [e for e in events if e.at > running_at(events, running.job_id)]
    assert all(e.job_id != silent.job_id for e in after), [(e.status, e.job_id) for e in events]
    assert "failed" not in backlog.statuses(early)


def running_at(events, job_id: str):
    return next(e.at for e in events if e.status == "running" and e.job_id == job_id)
