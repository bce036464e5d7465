"""A race's weights (SPEC §6, issue 13): who earns what from the last complete race.

The crowned agent gets `winner_share`; the other finishers, best race score first, take ranks 2…K
(K = ⌊N/2⌋, N = the racers ranked) and share `tail_share` in proportion K−1, K−2, …, 1; every share
nobody earns (no crown, ranks past K, racers without a uid) burns to `burn_uid`. The result is a
pure function of the race, so every validator that saw the same scores sets the same vector, and
the consensus (`consensus.py`) only has to absorb disagreement about the scores themselves.

Stated edge rules (issue 23): the crowned agent is excluded from ranks 2…K by its hotkey, so a crowned
racer without a uid never takes a paid tail rank (its crown share burns); a crown on the burn uid is
burnt, never refused (registration keeps miners off the burn uid; an older arena that holds one must
not stall its races). `subnet_weights` is SN15's rule, chosen with `competition.weights: subnet`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from shoparena.arena.competition import rules
from shoparena.arena.competition.models import RaceResult, WeightVector
from shoparena.arena.competition.rules import WeightsProfile
from shoparena.arena.config import CompetitionConfig

U16_MAX = 65535
"""The chain's largest weight value (as `chain.u16`, which sits above this module)."""


class WeightsError(ValueError):
    """The race cannot be turned into weights (a duplicate racer, the crown on the burn uid, …)."""


def rank_results(results: Iterable[RaceResult], profile: WeightsProfile = "shoparena") -> list[RaceResult]:
    """The racers best first, in the one ranking order (`rules.ranking_key`, the page's too); a hotkey
    or uid racing twice is refused."""
    ranked = rules.rank(list(results), profile)
    hotkeys: set[str] = set()
    uids: dict[int, str] = {}
    for result in ranked:
        if result.hotkey in hotkeys:
            raise WeightsError(f"hotkey {result.hotkey} appears twice among the race results")
        hotkeys.add(result.hotkey)
        if result.uid is not None:
            if result.uid in uids:
                raise WeightsError(
                    f"uid {result.uid} belongs to both {uids[result.uid]} and {result.hotkey} in the race results"
                )
            uids[result.uid] = result.hotkey
    return ranked


def tail_fractions(k: int) -> list[float]:
    """The fractions of `tail_share` that ranks 2…K earn: (K−1, K−2, …, 1) / (K(K−1)/2); empty when
    K < 2 (nobody below the winner is paid)."""
    if k < 2:
        return []
    total = k * (k - 1) // 2
    return [(k - rank + 1) / total for rank in range(2, k + 1)]


def race_weights(
    ranked: list[RaceResult],
    crowned_uid: int | None,
    config: CompetitionConfig,
    race_id: str | None,
    crowned_hotkey: str | None = None,
) -> WeightVector:
    """The race's weight vector over uids under `config.weights` (see the module docstring).

    - `ranked`: every racer ranked in the race (any order; they are re-ranked by `rules.ranking_key`).
    - `crowned_uid`: the uid holding the crown after the race (the incumbent unless a challenger was
      promoted), or None (no crown, or the crowned hotkey has no uid): then `winner_share` burns.
      The crowned agent need not be among `ranked` (an incumbent that did not race keeps its share);
      it never takes one of the ranks 2…K (`crowned_hotkey` names it when it has no uid). On the burn
      uid, its share is burnt.
    - N = len(ranked), K = ⌊N/2⌋: N ≤ 3 pays no tail; N = 4 pays the whole tail to rank 2.
    """
    if config.weights == "subnet":
        return subnet_weights(ranked, config, race_id)
    if crowned_uid is not None and crowned_uid < 0:
        raise WeightsError(f"crowned uid {crowned_uid} is negative")
    order = rank_results(ranked)
    k = len(order) // 2
    earned: dict[int, float] = {}
    if crowned_uid is not None and crowned_uid != config.burn_uid:
        earned[crowned_uid] = config.winner_share

    def crowned(result: RaceResult) -> bool:
        by_uid = crowned_uid is not None and result.uid == crowned_uid
        return by_uid or (crowned_hotkey is not None and result.hotkey == crowned_hotkey)

    others = [result for result in order if not crowned(result)]
    for result, fraction in zip(others, tail_fractions(k), strict=False):
        if result.uid is not None and result.uid != config.burn_uid:
            earned[result.uid] = earned.get(result.uid, 0.0) + config.tail_share * fraction
    return close_on_burn(earned, config.burn_uid, race_id=race_id, source="race")


