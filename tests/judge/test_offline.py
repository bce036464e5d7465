"""The offline judge's gates on real trajectories (catalogue + harness), including fabrication."""

from __future__ import annotations

import pytest

from shoparena.judge import OfflineJudge, RuleSettings, judge_record, make_judge
from shoparena.judge.trace import read_trace
from shoparena.records.trajectory import TokenUsage
from shoparena.records.verdict import ANALYSES_RESULTS, CITES_DATUM, COMPARES_CANDIDATES, PASSED, REASONED
from tests.judge.conftest import Scenario, build_trace, fresh_words

EXPECTED_GATE = {
    0.1: REASONED,
    0.3: ANALYSES_RESULTS,
    0.5: CITES_DATUM,
    0.7: COMPARES_CANDIDATES,
    0.9: PASSED,
}


@pytest.mark.parametrize("quality", [0.1, 0.3, 0.5, 0.7, 0.9])
def test_crafted_trace_lands_on_its_score(judge_catalog, quality):
    record = build_trace(judge_catalog, quality)
    verdict = make_judge("offline")(record)
    assert verdict.quality == quality, verdict.explanation
    assert verdict.gate == EXPECTED_GATE[quality]
    assert verdict.judge_model == "offline" and verdict.judge_version
    view = read_trace(record)
    for span in verdict.cited_spans:  # every cited span is the model's own text, verbatim
        assert any(by_model for *_, by_model in view.occurrences(span))
    assert judge_record(record) == verdict  # deterministic, and the default judge is offline
    assert record.judge is None  # judging does not change the record


def test_code_only_calls_fail_gate_one_even_with_text(scenario):
    results = scenario.code_call("find_product", {"q": "wireless earbuds"}).result
    scenario.turn(
        f"Comparing {results[0]['product_id']} at {results[0]['price']} with {results[1]['product_id']} at "
        f"{results[1]['price']}, the first is cheaper so it is better for a long daily commute by train."
    )
    verdict = OfflineJudge()(scenario.record())
    assert verdict.quality == 0.1
    assert "code-origin" in verdict.explanation


