"""The `subnet` weight profile against a table computed by hand from SN15's published rule
(ORO-AI/oro `subnet/validator/weight_distribution.py`): t_top = 0.25, t_burn = 0.75, the burn pinned at
65535, total = (65535 + tail) / 0.75, top = round(0.25 × total), ranks 2…K paid K−1…1 units, K = ⌊N/2⌋,
N ≤ 1 burns all, ties by agent version (submission) id ascending, hotkeys not on the metagraph
dropped, a top on uid 0 additive."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from shoparena.arena.competition.chain.u16 import to_u16
from shoparena.arena.competition.models import RaceResult
from shoparena.arena.competition.weights import WeightsError, race_weights, subnet_u16
from shoparena.arena.config import CompetitionConfig

SUBNET = CompetitionConfig(weights="subnet")
T0 = datetime(2026, 11, 2, tzinfo=UTC)


def racer(uid: int | None, score: float, sid: str | None = None, minutes: int = 0) -> RaceResult:
    return RaceResult(
        hotkey=f"hk-{sid or uid}",
        uid=uid,
        submission_id=sid or f"sub-{uid:03d}",
        score=score,
        success_rate=score,
        submitted_at=T0 + timedelta(minutes=minutes),
    )


def field(n: int) -> list[RaceResult]:
    """N racers on uids 1…N, uid 1 best."""
    return [racer(uid, 1 - uid / 100) for uid in range(1, n + 1)]


TABLE = [
    # (case, racers, expected u16 per uid)
    ("N = 0 burns all", [], {0: 65535}),
    ("N = 1 burns all", field(1), {0: 65535}),
    ("N = 2: K = 1, no tail; 0.25 × 65535 / 0.75", field(2), {0: 65535, 1: 21845}),
    ("N = 3: K = 1", field(3), {0: 65535, 1: 21845}),
    ("N = 4: K = 2, tail 1; round(0.25 × 65536 / 0.75)", field(4), {0: 65535, 1: 21845, 2: 1}),
    ("N = 6: K = 3, tail 2 + 1", field(6), {0: 65535, 1: 21846, 2: 2, 3: 1}),
    ("N = 10: K = 5, tail 4+3+2+1", field(10), {0: 65535, 1: 21848, 2: 4, 3: 3, 4: 2, 5: 1}),
    (
        "N = 4, the top has no uid: dropped, the burn alone pinned",
        [racer(None, 0.9, "a"), racer(2, 0.8), racer(3, 0.7), racer(4, 0.6)],
        {0: 65535, 2: 1},
    ),
    (
        "N = 6, rank 2 has no uid: top re-pinned to the tail paid (1)",
        [racer(1, 0.99), racer(None, 0.98, "b"), *field(6)[2:]],
        {0: 65535, 1: 21845, 3: 1},
    ),
    (
        "ties: submission id ascending, not submission time",
        [racer(7, 0.5, "z", minutes=0), racer(8, 0.5, "a", minutes=9), racer(9, 0.1), racer(10, 0.0)],
        {0: 65535, 8: 21845, 7: 1},
    ),
    ("a top on the burn uid adds to it", [racer(0, 0.9), racer(2, 0.8)], {0: 65535 + 21845}),
]


@pytest.mark.parametrize(("case", "results", "expected"), TABLE, ids=[row[0] for row in TABLE])
def test_the_subnet_profile_matches_the_published_rule(case, results, expected) -> None:
    assert subnet_u16(results, SUBNET) == expected
    vector = race_weights(results, crowned_uid=None, config=SUBNET, race_id="r")
    total = sum(expected.values())
    assert vector.as_dict() == pytest.approx({uid: value / total for uid, value in expected.items()})
    assert math.fsum(vector.weights) == 1.0
    # What the chain stores: the u16 conversion gives the very integers back (scaled to a 65535 max).
    emitted = to_u16(vector.uids, vector.weights)
    top = max(expected.values())
    assert dict(zip(emitted.uids, emitted.values, strict=True)) == {
        uid: round(value / top * 65535) for uid, value in expected.items()
    }


def test_the_top_share_is_exactly_a_quarter_whatever_n() -> None:
    for n in range(2, 60):
        weights = race_weights(field(n), None, SUBNET, race_id=None).as_dict()
        assert weights[1] == pytest.approx(0.25, abs=1e-5)
        assert sum(w for uid, w in weights.items() if uid != 1) == pytest.approx(0.75, abs=1e-5)


def test_the_subnet_profile_pays_race_rank_one_not_the_crown() -> None:
    # The subnet's weight setter pays the race's rank 1; hysteresis decides the crown, not the weights.
    assert race_weights(field(2), crowned_uid=2, config=SUBNET, race_id=None).as_dict()[1] == pytest.approx(
        0.25
    )


def test_a_top_share_past_a_half_is_refused() -> None:
    with pytest.raises(WeightsError, match="winner_share"):
        race_weights(
            field(2), None, CompetitionConfig(weights="subnet", winner_share=0.6, tail_share=0), None
        )
