"""Suite metrics: hand-computed pass@k, the judge coefficient, bucket weighting, bootstrap intervals."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shoparena.scoring.metrics import (
    aggregate,
    arena_final_score,
    judge_coefficient,
    pass_at_k,
    suite_pass_at_k,
)
from shoparena.scoring.rules import AxisTally, ProblemScore


def episode(bucket="product", success=True, rule=None, pid=None, **kw) -> ProblemScore:
    rule = (1.0 if success else 0.0) if rule is None else rule
    return ProblemScore(
        problem_id=pid or f"{bucket}-{id(kw)}",
        bucket=bucket,
        mode="upstream",
        success=success,
        rule=rule,
        **kw,
    )


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 2 / 5),
        (5, 2, 2, 1 - 3 / 10),  # 1 − C(3,2)/C(5,2)
        (10, 3, 5, 1 - 21 / 252),  # 1 − C(7,5)/C(10,5)
        (4, 0, 2, 0.0),
        (5, 4, 2, 1.0),  # n − c < k: some pick of 2 always holds a success
        (8, 8, 8, 1.0),
    ],
)
def test_pass_at_k_hand_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_needs_enough_samples():
    with pytest.raises(ValueError, match="n ≥ k"):
        pass_at_k(2, 1, 3)
    with pytest.raises(ValueError, match="successes"):
        pass_at_k(2, 3, 1)


@given(n=st.integers(1, 30), data=st.data())
def test_pass_at_k_is_monotone_in_k_and_c(n, data):
    c = data.draw(st.integers(0, n))
    values = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(values))
    if c < n:
        assert pass_at_k(n, c, 1) <= pass_at_k(n, c + 1, 1)
    assert pass_at_k(n, c, 1) == pytest.approx(c / n)


def test_suite_pass_at_k_groups_samples_and_excludes_short_problems():
    scores = [episode(pid="a", success=s, sample=i) for i, s in enumerate([True, False, False, False])]
    scores += [episode(pid="b", success=s, sample=i) for i, s in enumerate([True, True, False, False])]
    scores += [episode(pid="c", success=True)]
    result = suite_pass_at_k(scores, 2, n_bootstrap=200)
    # a: 1 − C(3,2)/C(4,2) = 0.5; b: 1 − C(2,2)/C(4,2) = 5/6; c has one sample → left out
    assert result.value.value == pytest.approx((0.5 + 5 / 6) / 2)
    assert result.n_problems == 2 and result.excluded == 1
    assert result.value.low <= result.value.value <= result.value.high


def test_judge_coefficient_at_the_knee_and_zero():
    assert judge_coefficient(0.8) == 1.0
    assert judge_coefficient(0.95) == 1.0
    assert judge_coefficient(0.0) == pytest.approx(0.3)
    assert judge_coefficient(0.4) == pytest.approx(0.3 + 0.7 * 0.5)
    assert judge_coefficient(0.7999) < 1.0
    assert arena_final_score(0.5, 0.4) == pytest.approx(0.5 * 0.65)
    with pytest.raises(ValueError):
        judge_coefficient(1.2)


def test_overall_is_weighted_by_bucket_counts():
    scores = [episode("product", True), episode("product", True), episode("product", False)]
    scores += [episode("shop", False, rule=0.5)]
    result = aggregate(scores, n_bootstrap=0)
    assert result.buckets["product"].value("asr") == pytest.approx(2 / 3)
    assert result.buckets["shop"].value("asr") == 0.0
    assert result.overall.value("asr") == pytest.approx(0.5)  # 2 of 4, not the mean of 2/3 and 0
    assert result.overall.value("car") == pytest.approx(2.5 / 4)
    assert list(result.buckets) == ["product", "shop"]


def test_axis_means_only_over_episodes_with_that_axis():
    with_price = episode(axes={"price": AxisTally(hits=1, checks=2), "title": AxisTally(hits=1, checks=1)})
    without = episode(axes={"title": AxisTally(hits=0, checks=1)})
    result = aggregate([with_price, without], n_bootstrap=0)
    assert result.overall.value("price_mean") == 0.5 and result.overall.metrics["price_mean"].n == 1
    assert result.overall.value("title_mean") == 0.5
    assert result.overall.value("service_mean") is None


def test_format_and_length():
    scores = [
        episode(steps=4, terminated=True, format_ok=True),
        episode(steps=10, terminated=False, format_ok=False),
        episode(steps=2, terminated=True, format_ok=True),
    ]
    result = aggregate(scores, n_bootstrap=0)
    assert result.overall.value("format_score") == pytest.approx(2 / 3)
    assert result.overall.value("length") == pytest.approx((0.25 + 0 + 0.5) / 3)
    bare = aggregate([episode()], n_bootstrap=0)
    assert bare.overall.value("format_score") is None and bare.overall.value("length") is None


def test_bootstrap_intervals_are_seeded_and_bracket_the_value():
    scores = [episode(success=i % 3 == 0) for i in range(60)]
    first = aggregate(scores, n_bootstrap=500, seed=3)
    again = aggregate(scores, n_bootstrap=500, seed=3)
    other = aggregate(scores, n_bootstrap=500, seed=4)
    asr = first.overall.metrics["asr"]
    assert asr == again.overall.metrics["asr"]
    assert asr.low < asr.value < asr.high
    assert other.overall.metrics["asr"].low != asr.low or other.overall.metrics["asr"].high != asr.high
    # ±2 standard errors of a proportion is roughly where a 95% interval must fall
    se = math.sqrt(asr.value * (1 - asr.value) / 60)
    assert asr.high - asr.low == pytest.approx(4 * se, rel=0.35)
    certain = aggregate([episode() for _ in range(10)], n_bootstrap=200).overall.metrics["asr"]
    assert certain.low == certain.high == 1.0


def test_coefficient_gives_full_credit_to_a_mean_that_is_exactly_point_eight_in_decimal():
    from shoparena.scoring.metrics import judge_coefficient

    qualities = [0.5, 0.9, 0.9, 0.9, 0.7, 0.9]  # exactly 0.8 in decimal
    assert sum(qualities) / len(qualities) < 0.8  # …but 0.7999999999999999 in floats
    assert judge_coefficient(sum(qualities) / len(qualities)) == 1.0
    assert judge_coefficient(0.8 - 1e-6) < 1.0
