"""The race's pure rules: commitment, race score, stake-weighted median, promotion with hysteresis,
cancellation and the code embargo across both DST switches."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shoparena.arena.competition.models import RaceResult
from shoparena.arena.competition.rules import (
    cancellation,
    challenge_margin,
    code_release_at,
    final_score,
    new_seed,
    promotion,
    rank,
    seed_commitment,
    stake_weighted_median,
)

LA = ZoneInfo("America/Los_Angeles")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
unit = st.floats(min_value=0, max_value=1, allow_nan=False)


def racer(hotkey: str, score: float, minutes: int = 0) -> RaceResult:
    return RaceResult(
        hotkey=hotkey,
        uid=None,
        submission_id=f"sub-{hotkey}",
        score=score,
        success_rate=score,
        submitted_at=T0 + timedelta(minutes=minutes),
    )


@given(st.text())
def test_the_commitment_is_the_sha256_of_the_seeds_utf8_text(seed):
    assert seed_commitment(seed) == hashlib.sha256(seed.encode("utf-8")).hexdigest()


def test_new_seeds_are_fresh_and_commit_to_64_hex_digits():
    seeds = {new_seed() for _ in range(50)}
    assert len(seeds) == 50
    assert all(len(seed_commitment(seed)) == 64 for seed in seeds)


@given(unit, unit)
def test_the_strict_score_is_success_rate_times_coefficient(rate, coefficient):
    assert final_score(rate, coefficient) == pytest.approx(rate * coefficient)


@given(unit, unit, unit, unit)
def test_richness_takes_its_share_and_stays_in_range(rate, coefficient, richness, share):
    score = final_score(rate, coefficient, richness, share)
    assert 0 <= score <= 1
    assert score == pytest.approx((1 - share) * rate * coefficient + share * richness)


def test_a_score_the_judge_never_vouched_for_is_zero():
    assert final_score(1.0, None) == 0.0
    with pytest.raises(ValueError, match="success_rate"):
        final_score(1.5, 1.0)


@given(st.lists(st.tuples(unit, st.floats(min_value=0.01, max_value=100)), min_size=1, max_size=12))
def test_the_weighted_median_is_one_of_the_values_and_splits_the_stake(pairs):
    values, stakes = [v for v, _ in pairs], [s for _, s in pairs]
    median = stake_weighted_median(values, stakes)
    assert median in values
    total = sum(stakes)
    assert sum(s for v, s in pairs if v <= median) >= total / 2 - 1e-9
    assert sum(s for v, s in pairs if v < median) < total / 2 + 1e-9


@given(unit, unit, st.floats(min_value=0, max_value=1))
def test_a_minority_of_stake_cannot_move_the_median(honest, dishonest, liar_value):
    # two honest validators holding 2/3 of the stake agree on `honest`; the liar says anything
    assert stake_weighted_median([honest, honest, liar_value], [10, 10, 10]) == honest
    assert stake_weighted_median([honest, liar_value], [20, 10]) == honest


def test_the_median_without_stake_counts_everyone_equally():
    assert stake_weighted_median([0.1, 0.5, 0.9], [0, 0, 0]) == 0.5
    with pytest.raises(ValueError):
        stake_weighted_median([], [])


def test_no_incumbent_crowns_the_top_racer():
    result = promotion([racer("a", 0.3), racer("b", 0.6)], None, 0.02)
    assert (result.winner, result.promoted) == ("b", True)


def test_a_challenger_must_beat_the_incumbent_by_more_than_the_margin():
    inside = promotion([racer("inc", 0.50), racer("c", 0.52)], "inc", 0.02)
    assert (inside.winner, inside.promoted) == ("inc", False)
    beyond = promotion([racer("inc", 0.50), racer("c", 0.53)], "inc", 0.02)
    assert (beyond.winner, beyond.promoted, beyond.winner_submission_id) == ("c", True, "sub-c")


def test_ties_go_to_the_earlier_submission():
    early, late = racer("early", 0.5, minutes=0), racer("late", 0.5, minutes=5)
    assert [r.hotkey for r in rank([late, early])] == ["early", "late"]
    assert promotion([late, early], None, 0.0).winner == "early"
    # with no margin a tie never dethrones the incumbent
    assert promotion([late, early], "late", 0.0).winner == "late"


def test_an_incumbent_that_did_not_race_loses_the_crown_to_the_top_racer():
    result = promotion([racer("c", 0.1)], "gone", 0.5)
    assert (result.winner, result.promoted) == ("c", True)
    assert "did not race" in result.reason


@given(st.lists(unit, min_size=1, max_size=8), unit)
def test_the_winner_is_the_incumbent_or_beats_it_by_the_margin(scores, margin):
    racers = [racer(f"h{i}", score, minutes=i) for i, score in enumerate(scores)]
    result = promotion(racers, "h0", margin)
    by_hotkey = {r.hotkey: r for r in racers}
    if result.promoted:
        assert by_hotkey[result.winner].score > by_hotkey["h0"].score + margin
    else:
        assert result.winner == "h0"


def test_cancellation_reasons():
    assert cancellation(2, 2, 0, 10, 0.5) is None
    assert "at least 3" in cancellation(2, 3, 0, 10, 0.5)
    assert cancellation(3, 1, 5, 10, 0.5) is None  # exactly half is not more than half
    assert "6 of 10 judge calls failed" in cancellation(3, 1, 6, 10, 0.5)
    assert cancellation(1, 1, 0, 0, 0.5) is None


def local(*args) -> datetime:
    return datetime(*args, tzinfo=LA)


@pytest.mark.parametrize(
    ("promoted", "released"),
    [
        (local(2026, 3, 4, 9, 0), local(2026, 3, 4, 12, 0)),  # Wednesday morning → same day noon
        (local(2026, 3, 4, 12, 0), local(2026, 3, 5, 12, 0)),  # strictly after: noon → next day
        (
            local(2026, 3, 6, 13, 0),
            local(2026, 3, 9, 12, 0),
        ),  # Friday after noon → Monday (across spring DST)
        (local(2026, 3, 7, 10, 0), local(2026, 3, 9, 12, 0)),  # Saturday → Monday
        (local(2026, 3, 8, 1, 30), local(2026, 3, 9, 12, 0)),  # Sunday, just before the switch
        (local(2026, 10, 30, 15, 0), local(2026, 11, 2, 12, 0)),  # Friday after noon → Monday (autumn DST)
        (local(2026, 10, 31, 23, 0), local(2026, 11, 2, 12, 0)),  # Saturday → Monday
    ],
)
def test_code_is_released_at_the_next_weekday_noon_in_los_angeles(promoted, released):
    at = code_release_at(promoted.astimezone(UTC))
    assert at.tzinfo == UTC
    assert at == released.astimezone(UTC)
    assert at.astimezone(LA).hour == 12


def test_the_release_instant_moves_with_dst():
    before = code_release_at(local(2026, 3, 6, 13, 0).astimezone(UTC))  # released Monday 9 March (PDT)
    assert before == datetime(2026, 3, 9, 19, 0, tzinfo=UTC)
    winter = code_release_at(local(2026, 3, 2, 9, 0).astimezone(UTC))  # Monday 2 March (PST)
    assert winter == datetime(2026, 3, 2, 20, 0, tzinfo=UTC)
    autumn = code_release_at(local(2026, 10, 30, 15, 0).astimezone(UTC))  # Monday 2 November (PST again)
    assert autumn == datetime(2026, 11, 2, 20, 0, tzinfo=UTC)


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)))
def test_the_release_is_a_weekday_noon_within_four_days_after(promoted):
    at = code_release_at(promoted)
    there = at.astimezone(LA)
    assert at > promoted
    assert (there.hour, there.minute, there.second) == (12, 0, 0)
    assert there.weekday() < 5
    assert at - promoted <= timedelta(days=3, hours=1)


def test_a_naive_time_is_refused():
    with pytest.raises(ValueError, match="timezone-aware"):
        code_release_at(datetime(2026, 1, 1))


def test_the_decaying_challenge_margin_halves_every_half_life() -> None:
    assert challenge_margin(0.04, 0, 7) == 0.04
    assert challenge_margin(0.04, 7, 7) == pytest.approx(0.02)
    assert challenge_margin(0.04, 14, 7) == pytest.approx(0.01)
    # A challenger 0.015 ahead loses to a fresh incumbent and wins against one crowned 14 races ago.
    incumbent, challenger = "inc", "chal"
    results = [racer(incumbent, 0.5), racer(challenger, 0.515)]
    assert promotion(results, incumbent, challenge_margin(0.04, 0, 7)).winner == incumbent
    assert promotion(results, incumbent, challenge_margin(0.04, 14, 7)).winner == challenger
    with pytest.raises(ValueError):
        challenge_margin(0.04, -1, 7)
