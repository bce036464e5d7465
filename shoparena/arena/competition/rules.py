"""The race's rules as pure functions (SPEC §6): the seed commitment, the race score, the stake-weighted
median across validators, promotion with hysteresis, cancellation and the winner's code embargo.

Nothing here reads a clock, a database or the network, so every rule is tested on its own (with
hypothesis where the inputs are open-ended) and the engine only wires them together.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel

from shoparena.arena.competition.models import RaceResult

SEED_BYTES = 32
WEEKEND = (5, 6)
"""Saturday and Sunday (`datetime.weekday()`): code is never released on them."""


def seed_commitment(seed: str) -> str:
    """What the arena publishes at race open: the SHA-256 hex digest of the seed's UTF-8 text."""
    return hashlib.sha256(seed.encode("utf-8")).hexdigest()


def new_seed() -> str:
    """A fresh race seed (256 random bits as hex): unguessable until the arena reveals it."""
    return secrets.token_hex(SEED_BYTES)


def final_score(
    success_rate: float,
    judge_coefficient: float | None,
    richness: float | None = None,
    richness_share: float = 0.0,
) -> float:
    """The race score: success rate × judge coefficient (strict); with `richness_share` > 0 that share
    of it comes from the richness term (the fraction of tool calls whose verified origin is `llm`).

    A missing coefficient (the judge answered on none of the episodes) scores as 0: a score the judge
    could not vouch for earns nothing. A missing richness (no calls at all) counts as 0."""
    for name, value in (("success_rate", success_rate), ("richness_share", richness_share)):
        if not 0 <= value <= 1:
            raise ValueError(f"{name} must be within [0, 1], got {value}")
    strict = success_rate * (judge_coefficient if judge_coefficient is not None else 0.0)
    if richness_share <= 0:
        return min(1.0, max(0.0, strict))
    rich = richness if richness is not None else 0.0
    return min(1.0, max(0.0, (1 - richness_share) * strict + richness_share * rich))


def stake_weighted_median(values: Sequence[float], stakes: Sequence[float]) -> float:
    """The lower weighted median: the smallest value at which the cumulative stake reaches half of the
    total. Validators with no stake count only when nobody has any (then every one counts equally).

    A minority of stake cannot move it past the honest majority's values, which is the point."""
    if len(values) != len(stakes):
        raise ValueError(f"{len(values)} values but {len(stakes)} stakes")
    if not values:
        raise ValueError("the median of no values")
    if any(stake < 0 or stake != stake for stake in stakes):
        raise ValueError("stakes must be non-negative numbers")
    weights = list(stakes) if sum(stakes) > 0 else [1.0] * len(values)
    pairs = sorted(zip(values, weights, strict=True))
    half = sum(weights) / 2
    running = 0.0
    for value, weight in pairs:
        running += weight
        if running >= half - 1e-12 and weight > 0:
            return value
    return pairs[-1][0]


WeightsProfile = Literal["shoparena", "subnet"]


def ranking_key(result: RaceResult, profile: WeightsProfile = "shoparena") -> tuple:
    """The one ranking order (issue 23): the page, the API, the season JSON and the weights all sort by
    it. `shoparena`: score descending, ties to the earlier submission, then the submission id.
    `subnet`: as SN15's validators rank finishers, score descending then the submission
    (agent version) id ascending. Either is total, so the order never depends on arrival order."""
    if profile == "subnet":
        return (-result.score, result.submission_id)
    return (-result.score, result.submitted_at, result.submission_id)


def rank(results: Sequence[RaceResult], profile: WeightsProfile = "shoparena") -> list[RaceResult]:
    """Best first by `ranking_key`."""
    return sorted(results, key=lambda r: ranking_key(r, profile))


class Promotion(BaseModel):
    """Who holds the crown after a race, and why."""

    winner: str | None
    """Hotkey holding the crown after the race (None: nobody raced and nobody held it)."""
    winner_submission_id: str | None
    promoted: bool
    """True when the crown changed hands (or was given for the first time)."""
    reason: str