def pinned_u16(top_share: float, tail_sum: int) -> tuple[int, int]:
    """SN15's (top, burn) u16 pair: the burn pinned at 65535 and the top sized so that, once the chain
    normalises the vector, the top holds exactly `top_share` and burn + tail the rest — the tail comes
    out of the burn's share (top_share ≤ ½; the subnet pins the top instead past that, which its
    configuration never uses and this profile refuses)."""
    if not 0 <= top_share <= 0.5:
        raise WeightsError(f"the subnet profile needs winner_share within [0, 0.5], got {top_share}")
    if top_share == 0:
        return 0, U16_MAX
    total = (U16_MAX + tail_sum) / (1 - top_share)
    return round(top_share * total), U16_MAX


def subnet_u16(ranked: list[RaceResult], config: CompetitionConfig) -> dict[int, int]:
    """SN15's weight rule as u16 values per uid, before the chain normalises them.

    Rank the finishers (score descending, then submission id); K = ⌊N/2⌋. K = 0 (N ≤ 1) burns all:
    {burn: 65535}. Otherwise rank 1 gets the pinned top value and ranks 2…K get K−1, …, 1 units,
    taken from the burn's share. A racer without a uid is dropped (the subnet drops hotkeys not in the
    metagraph) and the top is re-pinned to the tail actually paid; a top on the burn uid adds to it."""
    order = rank_results(ranked, "subnet")
    k = len(order) // 2
    burn = config.burn_uid
    if k == 0:
        return {burn: U16_MAX}
    values: dict[int, int] = {}
    for rank_index in range(1, k):
        uid = order[rank_index].uid
        if uid is not None:
            values[uid] = values.get(uid, 0) + k - rank_index
    tail_paid = sum(values.values())
    top, burn_value = pinned_u16(config.winner_share, tail_paid)
    values[burn] = values.get(burn, 0) + burn_value
    top_uid = order[0].uid
    if top_uid is not None and top > 0:
        values[top_uid] = values.get(top_uid, 0) + top
    return values


def subnet_weights(ranked: list[RaceResult], config: CompetitionConfig, race_id: str | None) -> WeightVector:
    """`subnet_u16` normalised as the chain does (each value over their sum); the u16 conversion of
    the result (`chain.u16.to_u16`) gives back the very same integers, since the burn is the largest."""
    values = subnet_u16(ranked, config)
    total = sum(values.values())
    earned = {uid: value / total for uid, value in values.items() if uid != config.burn_uid}
    return close_on_burn(earned, config.burn_uid, race_id=race_id, source="race")


def close_on_burn(
    earned: Mapping[int, float],
    burn_uid: int,
    *,
    race_id: str | None,
    source: str,
    validator_hotkey: str | None = None,
) -> WeightVector:
    """A vector of the earned weights (zeros dropped) plus `burn_uid` holding the rest.

    "Sums to 1" is exact, not approximate: the burn entry is the correctly rounded 1 − Σ earned, so
    `math.fsum(vector.weights) == 1.0` always; among the burns that keep that, one that also makes the
    plain left-to-right `sum(vector.weights)` exactly 1.0 is chosen when one exists (for some
    vectors none does: the ordered sum steps over 1.0). Earned weights summing past 1 (float drift of
    shares that add up to 1) are scaled back first."""
    entries = {uid: float(w) for uid, w in earned.items() if uid != burn_uid and w > 0}
    for uid, weight in entries.items():
        if uid < 0 or not math.isfinite(weight):
            raise WeightsError(f"uid {uid}: weight {weight} is not a finite weight of a uid ≥ 0")
    if math.fsum(entries.values()) > 1.0:
        spent = math.fsum(entries.values())
        entries = {uid: w / spent for uid, w in entries.items()}
    uids = sorted({*entries, burn_uid})

    def vector_with(burn: float) -> list[float]:
        return [burn if uid == burn_uid else entries[uid] for uid in uids]

    burn = max(0.0, math.fsum([1.0, *(-w for w in entries.values())]))
    weights = vector_with(burn)
    if sum(weights) != 1.0:
        weights = _nudge(vector_with, burn)
    return WeightVector(
        race_id=race_id,
        uids=uids,
        weights=weights,
        source=source,  # type: ignore[arg-type]
        validator_hotkey=validator_hotkey,
    )


def _nudge(vector_with, burn: float) -> list[float]:
    """Move the burn entry by a few units in its last place, looking for an ordered sum of exactly 1.0
    that keeps the exact sum at 1.0 (the burn is the one entry nobody is owed, so it absorbs the
    rounding)."""
    candidate = burn
    for direction in (math.inf, -math.inf):
        candidate = burn
        for _ in range(8):
            candidate = math.nextafter(candidate, direction)
            if candidate < 0:
                break
            weights = vector_with(candidate)
            if sum(weights) == 1.0 and math.fsum(weights) == 1.0:
                return weights
    return vector_with(burn)
