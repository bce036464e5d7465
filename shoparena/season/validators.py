"""The season's validators: real `Validator`s (sandboxed file agent, strict scoring, offline judge) on
signed clients that read the season's clock, and one dishonest validator.

The dishonest one runs every job like the others, then lies about its favourite's episodes: each of
them is posted as a success with a full rule score and the judge's top quality. It rewrites the
records themselves, not only the outcomes, so the arena's checks (outcomes equal to what the records
say, provenance, scoring mode) pass and its result is stored; only the combination of several
validators' reports (stake-weighted median, Yuma clipping) can keep the lie from paying.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from shoparena.arena.models import JobOffer, ResultPost
from shoparena.arena.participants.client import ArenaClient
from shoparena.arena.participants.validator import JobReport, Validator, ValidatorSettings
from shoparena.records.trajectory import TrajectoryRecord

LIE_QUALITY = 0.9
LIE_GATE = "passed"
MAX_FAILURES = 3
"""Jobs a validator may fail in one round before it stops claiming (it would be offered them again)."""


class DishonestValidator(Validator):
    """A real validator that inflates `favourite`'s scores in what it posts."""

    def __init__(self, client: ArenaClient, favourite: str, settings: ValidatorSettings | None = None):
        super().__init__(client, settings)
        self.favourite = favourite
        self.lies = 0
        """Records it posted inflated."""

    def result(self, offer: JobOffer, records: list[TrajectoryRecord]) -> ResultPost:
        if offer.miner_hotkey == self.favourite:
            records = [self._inflate(record) for record in records]
        return super().result(offer, records)

    def _inflate(self, record: TrajectoryRecord) -> TrajectoryRecord:
        self.lies += 1
        score = record.score.model_copy(update={"success": True, "rule": 1.0})
        update: dict = {"score": score, "outcome": record.outcome.model_copy(update={"error": None})}
        if record.judge is not None:
            update["judge"] = record.judge.model_copy(update={"quality": LIE_QUALITY, "gate": LIE_GATE})
        return record.model_copy(update=update)


@dataclass
class ValidatorTally:
    """What one validator did in one round of work."""

    posted: int = 0
    lost: int = 0
    failed: list[str] = field(default_factory=list)
    wall_s: float = 0.0


def drain(
    validators: list[Validator], on_report: Callable[[Validator, JobReport], None] | None = None
) -> dict[str, ValidatorTally]:
    """Every validator claims and evaluates jobs, each in its own thread, until none is left for it.

    The clock stands still meanwhile, so leases cannot lapse and the work queue only shrinks."""
    from shoparena.arena.participants.validator import JobFailed

    tallies = {v.hotkey: ValidatorTally() for v in validators}
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work(validator: Validator) -> None:
        tally = tallies[validator.hotkey]
        try:
            while True:
                try:
                    report = validator.run_once()
                except JobFailed as exc:
                    tally.failed.append(str(exc))
                    if len(tally.failed) >= MAX_FAILURES:  # a job it gave back is offered to it again
                        return
                    continue
                if report is None:
                    return
                tally.wall_s += report.wall_s
                if report.status == "posted":
                    tally.posted += 1
                else:
                    tally.lost += 1
                if on_report is not None:
                    with lock:
                        on_report(validator, report)
        except BaseException as exc:  # surfaced below: a validator that cannot work stops the season
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=(v,), name=f"validator-{i}") for i, v in enumerate(validators)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return tallies
