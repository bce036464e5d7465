"""The episode runtime: error observations, profiles, the step cap, the call log and the trace."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.harness import (
    DEFAULT_STEP_CAPS,
    PROFILES,
    TOOL_SPECS,
    Episode,
    EpisodeSummary,
    ProfileError,
    tool_schemas,
)
from shoparena.problems.models import Problem
from shoparena.records.calls import CallRecord


def test_profiles_hold_the_spec_tools():
    assert PROFILES["upstream4"] == (
        "find_product",
        "view_product_information",
        "recommend_product",
        "terminate",
    )
    assert PROFILES["oro7"] == (
        *PROFILES["upstream4"],
        "check_product_match",
        "find_products_in_same_shop",
        "calculate_voucher",
    )
    assert PROFILES["full"] == (*PROFILES["oro7"], "view_shop_information", "view_voucher_information")
    assert DEFAULT_STEP_CAPS["upstream4"] == 30 and DEFAULT_STEP_CAPS["oro7"] == 25
    with pytest.raises(ProfileError, match="unknown profile"):
        tool_schemas("everything")


@pytest.mark.parametrize("profile", list(PROFILES))
def test_schemas_are_openai_functions(profile):
    schemas = tool_schemas(profile)
    assert [s["function"]["name"] for s in schemas] == list(PROFILES[profile])
    for schema in schemas:
        assert schema["type"] == "function"
        function = schema["function"]
        assert function["description"]
        parameters = function["parameters"]
        assert parameters["type"] == "object"
        assert set(parameters["required"]) <= set(parameters["properties"])
        for prop in parameters["properties"].values():
            assert prop["type"] in {"string", "integer", "number"} and prop["description"]
    json.dumps(schemas)


def test_episode_uses_the_profile_step_cap(backend):
    assert Episode(backend, "q", profile="upstream4").step_cap == 30
    assert Episode(backend, "q", profile="oro7").step_cap == 25
    assert Episode(backend, "q", profile="oro7", step_cap=5).step_cap == 5
    assert [t["function"]["name"] for t in Episode(backend, "q", profile="upstream4").tools] == list(
        PROFILES["upstream4"]
    )


# -- error observations ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "arguments", "fragments"),
    [
        ("find_product", '{"q": "shoes",', ["find_product", "not valid JSON"]),
        ("find_product", "[1, 2]", ["must be a JSON object"]),
        ("buy_now", {"q": "x"}, ["unknown tool 'buy_now'", "find_product", "terminate"]),
        (
            "find_product",
            {"page": 2},
            ["missing required argument 'q'", "find_product(q: string, page?: integer"],
        ),
        ("find_product", {"q": {"text": "shoes"}}, ["argument 'q'", "expected a string", "object"]),
        ("find_product", {"q": "shoes", "page": True}, ["argument 'page'", "expected an integer", "boolean"]),
        ("find_product", {"q": "shoes", "page": "two"}, ["argument 'page'", "expected an integer", '"two"']),
        (
            "find_product",
            {"q": "shoes", "colour": "red"},
            ["unknown argument 'colour'", "valid: find_product("],
        ),
        ("terminate", {"status": "done"}, ["'done' is not one of success, failure"]),
        ("calculate_voucher", {"product_prices": "1"}, ["missing required argument 'voucher_type'"]),
        (
            "recommend_product",
            {"product_ids": {"a": 1}},
            ["argument 'product_ids'", "comma-separated string"],
        ),
    ],
)
def test_bad_calls_get_explicit_error_observations(backend, name, arguments, fragments):
    episode = Episode(backend, "q", profile="oro7")
    observation = episode.call(name, arguments)
    assert not observation.ok
    for fragment in fragments:
        assert fragment in observation.text
    assert episode.steps_used == 1 and not episode.ended
    assert episode.call("find_product", {"q": "blocks"}).ok  # the episode goes on


def test_tool_outside_the_profile(backend):
    episode = Episode(backend, "q", profile="upstream4")
    observation = episode.call("calculate_voucher", {"product_prices": "1", "voucher_type": "fixed"})
    assert not observation.ok
    assert "not available in profile upstream4" in observation.error
    assert "find_product, view_product_information, recommend_product, terminate" in observation.error


def test_second_recommendation_is_refused_and_the_first_stands(backend):
    episode = Episode(backend, "q", profile="upstream4")
    assert episode.call("recommend_product", {"product_ids": "111,222"}).ok
    second = episode.call("recommend_product", {"product_ids": "333"})
    assert not second.ok
    assert (
        "already called at step 1 with 111,222" in second.error
        and "first recommendation stands" in second.error
    )
    assert episode.recommended_product_ids == ["111", "222"]
    empty = Episode(backend, "q", profile="upstream4")
    assert not empty.call("recommend_product", {"product_ids": " , "}).ok
    assert empty.recommended_product_ids is None  # a refused empty recommendation does not use the one chance
    assert empty.call("recommend_product", {"product_ids": "9"}).ok


def test_step_cap_ends_the_episode(backend):
    episode = Episode(backend, "q", profile="oro7", step_cap=3)
    for _ in range(3):
        assert episode.call("find_product", {"q": "blocks"}).ok
    assert episode.ended and episode.steps_used == 3
    assert episode.end_reason == "step cap reached: 3 steps used without terminate"
    refused = episode.call("recommend_product", {"product_ids": "1"})
    assert not refused.ok and "episode has ended (step cap reached" in refused.error
    assert episode.steps_used == 3 and episode.recommended_product_ids is None and episode.terminated is None
    assert [c.counted for c in episode.calls] == [True, True, True, False]


def test_terminate_ends_and_later_calls_in_the_same_turn_are_refused(backend):
    episode = Episode(backend, "q", profile="upstream4")
    output = (
        '<think>done</think><tool_call>[{"name": "recommend_product", "parameters": {"product_ids": "5"}}, '
        '{"name": "terminate", "parameters": {"status": "success"}}, '
        '{"name": "find_product", "parameters": {"q": "more"}}]</tool_call>'
    )
    observations = episode.run_turn("upstream", output)
    assert [o.ok for o in observations] == [True, True, False]
    assert "episode has ended (terminated with status success)" in observations[2].error
    assert (
        episode.steps_used == 1
        and episode.terminated == "success"
        and episode.recommended_product_ids == ["5"]
    )
    assert [c.step for c in episode.calls] == [1, 1, 1]


class ExplodingBackend:
    """A real backend whose search fails the way a lost Elasticsearch connection would."""

    def __init__(self, backend):
        self.backend = backend

    def find_product(self, **request):
        raise ConnectionError("search node unreachable")

    def __getattr__(self, name):
        return getattr(self.backend, name)


def test_a_failing_backend_becomes_an_observation(backend):
    episode = Episode(ExplodingBackend(backend), "q", profile="oro7")
    observation = episode.call("find_product", {"q": "blocks"})
    assert not observation.ok
    assert observation.error == "find_product: internal error: ConnectionError: search node unreachable"
    assert episode.call("view_product_information", {"product_ids": "x"}).ok


@settings(max_examples=200, deadline=None)
@given(
    name=st.one_of(st.sampled_from(list(TOOL_SPECS)), st.text(max_size=20)),
    arguments=st.one_of(
        st.none(),
        st.text(max_size=40),
        st.dictionaries(
            st.sampled_from(
                ["q", "page", "product_ids", "status", "requirements", "product_queries", "cap", "x"]
            ),
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                lambda children: (
                    st.lists(children, max_size=3)
                    | st.dictionaries(st.text(max_size=5), children, max_size=3)
                ),
                max_leaves=6,
            ),
            max_size=4,
        ),
    ),
)
def test_no_input_makes_the_episode_raise(backend, name, arguments):
    episode = Episode(backend, "q", profile="full", step_cap=3)
    observation = episode.call(name, arguments, origin="code")
    assert observation.ok or observation.text.startswith("Error: ")
    record = episode.calls[-1]
    assert record.name == name and record.origin == "code"
    assert (record.error is None) == observation.ok


# -- the call log and the trace ----------------------------------------------------------------------
def test_call_records_carry_every_field(backend):
    episode = Episode(backend, "q", profile="oro7", problem_id="p-1")
    episode.call("find_product", {"q": "blocks"}, origin="code")
    episode.run_turn(
        "openai",
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "abc",
                    "type": "function",
                    "function": {"name": "find_product", "arguments": '{"q": "puzzle", "page": 9}'},
                },
                {"id": "abd", "type": "function", "function": {"name": "find_product", "arguments": "{oops"}},
            ],
        },
    )
    first, second, third = episode.calls
    assert all(isinstance(c, CallRecord) for c in episode.calls)
    assert (first.step, first.origin, first.name, first.arguments, first.error) == (
        1,
        "code",
        "find_product",
        {"q": "blocks"},
        None,
    )
    assert isinstance(first.result, list) and first.result
    assert first.latency_s > 0
    assert (second.step, second.call_id, second.origin, second.result) == (2, "abc", "llm", [])
    assert (third.step, third.call_id, third.arguments, third.raw_arguments) == (2, "abd", None, "{oops")
    assert "not valid JSON" in third.error
    summary = episode.summary()
    assert isinstance(summary, EpisodeSummary)
    assert summary.steps_used == 2 and summary.problem_id == "p-1" and len(summary.calls) == 3
    assert EpisodeSummary.model_validate_json(summary.model_dump_json()) == summary


def test_messages_pair_every_call_with_a_tool_message(backend):
    episode = Episode(backend, "find blocks", profile="oro7", system_prompt="be brief")
    episode.run_turn(
        "qwen3",
        '<think>\nsearch first\n</think>\n\n<tool_call>\n{"name": "find_product", "arguments": {"q": "blocks"}}\n</tool_call>',
    )
    episode.call("recommend_product", {"product_ids": "1"}, origin="code")
    episode.run_turn("upstream", "<think>all set</think><response>Here you go.</response>")
    messages = episode.messages
    assert messages[0] == {"role": "system", "content": "be brief"}
    assert messages[1] == {"role": "user", "content": "find blocks"}
    assert messages[2]["role"] == "assistant" and messages[2]["reasoning_content"] == "search first"
    assert messages[2]["tool_calls"][0]["function"] == {"name": "find_product", "arguments": '{"q":"blocks"}'}
    assert messages[3]["role"] == "tool" and messages[3]["tool_call_id"] == messages[2]["tool_calls"][0]["id"]
    assert json.loads(messages[3]["content"]) == episode.calls[0].result
    assert (
        messages[4]["tool_calls"][0]["function"]["name"] == "recommend_product"
        and messages[4]["content"] is None
    )
    assert messages[5]["content"] == "Having recommended the products to the user: 1."
    assert messages[6] == {"role": "assistant", "content": "Here you go.", "reasoning_content": "all set"}
    ids = [tc["id"] for m in messages if m["role"] == "assistant" for tc in m.get("tool_calls", [])]
    assert ids == [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert len(set(ids)) == len(ids)
    assert episode.steps_used == 3 and len(episode.turns) == 2


def test_duplicate_model_call_ids_are_made_unique(backend):
    episode = Episode(backend, "q", profile="oro7")
    call = {"id": "same", "type": "function", "function": {"name": "terminate", "arguments": "{}"}}
    episode.run_turn("openai", {"role": "assistant", "content": "", "tool_calls": [call]})
    episode2_ids = [c.call_id for c in episode.calls]
    other = Episode(backend, "q", profile="oro7")
    other.run_turn("openai", {"role": "assistant", "content": "", "tool_calls": [call, call]})
    ids = [c.call_id for c in other.calls]
    assert episode2_ids == ["same"] and ids[0] == "same" and ids[1] != "same"


# -- real task files and layering --------------------------------------------------------------------
def test_real_upstream_voucher_problems_drive_an_episode(backend, upstream_dir):
    lines = (upstream_dir / "shoppingbench_synthesize_voucher_test.jsonl").read_text().splitlines()[:20]
    for line in lines:
        problem = Problem.model_validate_json(line)
        episode = Episode.for_problem(problem, backend, profile="full")
        shown = episode.call("view_voucher_information").result
        assert shown["budget"] == problem.voucher.budget and "price_after_voucher" not in shown
        gold = {spec.product_id for spec in problem.rewards}
        trace = json.dumps(episode.messages) + episode.summary().model_dump_json()
        assert not any(product_id in trace for product_id in gold)


def test_the_harness_never_imports_higher_layers():
    """harness may use catalog, index and problems; scoring and everything above build on it."""
    higher = {"scoring", "agents", "judge", "store", "corpus", "arena", "train", "report", "cli"}
    package = Path(__file__).resolve().parents[2] / "shoparena" / "harness"
    for module in package.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                parts = name.split(".")
                assert not (parts[0] == "shoparena" and len(parts) > 1 and parts[1] in higher), (
                    f"{module.name} imports {name}"
                )
