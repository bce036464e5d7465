"""The constraints an episode's view lists are the ones that decided it: a voucher episode's items from
several shops are no failure (the shop only decides whether a shop voucher applies, which `budget`
already checks), so a successful episode never shows a failing constraint."""

from __future__ import annotations

from shoparena.records.score import ScoreSummary
from shoparena.report.episodes import constraint_verdicts


def test_a_voucher_episode_from_several_shops_that_met_its_budget_fails_nothing():
    score = ScoreSummary(bucket="voucher", success=True, rule=1.0, shop=False, budget=True, answered=True,
                         product_ids=["1", "2"], title=1.0, title_hits=2, title_checks=2)  # fmt: skip
    verdicts = constraint_verdicts(score, None)
    assert [v.name for v in verdicts if not v.ok] == []
    assert "shop" not in [v.name for v in verdicts]


def test_a_shop_episode_from_several_shops_fails_shop():
    score = ScoreSummary(
        bucket="shop", success=False, rule=1.0, shop=False, answered=True, product_ids=["1", "2"]
    )
    assert [v.name for v in constraint_verdicts(score, None) if not v.ok] == ["shop"]