def test_too_little_text_or_too_few_tokens_fail_gate_one(judge_catalog):
    short = Scenario(judge_catalog)
    results = short.search("search")
    short.finish("ok", results[0]["product_id"])
    assert OfflineJudge()(short.record()).gate == REASONED

    rich = build_trace(judge_catalog, 0.9)
    starved = rich.model_copy(update={"usage": TokenUsage(completion_tokens=10, model_calls=3)})
    assert OfflineJudge()(starved).gate == REASONED
    # more words than the reported tokens could have produced: the text did not come from that inference
    words = read_trace(rich).reasoning_words()
    thin = rich.model_copy(update={"usage": TokenUsage(completion_tokens=words // 2 - 1, model_calls=3)})
    verdict = OfflineJudge(RuleSettings(min_completion_tokens=10))(thin)
    assert verdict.gate == REASONED and "not produced" in verdict.explanation
    # usage not reported: text alone decides, unless the settings require reported inference
    unreported = rich.model_copy(update={"usage": TokenUsage()})
    assert OfflineJudge()(unreported).quality == 0.9
    assert OfflineJudge(RuleSettings(require_usage=True))(unreported).gate == REASONED


def test_fabricated_price_fails_gate_three(scenario):
    results = scenario.search()
    first = results[0]
    w1, w2 = fresh_words(results, scenario.query)
    seen = {round(hit["price"] * 100) for hit in results}
    fake = 123457.89
    assert round(fake * 100) not in seen
    scenario.finish(
        f"The {w1} pair {first['product_id']} with {w2} is priced at {fake}, a bargain for the commute "
        "compared with everything else I saw in these listings today.",
        first["product_id"],
    )
    verdict = OfflineJudge()(scenario.record())
    assert verdict.gate == CITES_DATUM and verdict.quality == 0.5
    assert f"price {fake}" in verdict.explanation


def test_fabricated_id_fails_gate_three(scenario):
    results = scenario.search()
    w1, w2 = fresh_words(results, scenario.query)
    scenario.finish(
        f"Among the {w1} options with {w2}, product 99999999017 costs {results[0]['price']} and is the "
        "one I would pick for a daily commute on the train.",
        results[0]["product_id"],
    )
    verdict = OfflineJudge()(scenario.record())
    assert verdict.gate == CITES_DATUM and "id 99999999017" in verdict.explanation


def test_rounded_prices_and_sums_are_not_fabrications(scenario):
    results = scenario.search()
    a, b = results[0], results[1]
    total = round(a["price"] + b["price"], 2)
    w1, w2 = fresh_words(results, scenario.query)
    scenario.finish(
        f"{a['product_id']} ({w1}) costs {a['price']:,.2f} while {b['product_id']} ({w2}) costs "
        f"{b['price']}; buying both would total {total}, but {a['product_id']} alone is the better value.",
        a["product_id"],
    )
    assert OfflineJudge()(scenario.record()).quality == 0.9


def test_data_come_from_the_verified_log_not_the_trace(judge_catalog):
    """A tool message edited after the fact cannot make a made-up price count as seen."""
    sc = Scenario(judge_catalog)
    results = sc.search()
    w1, w2 = fresh_words(results, sc.query)
    fake = 4321.09
    sc.finish(
        f"The {w1} pair {results[0]['product_id']} with {w2} is priced at {fake}, the best I saw here for "
        "a daily commute, well worth it for the money today.",
        results[0]["product_id"],
    )
    record = sc.record()
    messages = [dict(m) for m in record.messages]
    tool = next(m for m in messages if m.get("role") == "tool")
    tool["content"] = tool["content"].replace(str(results[0]["price"]), str(fake), 1)
    tampered = record.model_copy(update={"messages": messages})
    assert str(fake) in tool["content"]
    assert OfflineJudge()(tampered).gate == CITES_DATUM


def test_a_tool_message_without_a_logged_call_shows_nothing(judge_catalog):
    record = build_trace(judge_catalog, 0.9)
    calls = [c for c in record.calls if c.name != "find_product"]
    verdict = OfflineJudge()(record.model_copy(update={"calls": calls}))
    assert verdict.quality <= 0.3


def test_numbers_the_turn_sends_as_arguments_are_not_fabrications(scenario):
    """A model may say which filter it is about to send ("price 0-2500") in the same message."""
    scenario.turn(
        "I will search with the filter price 0-2500 so every hit already fits the budget.",
        "find_product",
        {"q": "wireless earbuds", "price": "0-2500"},
    )
    results = scenario.search()
    a, b = results[0], results[1]
    w1, w2 = fresh_words(results, scenario.query)
    scenario.finish(
        f"{a['product_id']} ({w1}) costs {a['price']} while {b['product_id']} ({w2}) costs {b['price']}; "
        f"{a['product_id']} is the better value for the daily commute, so I choose it.",
        a["product_id"],
    )
    verdict = OfflineJudge()(scenario.record())
    assert "price 0" not in verdict.explanation and verdict.quality == 0.9


def test_a_basket_total_of_cited_prices_is_arithmetic_not_invention(scenario):
    results = scenario.search()
    a, b, c = results[0], results[1], results[2]
    w1, w2 = fresh_words(results, scenario.query)
    total = round(a["price"] + b["price"] + c["price"], 2)
    scenario.finish(
        f"{a['product_id']} ({w1}) costs {a['price']}, {b['product_id']} ({w2}) costs {b['price']} and "
        f"{c['product_id']} costs {c['price']}; the basket would total {total}, so {a['product_id']} alone "
        "is the better value for the commute.",
        a["product_id"],
    )
    assert OfflineJudge()(scenario.record()).quality == 0.9


def test_a_total_that_no_cited_prices_add_up_to_is_still_caught(scenario):
    results = scenario.search()
    a, b = results[0], results[1]
    w1, w2 = fresh_words(results, scenario.query)
    wrong = round(a["price"] + b["price"] + 1234.56, 2)
    scenario.finish(
        f"{a['product_id']} ({w1}) costs {a['price']} and {b['product_id']} ({w2}) costs {b['price']}; "
        f"together they total {wrong}, so {a['product_id']} alone is the better value.",
        a["product_id"],
    )
    verdict = OfflineJudge()(scenario.record())
    assert verdict.quality == 0.5 and f"price {wrong}" in verdict.explanation
