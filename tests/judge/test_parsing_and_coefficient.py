"""Reading judge answers (thinking, prose, truncation) and the coefficient arithmetic at its boundaries."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.judge.jsonrepair import last_json_object, repair_truncated
from shoparena.judge.prompt import UnparseableVerdict, parse_claim
from shoparena.records.verdict import JudgeVerdict
from shoparena.scoring.judge_summary import mean_quality, summarize_verdicts
from shoparena.scoring.metrics import arena_final_score, judge_coefficient

QUALITIES = [0.1, 0.3, 0.5, 0.7, 0.9]


def test_last_object_after_thinking_wins():
    text = '<think>draft {"quality": 0.9}</think>prose {"quality": 0.3} then {"quality": 0.5, "gate": "cites_datum"}'
    assert last_json_object(text, "quality") == {"quality": 0.5, "gate": "cites_datum"}
    assert last_json_object('```json\n{"quality": 0.7}\n```', "quality") == {"quality": 0.7}
    assert last_json_object('<think>never closed {"quality": 0.9}', "quality") is None
    assert last_json_object("no object here", "quality") is None


def test_truncated_numbers_are_not_guessed():
    assert last_json_object('{"quality": 0.', "quality") is None
    assert last_json_object('{"quality": 0.7, "gate": "compares_cand', "quality") == {
        "quality": 0.7,
        "gate": "compares_cand",
    }
    assert repair_truncated('{"a": [1, 2, {"b": tr') == {"a": [1, 2, {}]}


def test_parse_claim_rules():
    assert (
        parse_claim('{"quality": "0.7", "gate": "passed"}').gate == "compares_candidates"
    )  # quality decides
    assert parse_claim('{"gate": "Cites datum", "quality": null}').gate == "cites_datum"
    claim = parse_claim(
        '{"quality": 0.9, "cited_spans": ["a b c d", {"gate": "cites_datum", "text": "x y z w"}, 3]}'
    )
    assert [(s.text, s.gate) for s in claim.spans] == [("a b c d", None), ("x y z w", "cites_datum")]
    for bad in ('{"quality": 0.85}', '{"quality": 2}', "{}", "great trajectory!"):
        with pytest.raises(UnparseableVerdict):
            parse_claim(bad)


verdicts = st.fixed_dictionaries(
    {
        "quality": st.sampled_from(QUALITIES),
        "gate": st.sampled_from(["reasoned", "analyses_results", "cites_datum", "passed"]),
        "explanation": st.text(max_size=60),
        "cited_spans": st.lists(
            st.fixed_dictionaries(
                {"gate": st.sampled_from(["cites_datum", "analyses_results"]), "span": st.text(max_size=30)}
            ),
            max_size=3,
        ),
    }
)


@settings(max_examples=150, deadline=None)
@given(
    verdict=verdicts,
    prefix=st.text(alphabet=st.characters(blacklist_characters="{}<>"), max_size=40),
    data=st.data(),
)
def test_any_truncation_after_quality_keeps_the_quality(verdict, prefix, data):
    text = json.dumps(verdict)
    comma = text.find(",", text.index('"quality"'))
    after_quality = comma + 1 if comma >= 0 else len(text)  # the comma shows the quality value was complete
    cut = data.draw(st.integers(min_value=after_quality, max_value=len(text)))
    answer = f"<think>{prefix}</think>{prefix}{text[:cut]}"
    parsed = last_json_object(answer, "quality")
    assert parsed is not None and parsed["quality"] == verdict["quality"]
    if cut == len(text):
        assert parsed == verdict


def _verdict(quality: float) -> JudgeVerdict:
    return JudgeVerdict(quality=quality, gate="x", explanation="", judge_model="m", judge_version="v")


def test_coefficient_boundaries():
    assert judge_coefficient(0.8) == 1.0
    assert judge_coefficient(0.0) == pytest.approx(0.3)
    assert judge_coefficient(0.4) == pytest.approx(0.65)
    assert arena_final_score(0.5, 0.8) == 0.5
    assert arena_final_score(0.5, 0.0) == pytest.approx(0.15)


def test_mean_quality_reaching_exactly_0_8_gets_full_credit():
    # 0.7/0.9 mixes whose float sums land a hair off 0.8
    for mix in ([0.7, 0.9], [0.9, 0.7] * 3, [0.9, 0.7, 0.9, 0.7, 0.9, 0.7, 0.7, 0.9, 0.9, 0.7]):
        q = mean_quality(_verdict(x) for x in mix)
        assert q == 0.8 and judge_coefficient(q) == 1.0
    assert mean_quality([None, None]) is None


@given(st.lists(st.one_of(st.none(), st.sampled_from(QUALITIES)), max_size=30), st.floats(0, 1))
def test_summary_is_consistent(qualities, success_rate):
    summary = summarize_verdicts([_verdict(q) if q is not None else None for q in qualities], success_rate)
    judged = [q for q in qualities if q is not None]
    assert summary.judged == len(judged) and summary.unjudged == len(qualities) - len(judged)
    assert sum(summary.quality_distribution.values()) == len(judged)
    if judged:
        assert 0.3 <= summary.coeff <= 1.0
        assert summary.final_score == pytest.approx(success_rate * summary.coeff)
    else:
        assert summary.q is None and summary.coeff is None and summary.final_score is None
