"""GRPO rewards: tool-match against a teacher, hallucinated ids, teacher files, the outcome on the real scorer."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.harness import Episode
from shoparena.problems.generator import ProblemGenerator
from shoparena.scoring import LexicalSimilarity, RuleScorer
from shoparena.train.rewards import (
    RewardFormula,
    ToolStep,
    argument_similarity,
    hallucinated_ids,
    load_teachers,
    model_steps,
    step_match,
    tool_match,
    value_similarity,
)

names = st.sampled_from(["find_product", "view_product_information", "recommend_product", "terminate"])
values = st.one_of(
    st.text(max_size=20),
    st.integers(-1000, 1000),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.booleans(),
    st.lists(st.text(max_size=5), max_size=3),
)
steps = st.builds(
    ToolStep, name=names, arguments=st.dictionaries(st.sampled_from("qpxyz"), values, max_size=3)
)


def test_identical_sequences_match_fully_and_a_wrong_tool_earns_nothing():
    teacher = [
        ToolStep(name="find_product", arguments={"q": "red wool scarf", "page": 1}),
        ToolStep(name="recommend_product", arguments={"product_ids": "11,22"}),
    ]
    assert tool_match(teacher, teacher) == 1.0
    assert (
        step_match(ToolStep(name="terminate", arguments={"q": "red wool scarf", "page": 1}), teacher[0]) == 0
    )
    # same tool, reformulated query: half for the tool, part of the rest for the shared words and page
    reformulated = ToolStep(name="find_product", arguments={"q": "red scarf", "page": 1})
    assert step_match(reformulated, teacher[0]) == pytest.approx(0.5 + 0.5 * (2 / 3 + 1) / 2)
    # one id of two: id lists compare as sets
    half_ids = ToolStep(name="recommend_product", arguments={"product_ids": "11, 33"})
    assert step_match(half_ids, teacher[1]) == pytest.approx(0.5 + 0.5 * (1 / 3))


def test_alignment_is_by_step_and_missing_or_extra_steps_cost():
    a = ToolStep(name="find_product", arguments={"q": "lamp"})
    b = ToolStep(name="recommend_product", arguments={"product_ids": "1"})
    assert tool_match([a], [a, b]) == 0.5  # one of two teacher steps matched
    assert tool_match([a, b, b], [a, b]) == pytest.approx(2 / 3)  # a surplus call dilutes
    assert tool_match([b, a], [a, b]) == 0.0  # right tools in the wrong steps
    assert tool_match([], [a]) == 0.0


def test_value_similarity_of_numbers_and_argument_names():
    assert value_similarity(100, 80) == pytest.approx(0.8)
    assert value_similarity(0, 0.0) == 1.0
    assert value_similarity(True, 1) == 0.0
    assert argument_similarity({"q": "x"}, {"q": "x", "page": 2}) == 0.5
    assert argument_similarity({}, {}) == 1.0


@settings(max_examples=150, deadline=None)
@given(st.lists(steps, max_size=6), st.lists(steps, max_size=6))
def test_tool_match_is_bounded_symmetric_and_one_on_itself(model, teacher):
    score = tool_match(model, teacher)
    assert 0.0 <= score <= 1.0
    assert score == pytest.approx(tool_match(teacher, model))
    assert tool_match(model, model) == 1.0
    assert RewardFormula().total({"outcome": 0.25, "tool_match": score}) == 0.25
    assert RewardFormula(tool_weight=0.5).total({"outcome": 0.25, "tool_match": score}) == pytest.approx(
        0.25 + 0.5 * score
    )
    assert RewardFormula(tool_weight=0.5).terms == ("outcome", "tool_match")  # no process term unweighted


@settings(max_examples=100, deadline=None)
@given(values, values)
def test_value_similarity_is_a_bounded_symmetric_similarity(a, b):
    s = value_similarity(a, b)
    assert 0.0 <= s <= 1.0
    assert s == pytest.approx(value_similarity(b, a))
    assert value_similarity(a, a) == 1.0


def test_hallucinated_ids_on_a_real_episode(small_catalog):
    title = small_catalog.store.dict_by_ord(0)["title"]
    episode = Episode(small_catalog, title, problem_id="p")
    hits = episode.call("find_product", {"q": title}).result
    found = hits[0]["product_id"]
    episode.call("view_product_information", {"product_ids": f"{found},999999999"})
    episode.call("check_product_match", {"product_id": "888888888", "requirements": "{}"})
    episode.call("recommend_product", {"product_ids": f"{found},777777777"})
    assert hallucinated_ids(episode.calls) == ["777777777", "888888888", "999999999"]
    assert [s.name for s in model_steps(episode.calls)] == [
        "find_product",
        "view_product_information",
        "check_product_match",
        "recommend_product",
    ]


def test_code_emitted_and_after_end_calls_are_not_the_models(small_catalog):
    episode = Episode(small_catalog, "lamp", problem_id="p")
    episode.call("find_product", {"q": "lamp"}, origin="code")
    episode.call("terminate", {"status": "failure"})
    episode.call("find_product", {"q": "lamp"})  # after the end: refused, uncounted
    assert [s.name for s in model_steps(episode.calls)] == ["terminate"]


def test_teacher_file_both_shapes_prefers_success_and_rejects_with_line_numbers(tmp_path):
    record = {
        "problem": {"problem_id": "p1"},
        "calls": [
            {"name": "find_product", "arguments": {"q": "lamp"}, "origin": "llm"},
            {"name": "find_product", "arguments": {"q": "scripted"}, "origin": "code"},
            {"name": "terminate", "arguments": {"status": "failure"}, "origin": "llm"},
        ],
        "score": {"success": False},
    }
    better = {**record, "calls": record["calls"][:1], "score": {"success": True}}
    row = {
        "messages": [
            {"role": "user", "content": "lamp"},
            {
                "role": "assistant",
                "tool_calls": [{"function": {"name": "find_product", "arguments": '{"q": "desk lamp"}'}}],
            },
        ],
        "metadata": {"problem_id": "p2"},
    }
    path = tmp_path / "teachers.jsonl"
    lines = [
        json.dumps(record),
        json.dumps(better),
        json.dumps(row),
        "{not json",
        json.dumps({"messages": []}),
    ]
    path.write_text("\n".join(lines) + "\n")
    teachers = load_teachers(path)
    assert set(teachers.by_problem) == {"p1", "p2"}
    assert teachers.by_problem["p1"].success is True
    assert [s.arguments for s in teachers.by_problem["p1"].steps] == [{"q": "lamp"}]
    assert teachers.by_problem["p2"].steps == [ToolStep(name="find_product", arguments={"q": "desk lamp"})]
    assert [r.line for r in teachers.rejects] == [4, 5]
    assert "no problem id" in teachers.rejects[1].reason
    with pytest.raises(FileNotFoundError, match="teacher trajectories"):
        load_teachers(tmp_path / "missing.jsonl")


def test_outcome_is_the_strict_rule_score_of_the_episode(small_catalog):
    problem = ProblemGenerator(small_catalog, seed=3).generate(1, buckets=("product",))[0]
    scorer = RuleScorer(small_catalog, LexicalSimilarity(), mode="strict")
    gold = problem.rewards[0].product_id
    assert scorer.score(problem, [gold]).rule == 1.0
    assert scorer.score(problem, None).rule == 0.0
