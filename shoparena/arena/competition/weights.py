"""A race's weights (SPEC §6, issue 13): who earns what from the last complete race.

The crowned agent gets `winner_share`; the other finishers, best race score first, take ranks 2…K
(K = ⌊N/2⌋, N = the racers ranked) and share `tail_share` in proportion K−1, K−2, …, 1; every share
nobody earns (no crown, ranks past K, racers without a uid) burns to `burn_uid`. The result is a
pure function of the race, so every validator that saw the same scores sets the same vector, and
the consensus (`consensus.py`) only has to absorb disagreement about the scores themselves.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from shoparena.arena.competition.models import RaceResult, WeightVector
from shoparena.arena.config import CompetitionConfig


class WeightsError(ValueError):
    """The race cannot be turned into weights (a duplicate racer, the crown on the burn uid, …)."""


def ranking_key(result: RaceResult) -> tuple:
    """Best first: higher race score, then the earlier submission, then the hotkey (a total order, so
    the ranking never depends on the order the results arrived in)."""
    return (-result.score, result.submitted_at, result.hotkey)


def rank_results(results: Iterable[RaceResult]) -> list[RaceResult]:
    """The racers best first (see `ranking_key`); a hotkey or uid racing twice is refused."""
    ranked = sorted(results, key=ranking_key)
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
    ranked: list[RaceResult], crowned_uid: int | None, config: CompetitionConfig, race_id: str | None
) -> WeightVector:
    """The race's weight vector over uids (see the module docstring).

    - `ranked`: every racer ranked in the race (any order; they are re-ranked by `ranking_key`).
    - `crowned_uid`: the uid holding the crown after the race (the incumbent unless a challenger was
      promoted), or None (no crown, or the crowned hotkey has no uid): then `winner_share` burns.
      The crowned agent need not be among `ranked` (an incumbent that did not race keeps its share);
      it never takes one of the ranks 2…K. It may not be `burn_uid`.
    - N = len(ranked), K = ⌊N/2⌋: N ≤ 3 pays no tail; N = 4 pays the whole tail to rank 2.
    """
    if crowned_uid is not None and crowned_uid == config.burn_uid:
        raise WeightsError(
            f"the crowned uid {crowned_uid} is the burn uid: the crown cannot be paid to the burn"
        )
    if crowned_uid is not None and crowned_uid < 0:
        raise WeightsError(f"crowned uid {crowned_uid} is negative")
    order = rank_results(ranked)
    k = len(order) // 2
    earned: dict[int, float] = {}
    if crowned_uid is not None:
        earned[crowned_uid] = config.winner_share
    others = [result for result in order if result.uid is None or result.uid != crowned_uid]
    for result, fraction in zip(others, tail_fractions(k), strict=False):
        if result.uid is not None and result.uid != config.burn_uid:
            earned[result.uid] = earned.get(result.uid, 0.0) + config.tail_share * fraction
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
