"""Race weights (SPEC §6): the crowned agent's share, the descending tail over ranks 2…K, the burn."""

from __future__ import annotations

import itertools
import math
import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.arena.competition.models import RaceResult
from shoparena.arena.competition.weights import WeightsError, race_weights, rank_results, tail_fractions
from shoparena.arena.config import CompetitionConfig

T0 = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
CONFIG = CompetitionConfig()


def racer(uid: int | None, score: float, *, minutes: int = 0, hotkey: str | None = None) -> RaceResult:
    return RaceResult(
        hotkey=hotkey or f"hk-{uid}",
        uid=uid,
        submission_id=f"sub-{hotkey or uid}",
        score=score,
        success_rate=score,
        submitted_at=T0 + timedelta(minutes=minutes),
    )


def test_default_shares_for_six_racers() -> None:
    # N = 6 → K = 3: rank 2 and rank 3 share 0.25 as 2:1; ranks 4–6 earn nothing.
    results = [
        racer(uid, score) for uid, score in [(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6), (5, 0.5), (6, 0.4)]
    ]
    vector = race_weights(results, crowned_uid=1, config=CONFIG, race_id="r1")
    assert vector.race_id == "r1" and vector.source == "race"
    assert vector.as_dict() == {
        0: pytest.approx(0.5),
        1: 0.25,
        2: pytest.approx(0.25 * 2 / 3),
        3: pytest.approx(0.25 / 3),
    }
    assert vector.uids == [0, 1, 2, 3]
    assert sum(vector.weights) == 1.0


def test_crowned_incumbent_ranked_below_a_challenger_keeps_the_crown_share() -> None:
    # Hysteresis kept the incumbent (uid 7, second by score): the challenger takes rank 2, not the crown.
    results = [racer(3, 0.81), racer(7, 0.80), racer(4, 0.5), racer(5, 0.4), racer(6, 0.3), racer(8, 0.2)]
    weights = race_weights(results, crowned_uid=7, config=CONFIG, race_id=None).as_dict()
    assert weights[7] == 0.25
    assert weights[3] == pytest.approx(0.25 * 2 / 3)
    assert weights[4] == pytest.approx(0.25 / 3)
    assert 5 not in weights and 6 not in weights and 8 not in weights


def test_no_racers_pays_only_the_crown() -> None:
    vector = race_weights([], crowned_uid=5, config=CONFIG, race_id="r")
    assert vector.as_dict() == {0: 0.75, 5: 0.25}


def test_no_racers_and_no_crown_burns_everything() -> None:
    vector = race_weights([], crowned_uid=None, config=CONFIG, race_id="r")
    assert vector.as_dict() == {0: 1.0}


@pytest.mark.parametrize("n", [1, 2, 3])
def test_fewer_than_four_racers_pay_no_tail(n: int) -> None:
    results = [racer(uid, 0.9 - uid / 10) for uid in range(1, n + 1)]
    assert race_weights(results, crowned_uid=1, config=CONFIG, race_id=None).as_dict() == {0: 0.75, 1: 0.25}


def test_four_racers_pay_the_whole_tail_to_rank_two() -> None:
    results = [racer(uid, 0.9 - uid / 10) for uid in range(1, 5)]
    assert race_weights(results, crowned_uid=1, config=CONFIG, race_id=None).as_dict() == {
        0: 0.5,
        1: 0.25,
        2: 0.25,
    }


def test_crowned_not_among_the_ranked_still_earns_and_the_finishers_start_at_rank_two() -> None:
    # The incumbent (uid 9) did not race; N = 4 → K = 2: the best finisher takes rank 2.
    results = [racer(uid, 0.9 - uid / 10) for uid in range(1, 5)]
    assert race_weights(results, crowned_uid=9, config=CONFIG, race_id=None).as_dict() == {
        0: 0.5,
        1: 0.25,
        9: 0.25,
    }


def test_shares_of_racers_without_a_uid_burn() -> None:
    results = [racer(1, 0.9), racer(None, 0.8, hotkey="no-uid"), racer(3, 0.7), racer(4, 0.6)]
    assert race_weights(results, crowned_uid=1, config=CONFIG, race_id=None).as_dict() == {0: 0.75, 1: 0.25}


def test_a_crown_on_the_burn_uid_is_burnt() -> None:
    # Stated rule (issue 23): registration keeps miners off the burn uid; one an older arena holds is
    # burnt, never refused (a refusal stalled every later race).
    assert race_weights([racer(0, 0.9)], crowned_uid=0, config=CONFIG, race_id=None).as_dict() == {0: 1.0}


def test_a_crowned_racer_without_a_uid_takes_no_tail_rank() -> None:
    results = [racer(None, 0.9, hotkey="crowned"), racer(2, 0.8), racer(3, 0.7), racer(4, 0.6)]
    weights = race_weights(results, None, CONFIG, race_id=None, crowned_hotkey="crowned").as_dict()
    assert weights == {0: pytest.approx(0.75), 2: pytest.approx(0.25)}


