"""Yuma-style consensus across validators (SPEC §6, issue 13).

Each validator reports its own weight vector. Per miner uid, the consensus weight is the stake-weighted
κ-quantile of what the validators give it: the largest weight that validators holding at least κ of
the stake give it or more. Every validator's weight is clipped to that, and the consensus vector is
the stake-weighted sum of the clipped vectors; the mass clipping removed burns to `burn_uid` (it is
not spread over the others, which would let a clipped validator lift every miner it also favours).

Why this holds off a dishonest minority: a miner's consensus weight needs κ of the stake behind it, so
validators holding less than κ (less than half, by default) cannot raise any miner above the largest
weight the rest give it — and after clipping their extra weight buys nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from shoparena.arena.competition.models import WeightVector
from shoparena.arena.competition.weights import close_on_burn

CHAIN_KAPPA = 32767 / 65535
"""Subtensor's default κ (a u16 fraction just under ½)."""


class ConsensusError(ValueError):
    """The validators' vectors cannot be combined (no stake, a vector of the wrong kind, …)."""


class StakedVector(BaseModel):
    """One validator's vector with its share of the counted stake."""

    hotkey: str
    stake_share: float
    weights: dict[int, float]


def weighted_quantile(values: Sequence[float], stakes: Sequence[float], kappa: float = 0.5) -> float:
    """The largest of `values` that entries holding at least `kappa` of the total stake reach or exceed
    (0.0 when there are none). With kappa = 0.5 this is the stake-weighted median seen from the top: a
    coalition under half the stake cannot move it above what the others report."""
    if len(values) != len(stakes):
        raise ConsensusError(f"{len(values)} values but {len(stakes)} stakes")
    if not 0 < kappa < 1:
        raise ConsensusError(f"kappa {kappa} must lie strictly between 0 and 1")
    total = math.fsum(stakes)
    if total <= 0:
        raise ConsensusError("no stake behind any value")
    behind = 0.0
    for value, stake in sorted(zip(values, stakes, strict=True), key=lambda pair: -pair[0]):
        behind += stake
        if behind / total >= kappa:
            return float(value)
    return 0.0


def counted_validators(vectors: list[WeightVector], stakes: Mapping[str, float]) -> list[StakedVector]:
    """The vectors that count, each with its share of the counted stake: zero or unknown stake is
    ignored, and so is an empty vector (a validator that reported nothing does not vote every miner
    down to 0). Refuses a vector that is not a validator's, or two from one validator.

    When no reporting validator holds stake at all (a local arena whose validators were registered
    without `--stake`), every non-empty vector counts equally — the same rule as the race scores'
    `rules.stake_weighted_median` — rather than refusing: a refusal here left the race RUNNING for
    ever, since every close attempt failed the same way."""
    seen: set[str] = set()
    counted: list[tuple[str, float, dict[int, float]]] = []
    for position, vector in enumerate(vectors):
        label = vector.validator_hotkey or f"vector #{position}"
        if vector.source != "validator" or not vector.validator_hotkey:
            raise ConsensusError(
                f"{label}: a consensus input must be a validator's vector (source 'validator' with "
                f"validator_hotkey), got source {vector.source!r}"
            )
        if vector.validator_hotkey in seen:
            raise ConsensusError(f"validator {vector.validator_hotkey} reported two vectors")
        seen.add(vector.validator_hotkey)
        stake = stakes.get(vector.validator_hotkey, 0.0)
        if not math.isfinite(stake) or stake < 0:
            raise ConsensusError(
                f"validator {vector.validator_hotkey}: stake {stake} is not a finite number ≥ 0"
            )
        if stake > 0 and vector.weights:
            counted.append((vector.validator_hotkey, stake, vector.as_dict()))
    if not counted and not any(stakes.get(v.validator_hotkey or "", 0.0) > 0 for v in vectors):
        counted = [(v.validator_hotkey or "", 1.0, v.as_dict()) for v in vectors if v.weights]
    total = math.fsum(stake for _, stake, _ in counted)
    if total <= 0:
        raise ConsensusError(
            f"none of the {len(vectors)} validator vector(s) has stake: "
            f"reporting {sorted(seen)}, staked {sorted(h for h, s in stakes.items() if s > 0)}"
        )
    counted.sort(key=lambda item: item[0])
    return [StakedVector(hotkey=h, stake_share=s / total, weights=w) for h, s, w in counted]


def yuma_consensus(
    vectors: list[WeightVector],
    stakes: dict[str, float],
    kappa: float = 0.5,
    burn_uid: int = 0,
    race_id: str | None = None,
    mode: str = "shoparena",
) -> WeightVector:
    """The consensus vector of the validators' vectors (module docstring), source "consensus".

    `stakes` maps validator hotkeys to stake; `race_id` defaults to the one race all vectors share
    (None when they differ). Deterministic and independent of the order of `vectors`.

    `mode` "chain" is Yuma as subtensor runs it: κ = 32767/65535 (`kappa` ignored), the burn uid
    clipped like any other uid, and the clipped sums renormalised to 1 over the uids (the clipped
    mass is spread in proportion rather than burnt). The default keeps the burn: it gives a clipped
    validator's extra weight to nobody."""
    if mode not in ("shoparena", "chain"):
        raise ConsensusError(f"consensus mode {mode!r}: use shoparena or chain")
    validators = counted_validators(vectors, stakes)
    shares = [v.stake_share for v in validators]
    if mode == "chain":
        kappa = CHAIN_KAPPA
    miners = sorted({uid for v in validators for uid in v.weights})
    earned: dict[int, float] = {}
    for uid in miners:
        column = [v.weights.get(uid, 0.0) for v in validators]
        ceiling = weighted_quantile(column, shares, kappa)
        earned[uid] = math.fsum(
            share * min(weight, ceiling) for share, weight in zip(shares, column, strict=True)
        )
    if race_id is None:
        race_ids = {vector.race_id for vector in vectors}
        race_id = race_ids.pop() if len(race_ids) == 1 else None
    if mode == "chain":
        total = math.fsum(earned.values())
        earned = {uid: w / total for uid, w in earned.items() if uid != burn_uid} if total > 0 else {}
    return close_on_burn(earned, burn_uid, race_id=race_id, source="consensus")
