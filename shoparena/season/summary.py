"""From a played season to its season file: read back what the arena recorded — the ledger's
submissions, the races and the weights as the competition reader and the chain ledger give them — and
check what the dishonest validator's lies did to its favourite.

The lie check recomputes, per race, what the honest validators alone would have given the favourite:
its race score (their stake-weighted median) and its consensus weight (Yuma over their own vectors).
The favourite gained nothing when what the arena gave it is never above either.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from sqlalchemy import select

from shoparena.arena.competition.models import Race, WeightVector
from shoparena.arena.db import as_utc
from shoparena.season.clock import SimClock
from shoparena.season.roster import FAVOURITE_SLOT
from shoparena.season.seasonfile import (
    BankTopUp,
    DayProgress,
    DishonestReport,
    RaceLie,
    SeasonFile,
    SeasonRefusal,
    SeasonSubmission,
    SeasonWeights,
)
from shoparena.season.setup import SeasonSettings

TOLERANCE = 1e-9


class PlayedSeason(Protocol):
    """What the summary reads of a season that was played (the driver's `Season` is one): its settings,
    where it started on the simulated clock, and what its miners and days did."""

    settings: SeasonSettings
    sandbox: str
    start: datetime
    clock: SimClock
    submissions: list[SeasonSubmission]
    refusals: list[SeasonRefusal]
    days: list[DayProgress]
    top_ups: list[BankTopUp]


def race_vectors(arena, race_id: str) -> tuple[WeightVector | None, list[WeightVector]]:
    """The consensus vector stored for `race_id` and every validator's own vector."""
    from shoparena.arena.tables import WEIGHT_VECTORS as table

    with arena.store.engine.connect() as connection:
        rows = connection.execute(select(table).where(table.c.race_id == race_id).order_by(table.c.id)).all()
    consensus, own = None, []
    for row in rows:
        vector = WeightVector(
            race_id=row.race_id,
            uids=list(row.uids),
            weights=list(row.weights),
            source=row.source,
            validator_hotkey=row.validator_hotkey,
        )
        if row.source == "validator":
            own.append(vector)
        elif row.source == "consensus":
            consensus = vector
    return consensus, own


def lie_check(
    arena, race: Race, liar: str, favourite: str, stakes: dict[str, float], own: list[WeightVector], consensus
) -> RaceLie:
    from shoparena.arena.competition.consensus import yuma_consensus
    from shoparena.arena.competition.rules import stake_weighted_median

    config = arena.config.competition
    uid = next((n.uid for n in arena.metagraph.all() if n.hotkey == favourite), None)
    result = next((r for r in race.results if r.hotkey == favourite), None)
    lie = RaceLie(race_id=race.race_id, raced=result is not None)
    if result is not None:
        honest = [s for s in result.by_validator if s.validator_hotkey != liar]
        lie.reported_by_liar = next(
            (s.score for s in result.by_validator if s.validator_hotkey == liar), None
        )
        if honest:
            lie.honest_median = stake_weighted_median(
                [s.score for s in honest], [stakes.get(s.validator_hotkey, 0.0) for s in honest]
            )
        lie.combined = result.score
    if consensus is not None and uid is not None:
        lie.consensus_weight = consensus.as_dict().get(uid, 0.0)
        honest_vectors = [v for v in own if v.validator_hotkey != liar]
        if honest_vectors:
            honest_consensus = yuma_consensus(
                honest_vectors, stakes, config.kappa, config.burn_uid, race_id=race.race_id
            )
            lie.honest_weight = honest_consensus.as_dict().get(uid, 0.0)
    return lie


def gained(lie: RaceLie) -> bool:
    if (
        lie.combined is not None
        and lie.honest_median is not None
        and lie.combined > lie.honest_median + TOLERANCE
    ):
        return True
    return lie.consensus_weight > lie.honest_weight + TOLERANCE


def reused_problems(arena, races: list[Race]) -> int:
    """How many of `races`' problems were public before their race opened: in a leak cluster that an
    earlier race of the arena drew (revealed at its close), or that a qualifying job created before the
    race opened ran (the firehose serves its trajectories). Freshness makes it 0."""
    from shoparena.arena.competition.bank import read_bank
    from shoparena.arena.tables import JOBS, RACES

    cluster_of = read_bank(arena.dir).cluster_of
    with arena.store.engine.connect() as connection:
        opened = connection.execute(select(RACES.c.race_id, RACES.c.opened_at, RACES.c.race_clusters)).all()
        qualifying = connection.execute(
            select(JOBS.c.created_at, JOBS.c.problem_ids).where(JOBS.c.kind == "qualifying")
        ).all()
    reused = 0
    for race in races:
        at = as_utc(race.opened_at)
        public = {c for row in opened if as_utc(row.opened_at) < at for c in row.race_clusters or []}
        public |= {
            cluster_of.get(pid)
            for row in qualifying
            if as_utc(row.created_at) < at
            for pid in row.problem_ids or []
        }
        reused += sum(1 for pid in race.problem_ids or [] if cluster_of.get(pid) in public)
    return reused


def _ordered(race: Race) -> Race:
    """The race with each result's validator scores by hotkey (they arrive in whatever order the
    validators' threads posted them)."""
    results = [
        result.model_copy(
            update={"by_validator": sorted(result.by_validator, key=lambda s: s.validator_hotkey)}
        )
        for result in race.results
    ]
    return race.model_copy(update={"results": results})


def summarise(
    season: PlayedSeason, arena, engine, specs, miners, validator_keys, validators, favourite, entrants=()
) -> SeasonFile:
    from shoparena.arena.competition.view import CompetitionView

    view = CompetitionView(arena, engine)
    stakes = {key.hotkey: key.stake for key in validator_keys}
    races = [
        _ordered(race)
        for race in sorted(view.races(limit=10_000), key=lambda race: race.opened_at)
        if as_utc(race.opened_at) >= season.start  # this season's: an arena may hold earlier ones
    ]
    history = {}
    try:
        for entry in engine.chain.history():
            if entry.source == "consensus" and entry.race_id is not None:
                history[entry.race_id] = entry.seq
    except AttributeError:  # a chain adapter without a local history
        pass
    weights, lies = [], []
    liar = next((v.validator for v in validators if hasattr(v.validator, "favourite")), None)
    for race in races:
        consensus, own = race_vectors(arena, race.race_id)
        if consensus is not None:
            weights.append(
                SeasonWeights(
                    race_id=race.race_id,
                    uids=consensus.uids,
                    weights=consensus.weights,
                    by_validator=own,
                    chain_block=history.get(race.race_id),
                )
            )
        if liar is not None:
            lies.append(lie_check(arena, race, liar.hotkey, liar.favourite, stakes, own, consensus))
    submissions = []
    for item in season.submissions:
        view_of = arena.ledger.get(item.submission_id)
        detail = view.agent(item.submission_id)
        submissions.append(
            item.model_copy(
                update={
                    "status": view_of.status if view_of is not None else item.status,
                    "qualifying_score": detail.qualifying_score if detail is not None else None,
                    "qualified": detail.qualified if detail is not None else None,
                    "qualifying_reports": detail.qualifying.reports
                    if detail is not None and detail.qualifying is not None
                    else [],
                }
            )
        )
    dishonest = None
    if liar is not None:
        accepted = sum(
            1
            for s in submissions
            for r in (arena.ledger.get(s.submission_id).results if s.status != "rejected" else [])
            if r.validator_hotkey == liar.hotkey
        )
        favourite_spec = next(s for s in specs if s.slot == FAVOURITE_SLOT)
        dishonest = DishonestReport(
            validator_hotkey=liar.hotkey,
            favourite_hotkey=liar.favourite,
            favourite_miner=favourite_spec.name,
            lies=liar.lies,
            accepted_results=accepted,
            races=lies,
            gained_nothing=not any(gained(lie) for lie in lies),
        )
    participants = (
        [
            {
                "role": "miner",
                "hotkey": m.hotkey,
                "uid": m.uid,
                "stake": m.stake,
                "miner": s.name,
                "kind": s.kind,
            }
            for m, s in zip(miners, specs, strict=True)
        ]
        + [
            {
                "role": "miner",
                "hotkey": k.hotkey,
                "uid": k.uid,
                "stake": k.stake,
                "miner": e.name,
                "kind": "entrant",
            }
            for k, e in zip(entrants, season.settings.entrants, strict=True)
        ]
        + [
            {
                "role": "validator",
                "hotkey": v.hotkey,
                "uid": v.uid,
                "stake": v.stake,
                "honest": liar is None or v.hotkey != liar.hotkey,
            }
            for v in validator_keys
        ]
    )
    config = arena.config
    return SeasonFile(
        seed=season.settings.seed,
        miners=season.settings.miners,
        validators=season.settings.validators,
        days=season.settings.days,
        sandbox=season.sandbox,
        season_start=races[0].opened_at if races else season.clock.now(),
        config=config.competition,
        evaluation=config.evaluation.model_dump(mode="json"),
        participants=participants,
        submissions=submissions,
        refusals=season.refusals,
        races=races,
        weights=weights,
        dishonest=dishonest,
        bank_top_ups=season.top_ups,
        reused_problems=reused_problems(arena, races),
        progress=season.days,
    )
