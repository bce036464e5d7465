"""Helpers of the race tests: an arena with a race bank, validators that post real canonical records
through the job layer (re-cast from one real run of the benign miner, outcomes changed where a test
needs another score), and the engine's clock."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from shoparena.arena.canonical import canonical_record, problem_outcome
from shoparena.arena.competition.job_source import CompetitionJobSource
from shoparena.arena.jobs.board import JobBoard
from shoparena.arena.jobs.intake import ResultIntake
from shoparena.arena.models import JobOffer, ResultPost
from shoparena.records.trajectory import TrajectoryRecord
from tests.arena.arena_helpers import Key, make_arena
from tests.arena.job_helpers import BENIGN_AGENT, EVALUATION, NO_COOLDOWN

RACE_BANK = "race_bank.jsonl"
Outcome = Callable[[JobOffer, str, TrajectoryRecord], TrajectoryRecord]
"""(offer, validator hotkey, canonical record) → the record this validator posts."""


class SimClock:
    """The engine's and the job board's clock: starts now, moves only when told."""

    def __init__(self) -> None:
        self.at = datetime.now(UTC) + timedelta(seconds=5)

    def __call__(self) -> float:
        return self.at.timestamp()

    def advance(self, **delta) -> datetime:
        self.at += timedelta(**delta)
        return self.at


class Racing:
    """An arena with a race bank, miners and validators registered with uids and stakes."""

    def __init__(self, arena, miners: list[Key], validators: list[Key], records: list[TrajectoryRecord]):
        self.arena = arena
        self.miners = miners
        self.validators = validators
        self.records = {record.problem.problem_id: record for record in records}
        self.clock = SimClock()
        self.board = JobBoard(
            arena, clock=self.clock, source=CompetitionJobSource(arena.dir, arena.config, arena.store.engine)
        )
        self.intake = ResultIntake(self.board)
        self.code = BENIGN_AGENT.read_text()

    def submit(self, miner: Key, name: str = "agent.py", tweak: str = "") -> str:
        """An admitted submission recorded through the ledger (the miner API's own path is tested in
        tests/arena/api); `tweak` makes the code distinct."""
        from shoparena.admission import check_submission

        code = (self.code + tweak).encode()
        assert check_submission(code) == []
        sha = self.arena.code.put(code)
        self.clock.advance(seconds=1)
        return self.arena.ledger.record(
            hotkey=miner.hotkey,
            name=name,
            code_sha256=sha,
            code_size=len(code),
            violations=[],
            cooldown_s=0,
            now=self.clock.at,
        )

    def evaluate(self, validator: Key, outcome: Outcome | None = None) -> JobOffer | None:
        """One claim by `validator` and its posted result; None when it has no job."""
        offer = self.board.claim(validator.hotkey)
        if offer is None:
            return None
        records = []
        for problem in offer.problems:
            record = canonical_record(self.records[problem["problem_id"]], offer, validator.hotkey)
            records.append(outcome(offer, validator.hotkey, record) if outcome else record)
        post = ResultPost(
            lease_id=offer.lease_id,
            job_id=offer.job_id,
            outcomes=[problem_outcome(record) for record in records],
            records=records,
        )
        self.intake.post(validator.hotkey, post.model_dump_json().encode())
        return offer

    def drain(self, validators: list[Key] | None = None, outcome: Outcome | None = None) -> int:
        """Every validator takes jobs until none is left for it; how many results were posted."""
        posted = 0
        for validator in validators or self.validators:
            while self.evaluate(validator, outcome) is not None:
                posted += 1
        return posted


def success(value: bool) -> Callable[[TrajectoryRecord], TrajectoryRecord]:
    def change(record: TrajectoryRecord) -> TrajectoryRecord:
        return record.model_copy(update={"score": record.score.model_copy(update={"success": value})})

    return change


def by_miner(
    table: dict[str, float], liar: str | None = None, lie: dict[str, float] | None = None
) -> Outcome:
    """Records whose success pattern gives each miner hotkey the success rate in `table` (rounded down
    to the problems there are); the validator `liar` uses `lie` instead."""

    def outcome(offer: JobOffer, validator: str, record: TrajectoryRecord) -> TrajectoryRecord:
        rates = lie if liar is not None and validator == liar else table
        rate = rates.get(offer.miner_hotkey, 1.0)
        ids = [problem["problem_id"] for problem in offer.problems]
        position = ids.index(record.problem.problem_id)
        return success(position < int(rate * len(ids) + 1e-9))(record)

    return outcome


def no_judge(_offer: JobOffer, _validator: str, record: TrajectoryRecord) -> TrajectoryRecord:
    """A record whose judge call failed (the runner leaves such a record unjudged)."""
    return record.model_copy(update={"judge": None})


def make_racing(
    tmp_path: Path,
    catalog: Path,
    arena_bank: Path,
    race_bank: Path,
    records: list[TrajectoryRecord],
    miners: int = 3,
    validators: int = 3,
    store: str | None = None,
    validators_per_submission: int = 1,
    **competition,
) -> Racing:
    """`store`: where the arena's state lives (None: SQLite in the arena directory);
    `validators_per_submission`: how many validators run each qualifying job."""
    miner_keys = [Key() for _ in range(miners)]
    validator_keys = [Key() for _ in range(validators)]
    arena = make_arena(
        tmp_path / "arena",
        catalog,
        arena_bank,
        {},
        evaluation=EVALUATION,
        jobs={"lease_s": 60, "max_lapses": 2, "validators_per_submission": validators_per_submission},
        cooldown=NO_COOLDOWN,
        store=store,
        competition={
            "race_problems": 2,
            "qualifying_problems": 2,
            "qualify_threshold": 0.0,
            "race_cadence_s": 3600,
            "heldout_fraction": 0.75,  # 6 of the 8 clusters: three 2-problem races before the bank runs dry
            **competition,
        },
    )
    for uid, key in enumerate(miner_keys, start=1):
        arena.metagraph.register(key.hotkey, "miner", 0.0, uid=uid)
    for uid, key in enumerate(validator_keys, start=100):
        arena.metagraph.register(key.hotkey, "validator", 10.0, uid=uid)
    shutil.copyfile(race_bank, tmp_path / "arena" / RACE_BANK)
    return Racing(arena, miner_keys, validator_keys, records)
