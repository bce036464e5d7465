"""Qualifying scores that no single validator decides (issue 22, attack 6).

A submission's qualifying score is the stake-weighted median of its validators' final scores on its
qualifying job — as a race score is — and it stands only once a quorum has reported: at least
`competition.qualifying_quorum` registered validators (default 2 when two or more are registered, else
1, which the page warns about), or validators holding `qualifying_stake_share` of the registered
validators' stake. Until then the submission has no qualifying score: it neither qualifies nor fails.
The job layer hands each qualifying job to that many validators (`CompetitionJobSource`).

Only registered validators' reports count (a deregistered validator's result stays in the ledger but
vouches for nothing), each validator once (its newest report).
"""

from __future__ import annotations

from sqlalchemy import Connection, select

from shoparena.arena.competition import rules
from shoparena.arena.config import CompetitionConfig
from shoparena.arena.models import QualifyingReport, QualifyingStanding
from shoparena.arena.tables import JOBS
from shoparena.arena.tables import SUBMISSION_RESULTS as RESULTS

EPSILON = 1e-12


def qualifying_quorum(config: CompetitionConfig, validators: int) -> tuple[int, bool]:
    """(validators needed, single validator): the configured quorum, else 2 when at least two validators
    are registered, else 1 — flagged, since then one validator decides."""
    if config.qualifying_quorum is not None:
        return config.qualifying_quorum, validators <= 1
    return (2, False) if validators >= 2 else (1, True)


def standing(
    reports: list[QualifyingReport], stakes: dict[str, float], config: CompetitionConfig
) -> QualifyingStanding:
    """The qualifying score `reports` (registered validators' only, one each) make, if they stand."""
    quorum, single = qualifying_quorum(config, len(stakes))
    total = sum(stakes.values())
    reported = sum(report.stake for report in reports)
    share = reported / total if total > 0 else (len(reports) / len(stakes) if stakes else 0.0)
    stands = bool(reports) and (len(reports) >= quorum or share >= config.qualifying_stake_share - EPSILON)
    score = (
        rules.stake_weighted_median([r.score for r in reports], [r.stake for r in reports])
        if stands
        else None
    )
    who = f"{len(reports)} of {len(stakes)} validator(s) reported ({share:.0%} of the stake)"
    if stands:
        detail = f"{who}: the score is their stake-weighted median"
        if single:
            detail += "; only one validator is registered, so one validator decides it"
    else:
        detail = (
            f"{who}: waiting for {quorum} validator(s) or {config.qualifying_stake_share:.0%} of the stake "
            "before the score stands"
        )
    return QualifyingStanding(
        score=score,
        reports=reports,
        quorum=quorum,
        stake_share=config.qualifying_stake_share,
        reported_stake_share=min(1.0, share),
        stands=stands,
        single_validator=single,
        detail=detail,
    )


def qualifying_standings(
    connection: Connection, stakes: dict[str, float], config: CompetitionConfig, kind: str = "qualifying"
) -> dict[str, QualifyingStanding]:
    """submission id → its qualifying standing, for every submission with a qualifying result;
    `stakes` are the registered validators' (hotkey → stake). `kind="bank"` reads the results of bank
    jobs instead (the provisional ranking of an arena without a race bank: never a qualifying score)."""
    rows = connection.execute(
        select(RESULTS.c.submission_id, RESULTS.c.validator_hotkey, RESULTS.c.asr, RESULTS.c.coefficient)
        .join(JOBS, JOBS.c.job_id == RESULTS.c.job_id)
        .where(JOBS.c.kind.is_(None) if kind == "bank" else JOBS.c.kind == kind)  # bank jobs: NULL
        .order_by(RESULTS.c.id)
    ).all()
    per: dict[str, dict[str, QualifyingReport]] = {}
    for row in rows:
        mine = per.setdefault(row.submission_id, {})
        if row.validator_hotkey not in stakes:
            continue
        mine[row.validator_hotkey] = QualifyingReport(  # the newest report of each validator
            validator_hotkey=row.validator_hotkey,
            stake=stakes[row.validator_hotkey],
            score=rules.final_score(row.asr, row.coefficient),
        )
    return {
        sid: standing(sorted(reports.values(), key=lambda r: r.validator_hotkey), stakes, config)
        for sid, reports in per.items()
    }
