"""Yuma-style consensus (SPEC §6): the stake-weighted median per miner, clipping, and a dishonest
minority that cannot lift its favourite."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.arena.competition.consensus import ConsensusError, weighted_quantile, yuma_consensus
from shoparena.arena.competition.models import RaceResult, WeightVector
from shoparena.arena.competition.weights import race_weights
from shoparena.arena.config import CompetitionConfig

T0 = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)


def as_validator(vector: WeightVector, hotkey: str) -> WeightVector:
    return vector.model_copy(update={"source": "validator", "validator_hotkey": hotkey})


def validator_vector(hotkey: str, weights: dict[int, float], race_id: str | None = "r1") -> WeightVector:
    uids = sorted(weights)
    return WeightVector(
        race_id=race_id,
        uids=uids,
        weights=[weights[u] for u in uids],
        source="validator",
        validator_hotkey=hotkey,
    )


def race_vector(scores: dict[int, float], crowned: int) -> WeightVector:
    results = [
        RaceResult(
            hotkey=f"hk{uid}",
            uid=uid,
            submission_id=f"s{uid}",
            score=s,
            success_rate=s,
            submitted_at=T0 + timedelta(minutes=uid),
        )
        for uid, s in scores.items()
    ]
    return race_weights(results, crowned, CompetitionConfig(), race_id="r1")


HONEST_SCORES = {1: 0.9, 2: 0.8, 3: 0.7, 4: 0.6, 5: 0.5, 6: 0.4, 7: 0.3, 8: 0.2}


def test_dishonest_minority_cannot_lift_its_favourite() -> None:
    honest = race_vector(HONEST_SCORES, crowned=1)
    # The dishonest validator scores its favourite (uid 8, last) best and crowns it.
    dishonest = race_vector({**HONEST_SCORES, 8: 1.0, 1: 0.1}, crowned=8)
    assert dishonest.as_dict()[8] == 0.25 and honest.as_dict().get(8, 0.0) == 0.0
    vectors = [as_validator(honest, "v-a"), as_validator(honest, "v-b"), as_validator(dishonest, "v-evil")]
    consensus = yuma_consensus(vectors, {"v-a": 40.0, "v-b": 30.0, "v-evil": 30.0})
    assert consensus.source == "consensus" and consensus.race_id == "r1"
    assert consensus.as_dict().get(8, 0.0) == 0.0
    for uid, weight in consensus.as_dict().items():
        if uid != 0:
            assert weight <= honest.as_dict()[uid] + 1e-12
    assert sum(consensus.weights) == 1.0
    # The honest winner keeps 70 % of its share from honest stake plus the dishonest validator's
    # clipped 0 → exactly 0.7 × 0.25; the rest burns.
    assert consensus.as_dict()[1] == pytest.approx(0.7 * 0.25)


def test_dishonest_majority_does_win_which_is_why_stake_matters() -> None:
    honest = race_vector(HONEST_SCORES, crowned=1)
    dishonest = race_vector({**HONEST_SCORES, 8: 1.0}, crowned=8)
    vectors = [as_validator(honest, "v-a"), as_validator(dishonest, "v-evil")]
    consensus = yuma_consensus(vectors, {"v-a": 40.0, "v-evil": 60.0})
    assert consensus.as_dict()[8] == pytest.approx(0.6 * 0.25)


def test_unanimous_validators_reproduce_their_vector() -> None:
    honest = race_vector(HONEST_SCORES, crowned=3)
    vectors = [as_validator(honest, h) for h in ("a", "b", "c")]
    consensus = yuma_consensus(vectors, {"a": 1.0, "b": 2.0, "c": 3.0})
    assert consensus.uids == honest.uids
    assert consensus.weights == pytest.approx(honest.weights, abs=1e-15)


def test_zero_and_unknown_stake_are_ignored_and_nobody_staked_counts_everyone_equally() -> None:
    a = validator_vector("a", {0: 0.5, 1: 0.5})
    b = validator_vector("b", {0: 0.0, 2: 1.0})
    c = validator_vector("c", {0: 0.0, 3: 1.0})
    consensus = yuma_consensus([a, b, c], {"a": 5.0, "b": 0.0})
    assert consensus.as_dict() == {0: 0.5, 1: 0.5}
    # A staked validator that reported an empty vector does not vote every miner down to 0.
    silent = WeightVector(race_id="r1", uids=[], weights=[], source="validator", validator_hotkey="d")
    assert yuma_consensus([a, silent], {"a": 5.0, "d": 50.0}).as_dict() == {0: 0.5, 1: 0.5}
    # Nobody reporting holds stake (a local arena registered without --stake): each counts equally, as
    # in the race scores' stake-weighted median, instead of a refusal that left the race RUNNING.
    assert yuma_consensus([b, c], {"b": 0.0}).as_dict() == {0: 0.0, 2: 0.5, 3: 0.5}
    assert yuma_consensus([a, b, c], {}).as_dict() == pytest.approx(
        yuma_consensus([a, b, c], {"a": 1.0, "b": 1.0, "c": 1.0}).as_dict()
    )
    # Stake that stands only behind an empty vector is still no vote to combine.
    with pytest.raises(ConsensusError, match="none of the 2 validator vector"):
        yuma_consensus([silent, b], {"d": 50.0})


def test_refuses_non_validator_vectors_and_duplicates() -> None:
    race = WeightVector(race_id="r", uids=[0, 1], weights=[0.5, 0.5])
    with pytest.raises(ConsensusError, match="must be a validator's vector"):
        yuma_consensus([race], {"x": 1.0})
    a = validator_vector("a", {0: 1.0})
    with pytest.raises(ConsensusError, match="a reported two vectors"):
        yuma_consensus([a, a], {"a": 1.0})


def test_burn_uid_is_a_parameter() -> None:
    a = validator_vector("a", {1: 0.5, 9: 0.5})
    b = validator_vector("b", {2: 0.5, 9: 0.5})
    # uid 1 has 60 % of the stake behind 0.5, uid 2 only 40 %: its median is 0 and its weight burns.
    consensus = yuma_consensus([a, b], {"a": 3.0, "b": 2.0}, burn_uid=9)
    assert consensus.as_dict() == {1: pytest.approx(0.3), 9: pytest.approx(0.7)}
    # With κ = 0.4, 40 % of the stake is enough.
    loose = yuma_consensus([a, b], {"a": 3.0, "b": 2.0}, kappa=0.4, burn_uid=9)
    assert loose.as_dict() == {1: pytest.approx(0.3), 2: pytest.approx(0.2), 9: pytest.approx(0.5)}


def test_weighted_quantile() -> None:
    assert weighted_quantile([0.1, 0.5, 0.9], [1, 1, 1], 0.5) == 0.5
    assert weighted_quantile([0.1, 0.5, 0.9], [1, 1, 3], 0.5) == 0.9
    assert weighted_quantile([0.1, 0.5, 0.9], [3, 1, 1], 0.5) == 0.1
    assert weighted_quantile([0.2, 0.8], [1, 1], 0.5) == 0.8  # exactly half the stake suffices
    assert weighted_quantile([0.2, 0.8], [1, 1], 0.6) == 0.2
    with pytest.raises(ConsensusError, match="no stake"):
        weighted_quantile([0.2], [0.0])


# -- properties --------------------------------------------------------------------------------------

MINERS = list(range(1, 9))
simplex = st.lists(st.integers(0, 100), min_size=len(MINERS) + 1, max_size=len(MINERS) + 1).filter(any)


def to_vector(hotkey: str, parts: list[int]) -> WeightVector:
    total = sum(parts)
    return validator_vector(hotkey, {uid: p / total for uid, p in zip([0, *MINERS], parts, strict=True) if p})


@settings(max_examples=100, deadline=None)
@given(
    honest=simplex,
    honest_stakes=st.lists(st.floats(1, 100), min_size=1, max_size=4),
    evil=st.lists(simplex, min_size=1, max_size=3),
    evil_fraction=st.floats(0.0, 0.49),
    rng=st.randoms(use_true_random=False),
)
def test_minority_never_lifts_any_miner_above_the_honest_weight(
    honest, honest_stakes, evil, evil_fraction, rng: random.Random
) -> None:
    honest_total = sum(honest_stakes)
    evil_stake = honest_total * evil_fraction / (1 - evil_fraction) / len(evil)
    vectors = [to_vector(f"h{i}", honest) for i in range(len(honest_stakes))]
    vectors += [to_vector(f"e{i}", parts) for i, parts in enumerate(evil)]
    stakes = {f"h{i}": s for i, s in enumerate(honest_stakes)} | {
        f"e{i}": evil_stake for i in range(len(evil))
    }
    consensus = yuma_consensus(vectors, stakes)
    reference = vectors[0].as_dict()
    assert math.fsum(consensus.weights) == 1.0 and all(w >= 0 for w in consensus.weights)
    for uid, weight in consensus.as_dict().items():
        if uid != 0:
            assert weight <= reference.get(uid, 0.0) * (1 + 1e-12)
    rng.shuffle(vectors)
    assert yuma_consensus(vectors, stakes) == consensus


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(simplex, st.floats(0.0, 50)), min_size=1, max_size=5))
def test_consensus_is_a_weight_vector_bounded_by_the_quantile(reports) -> None:
    vectors = [to_vector(f"v{i}", parts) for i, (parts, _) in enumerate(reports)]
    stakes = {f"v{i}": stake for i, (_, stake) in enumerate(reports)}
    if not any(stake > 0 for stake in stakes.values()):  # nobody staked: everyone counts equally
        stakes = dict.fromkeys(stakes, 0.0)
        assert yuma_consensus(vectors, stakes) == yuma_consensus(vectors, dict.fromkeys(stakes, 1.0))
        return
    consensus = yuma_consensus(vectors, stakes, kappa=0.5)
    assert math.fsum(consensus.weights) == 1.0 and all(w >= 0 for w in consensus.weights)
    staked = [v for v in vectors if stakes[v.validator_hotkey] > 0]
    for uid, weight in consensus.as_dict().items():
        if uid != 0:
            # Never more than the largest weight a staked validator gives the miner.
            assert weight <= max(v.as_dict().get(uid, 0.0) for v in staked) * (1 + 1e-12)


def test_the_chain_mode_clips_at_the_chains_kappa_and_renormalises_instead_of_burning() -> None:
    a = validator_vector("v-a", {0: 0.6, 1: 0.3, 2: 0.1})
    b = validator_vector("v-b", {0: 0.4, 1: 0.3, 2: 0.3})
    c = validator_vector("v-c", {0: 0.9, 1: 0.1})
    equal = {"v-a": 1.0, "v-b": 1.0, "v-c": 1.0}
    # Per uid, the ceiling two of three validators reach: uid 0 → 0.6, uid 1 → 0.3, uid 2 → 0.1.
    clipped = {0: (0.6 + 0.4 + 0.6) / 3, 1: (0.3 + 0.3 + 0.1) / 3, 2: (0.1 + 0.1) / 3}
    ours = yuma_consensus([a, b, c], equal).as_dict()
    assert ours == pytest.approx({0: 1 - clipped[1] - clipped[2], 1: clipped[1], 2: clipped[2]})  # burnt
    chain = yuma_consensus([a, b, c], equal, mode="chain").as_dict()
    total = sum(clipped.values())
    assert chain == pytest.approx({uid: w / total for uid, w in clipped.items()})  # renormalised
    # κ: a validator with 32767 of 65535 stake is just under half — enough on chain, not here.
    split = {"v-a": 32768.0, "v-b": 32767.0}
    assert yuma_consensus([a, b], split).as_dict()[2] == pytest.approx(0.1)
    assert yuma_consensus([a, b], split, mode="chain").as_dict()[2] == pytest.approx(
        (32768 * 0.1 + 32767 * 0.3) / 65535 / 1.0, rel=1e-6
    )
    with pytest.raises(ConsensusError, match="mode"):
        yuma_consensus([a, b], split, mode="median")