def test_a_hotkey_or_uid_racing_twice_is_refused() -> None:
    with pytest.raises(WeightsError, match="hk-1 appears twice"):
        race_weights([racer(1, 0.9), racer(1, 0.8)], crowned_uid=None, config=CONFIG, race_id=None)
    with pytest.raises(WeightsError, match="uid 2 belongs to both a and b"):
        race_weights(
            [racer(2, 0.9, hotkey="a"), racer(2, 0.8, hotkey="b")],
            crowned_uid=None,
            config=CONFIG,
            race_id=None,
        )


def test_ties_go_to_the_earlier_submission_then_the_submission_id() -> None:
    late, early = racer(2, 0.5, minutes=10), racer(3, 0.5, minutes=5)
    same_a, same_b = racer(5, 0.5, minutes=5, hotkey="b"), racer(4, 0.5, minutes=5, hotkey="a")
    same_a = same_a.model_copy(update={"submission_id": "s-1"})
    same_b = same_b.model_copy(update={"submission_id": "s-2"})
    # The page's order (rules.rank) and the weights' are one: hotkey "a" does not jump ahead of "s-1".
    assert [r.uid for r in rank_results([late, same_b, early, same_a])] == [5, 4, 3, 2]


def test_custom_shares_and_burn_uid() -> None:
    config = CompetitionConfig(winner_share=0.6, tail_share=0.4, burn_uid=10)
    results = [racer(uid, 1 - uid / 10) for uid in range(1, 9)]  # N = 8 → K = 4: 3:2:1
    weights = race_weights(results, crowned_uid=1, config=config, race_id=None).as_dict()
    assert weights == {
        1: 0.6,
        2: pytest.approx(0.2),
        3: pytest.approx(0.4 / 3),
        4: pytest.approx(0.2 / 3),
        10: weights[10],
    }
    assert weights[10] == pytest.approx(0.0, abs=1e-15)
    assert sum(race_weights(results, crowned_uid=1, config=config, race_id=None).weights) == 1.0


def test_tail_fractions_descend_and_sum_to_one() -> None:
    assert tail_fractions(0) == tail_fractions(1) == []
    assert tail_fractions(2) == [1.0]
    assert tail_fractions(5) == [0.4, 0.3, 0.2, 0.1]


# -- properties --------------------------------------------------------------------------------------

shares = st.tuples(st.floats(0, 1), st.floats(0, 1)).filter(lambda s: s[0] + s[1] <= 1)


@st.composite
def races(draw):
    n = draw(st.integers(0, 24))
    uids = draw(st.lists(st.integers(1, 300), min_size=n, max_size=n, unique=True))
    results = [
        racer(
            uid if draw(st.integers(0, 9)) else None,
            draw(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]) | st.floats(0, 1)),
            minutes=draw(st.integers(0, 3)),
            hotkey=f"hk{i:02d}",
        )
        for i, uid in enumerate(uids)
    ]
    winner, tail = draw(shares)
    config = CompetitionConfig(winner_share=winner, tail_share=tail, burn_uid=draw(st.sampled_from([0, 301])))
    crowned = draw(
        st.none() | st.sampled_from([r.uid for r in results if r.uid is not None] or [None]) | st.just(400)
    )
    return results, crowned, config


@settings(max_examples=150, deadline=None)
@given(races(), st.randoms(use_true_random=False))
def test_properties(race, rng: random.Random) -> None:
    results, crowned, config = race
    vector = race_weights(results, crowned, config, race_id="p")
    weights = vector.as_dict()
    assert math.fsum(vector.weights) == 1.0
    assert abs(sum(vector.weights) - 1.0) <= 2 * math.ulp(1.0)
    assert all(w >= 0 for w in vector.weights)
    assert vector.uids == sorted(vector.uids) and config.burn_uid in weights
    if crowned is not None and config.winner_share > 0:
        assert weights[crowned] == config.winner_share
    # Every paid uid raced or wears the crown; the crown's share is exact.
    assert set(weights) <= {r.uid for r in results} | {crowned, config.burn_uid}
    # Monotone in rank: among the non-crowned finishers with a uid, a better rank never earns less.
    finishers = [r for r in rank_results(results) if r.uid is not None and r.uid != crowned]
    earned = [weights.get(r.uid, 0.0) for r in finishers]
    assert all(a >= b for a, b in itertools.pairwise(earned))
    # At most K − 1 finishers besides the crown are paid.
    assert len([w for w in earned if w > 0]) <= max(0, len(results) // 2 - 1)
    # Deterministic under permutation of the input.
    shuffled = list(results)
    rng.shuffle(shuffled)
    assert race_weights(shuffled, crowned, config, race_id="p") == vector
