"""Suite metrics (SPEC §4): ASR, CAR, per-axis means, gt rate, format, length, pass@k, CIs, judge coefficient.

Every headline number carries a seeded percentile bootstrap interval over episodes: suites are small
(30–250 problems per bucket), and a two-point ASR gap between agents is often noise; reports must say so.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from shoparena.problems.models import BUCKETS
from shoparena.scoring.rules import AXES, ProblemScore

METRICS: tuple[str, ...] = ("asr", "car", "gt_rate", *(f"{a}_mean" for a in AXES), "format_score", "length")
"""Every number `aggregate` reports per bucket and overall."""


class MetricValue(BaseModel):
    """A mean with its bootstrap interval; `n` = episodes it is defined on (None value when n = 0)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0


class GroupMetrics(BaseModel):
    n: int
    metrics: dict[str, MetricValue]

    def value(self, name: str) -> float | None:
        return self.metrics[name].value


class SuiteMetrics(BaseModel):
    """Per bucket (in BUCKETS order, present ones only) and overall (= count-weighted bucket means)."""

    overall: GroupMetrics
    buckets: dict[str, GroupMetrics]
    confidence: float
    n_bootstrap: int
    seed: int


def episode_values(score: ProblemScore) -> list[float]:
    """One row of the metric matrix (NaN where a metric does not apply to this episode)."""
    nan = math.nan
    row = [float(score.success), score.rule, score.gold_rate]
    for axis in AXES:
        ratio = score.axis_ratio(axis)
        row.append(nan if ratio is None else ratio)
    row.append(nan if score.format_ok is None else float(score.format_ok))
    row.append(episode_length(score))
    return row


def episode_length(score: ProblemScore) -> float:
    """1/steps when the episode ended with `terminate`, 0 when it did not, NaN when unknown."""
    if score.terminated is None:
        return math.nan
    if not score.terminated:
        return 0.0
    if not score.steps:
        return math.nan
    return 1.0 / score.steps


def _nanmean_columns(matrix: np.ndarray) -> np.ndarray:
    counts = np.sum(~np.isnan(matrix), axis=-2)
    sums = np.nansum(matrix, axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _group(matrix: np.ndarray, n_bootstrap: int, confidence: float, rng: np.random.Generator) -> GroupMetrics:
    n = matrix.shape[0]
    means = _nanmean_columns(matrix)
    counts = np.sum(~np.isnan(matrix), axis=0)
    lows = highs = np.full(matrix.shape[1], np.nan)
    if n and n_bootstrap > 0:
        boot = np.empty((n_bootstrap, matrix.shape[1]))
        for start in range(0, n_bootstrap, 256):
            stop = min(start + 256, n_bootstrap)
            picks = rng.integers(0, n, size=(stop - start, n))
            boot[start:stop] = _nanmean_columns(matrix[picks])
        alpha = (1 - confidence) / 2
        with np.errstate(invalid="ignore"):
            lows = np.nanquantile(boot, alpha, axis=0) if n else lows
            highs = np.nanquantile(boot, 1 - alpha, axis=0) if n else highs
    metrics = {}
    for column, name in enumerate(METRICS):
        if counts[column] == 0:
            metrics[name] = MetricValue(value=None, n=0)
            continue
        metrics[name] = MetricValue(
            value=float(means[column]),
            low=float(lows[column]) if not np.isnan(lows[column]) else None,
            high=float(highs[column]) if not np.isnan(highs[column]) else None,
            n=int(counts[column]),
        )
    return GroupMetrics(n=n, metrics=metrics)


def aggregate(
    scores: Sequence[ProblemScore], n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0
) -> SuiteMetrics:
    """Metrics per bucket and overall, each with a percentile bootstrap interval (seeded: reproducible)."""
    import warnings

    rng = np.random.default_rng(seed)
    matrix = np.array([episode_values(s) for s in scores], dtype=float).reshape(len(scores), len(METRICS))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        overall = _group(matrix, n_bootstrap, confidence, rng)
        buckets = {}
        present = {s.bucket for s in scores}
        for bucket in [b for b in BUCKETS if b in present] + sorted(present - set(BUCKETS)):
            rows = np.array([i for i, s in enumerate(scores) if s.bucket == bucket])
            buckets[bucket] = _group(matrix[rows], n_bootstrap, confidence, rng)
    return SuiteMetrics(
        overall=overall, buckets=buckets, confidence=confidence, n_bootstrap=n_bootstrap, seed=seed
    )


# -- pass@k ---------------------------------------------------------------------------------------


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c successes: 1 − C(n−c, k) / C(n, k) (Chen et al. 2021)."""
    if not 0 <= c <= n:
        raise ValueError(f"successes c={c} must be within 0..n={n}")
    if k < 1 or n < k:
        raise ValueError(f"pass@{k} needs n ≥ k ≥ 1 samples, got n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


class PassAtK(BaseModel):
    k: int
    value: MetricValue
    n_problems: int
    excluded: int
    """Problems with fewer than k samples: left out, never padded."""


def suite_pass_at_k(
    scores: Sequence[ProblemScore],
    k: int,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PassAtK:
    """Mean pass@k over problems (samples grouped by problem_id), with a bootstrap over problems."""
    samples: dict[str, list[bool]] = defaultdict(list)
    for score in scores:
        samples[score.problem_id].append(score.success)
    values = []
    excluded = 0
    for outcomes in samples.values():
        if len(outcomes) < k:
            excluded += 1
            continue
        values.append(pass_at_k(len(outcomes), sum(outcomes), k))
    if not values:
        return PassAtK(k=k, value=MetricValue(value=None), n_problems=0, excluded=excluded)
    array = np.array(values)
    rng = np.random.default_rng(seed)
    low = high = None
    if n_bootstrap > 0:
        boot = array[rng.integers(0, len(array), size=(n_bootstrap, len(array)))].mean(axis=1)
        alpha = (1 - confidence) / 2
        low, high = float(np.quantile(boot, alpha)), float(np.quantile(boot, 1 - alpha))
    value = MetricValue(value=float(array.mean()), low=low, high=high, n=len(array))
    return PassAtK(k=k, value=value, n_problems=len(array), excluded=excluded)


# -- the arena's judge coefficient ----------------------------------------------------------------

JUDGE_FULL_CREDIT_QUALITY = 0.8


def judge_coefficient(quality: float) -> float:
    """1 at q ≥ 0.8, else 0.3 + 0.7·q/0.8: reasoning quality scales, but never zeroes, task success."""
    if not 0 <= quality <= 1:
        raise ValueError(f"judge quality must be within [0, 1], got {quality}")
    # q is a mean of the levels 0.1…0.9; float summation can land a hair under 0.8 for a mix that
    # is exactly 0.8, so compare at a precision far below the levels' spacing.
    quality = round(quality, 9)
    if quality >= JUDGE_FULL_CREDIT_QUALITY:
        return 1.0
    return 0.3 + 0.7 * quality / JUDGE_FULL_CREDIT_QUALITY


def arena_final_score(success_rate: float, mean_quality: float) -> float:
    """The arena's score: success rate × judge coefficient of the mean judge quality."""
    if not 0 <= success_rate <= 1:
        raise ValueError(f"success rate must be within [0, 1], got {success_rate}")
    return success_rate * judge_coefficient(mean_quality)