def promotion(
    ranked: Sequence[RaceResult],
    incumbent_hotkey: str | None,
    margin: float,
    profile: WeightsProfile = "shoparena",
) -> Promotion:
    """Hysteresis: the top challenger takes the crown only when its score beats the incumbent's by more
    than `margin` (a fixed margin, or the decaying threshold of `challenge_threshold`). With no
    incumbent racing, the top racer is crowned. `ranked` is best first."""
    ordered = rank(ranked, profile)
    if not ordered:
        return Promotion(
            winner=incumbent_hotkey,
            winner_submission_id=None,
            promoted=False,
            reason="nobody raced",
        )
    incumbent = next((r for r in ordered if r.hotkey == incumbent_hotkey), None)
    if incumbent is None:
        top = ordered[0]
        held = (
            "no incumbent" if incumbent_hotkey is None else f"the incumbent {incumbent_hotkey} did not race"
        )
        return Promotion(
            winner=top.hotkey,
            winner_submission_id=top.submission_id,
            promoted=True,
            reason=f"{held}: the top racer is crowned",
        )
    challenger = next((r for r in ordered if r.hotkey != incumbent_hotkey), None)
    if challenger is not None and challenger.score > incumbent.score + margin:
        return Promotion(
            winner=challenger.hotkey,
            winner_submission_id=challenger.submission_id,
            promoted=True,
            reason=f"{challenger.score:.4f} beats the incumbent's {incumbent.score:.4f} by more than {margin:g}",
        )
    why = (
        "no challenger"
        if challenger is None
        else f"the top challenger's {challenger.score:.4f} does not beat {incumbent.score:.4f} + {margin:g}"
    )
    return Promotion(
        winner=incumbent.hotkey,
        winner_submission_id=incumbent.submission_id,
        promoted=False,
        reason=f"the incumbent keeps the crown: {why}",
    )


def challenge_margin(margin: float, races_held: int, half_life_races: float) -> float:
    """The decaying challenge threshold's lead: `margin` halved every `half_life_races` races the
    incumbent has held the crown, so a long reign gets easier to challenge and the leader cannot sit on
    a lead the field has caught up with (the subnet's "decaying score threshold")."""
    if races_held < 0 or half_life_races <= 0:
        raise ValueError("races_held must be ≥ 0 and half_life_races > 0")
    return margin * 0.5 ** (races_held / half_life_races)


def cancellation(
    validators_reported: int,
    min_validators: int,
    judge_failures: int,
    judge_calls: int,
    max_rate: float,
) -> str | None:
    """Why a race is CANCELLED (None: it stands): too few validators reported, or more than `max_rate`
    of the judge calls failed."""
    if validators_reported < min_validators:
        return f"{validators_reported} validator(s) reported; the race needs at least {min_validators}"
    if judge_calls > 0 and judge_failures / judge_calls > max_rate:
        return (
            f"{judge_failures} of {judge_calls} judge calls failed "
            f"({judge_failures / judge_calls:.0%} > {max_rate:.0%})"
        )
    return None


def code_release_at(promoted_at: datetime, tz: str = "America/Los_Angeles", hour: int = 12) -> datetime:
    """The embargo's end: the next weekday `hour`:00 local time strictly after `promoted_at`, in UTC.

    Wall-clock arithmetic happens in local dates (so a DST switch between promotion and release moves
    the UTC instant, not the local hour)."""
    if promoted_at.tzinfo is None:
        raise ValueError("promoted_at must be timezone-aware")
    zone = ZoneInfo(tz)
    local = promoted_at.astimezone(zone)
    day = local.date()
    while True:
        candidate = datetime.combine(day, time(hour), tzinfo=zone)
        if candidate.weekday() not in WEEKEND and candidate.astimezone(UTC) > promoted_at:
            return candidate.astimezone(UTC)
        day += timedelta(days=1)
