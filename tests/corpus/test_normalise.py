"""Every source shape normalises into paired OpenAI rows; broken and unknown inputs are rejected with a
reason, never guessed."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.corpus.gates import pairing_gate
from shoparena.corpus.models import MALFORMED, UNKNOWN_SHAPE
from shoparena.corpus.normalise import NormaliseError, detect_format, normalise_record, stable_problem_id
from shoparena.harness import jsontext
from shoparena.harness.protocols import QWEN3, UPSTREAM
from tests.corpus.conftest import openai_row


def _calls(messages: list[dict]) -> list[tuple[str, dict]]:
    return [
        (c["function"]["name"], jsontext.loads(c["function"]["arguments"]))
        for m in messages
        for c in m.get("tool_calls") or []
    ]


def test_trajectory_record(runs):
    record = runs.records(runs.agentic)[0]
    row = normalise_record(record, "t:1")
    meta = row.metadata
    assert detect_format(record) == "trajectory"
    assert meta.problem_id == record["problem"]["problem_id"]
    assert meta.bucket == record["problem"]["bucket"]
    assert meta.judge_quality == record["judge"]["quality"]
    assert meta.tool_call_origin == "llm" and meta.origin_counts["code"] == 0
    assert pairing_gate(row.messages) is None
    assert _calls(row.messages) == [(c["name"], c["arguments"]) for c in record["calls"]]


def test_pipeline_record_origin_is_code(runs):
    row = normalise_record(runs.records(runs.pipeline)[0], "t:1")
    assert row.metadata.tool_call_origin == "code"


def test_upstream_dialogue_from_rendered_prompt(runs):
    """Upstream's own prompt layout (`# Dialogue Records History`) round-trips to the same calls."""
    record = runs.records(runs.agentic)[1]
    original = normalise_record(record, "x").messages
    prompt = UPSTREAM.render(original, record["tools"])
    row = normalise_record({"messages": prompt}, "u:1")
    assert row.metadata.source_format == "upstream_dialogue"
    assert _calls(row.messages) == _calls(original)
    assert pairing_gate(row.messages) is None
    assert row.metadata.query == record["problem"]["query"]


def test_upstream_dialogue_as_text_with_output():
    text = (
        "<user>red mug</user>\n<think>search it</think>\n"
        '<tool_call>[{"name": "find_product", "parameters": {"q": "red mug"}}]</tool_call>\n'
        '<obs>[{"results": [{"product_id": "9"}]}]</obs>'
    )
    output = (
        '<think>9 fits</think><tool_call>[{"name": "recommend_product", "parameters": {"product_ids": "9"}}, '
        '{"name": "terminate", "parameters": {"status": "success"}}]</tool_call>'
    )
    row = normalise_record({"dialogue": text, "output": output, "metadata": {"judge_quality": 0.7}}, "d:1")
    assert [n for n, _ in _calls(row.messages)] == ["find_product", "recommend_product", "terminate"]
    # the last turn's calls have no <obs>: they stay unpaired and the gate says so
    assert pairing_gate(row.messages).reason == "unpaired_tool_call"
    assert row.metadata.judge_quality == 0.7
    assert row.metadata.problem_id == stable_problem_id("red mug")


def test_qwen_native_chat(runs):
    record = runs.records(runs.agentic)[2]
    original = normalise_record(record, "x").messages
    rendered = QWEN3.render(
        original
    )  # assistant text with <tool_call>, results in <tool_response> user turns
    row = normalise_record({"messages": rendered, "tools": record["tools"]}, "q:1")
    assert row.metadata.source_format == "tagged_chat"
    assert _calls(row.messages) == _calls(original)
    assert pairing_gate(row.messages) is None
    thinking = [m.get("reasoning_content") for m in row.messages if m["role"] == "assistant"]
    assert thinking == [m.get("reasoning_content") for m in original if m["role"] == "assistant"]


def test_arena_steps_bare_and_wrapped():
    steps = [
        {
            "completion": {
                "message": {
                    "think": "look",
                    "tool_call": [
                        {
                            "name": "find_product",
                            "parameters": {"q": "mug"},
                            "tool_call_id": "a",
                            "result": [{"x": 1}],
                        }
                    ],
                    "response": None,
                }
            },
            "extra_info": {"query": "a blue mug", "problem_id": "p-7"},
        },
        {
            "completion": {
                "message": {
                    "think": "done",
                    "tool_call": [
                        {"name": "recommend_product", "parameters": '{"product_ids": "1"}', "result": "ok"}
                    ],
                }
            },
            "extra_info": {},
        },
    ]
    bare = normalise_record(steps, "s:1")
    assert bare.metadata.problem_id == "p-7" and bare.metadata.query == "a blue mug"
    assert pairing_gate(bare.messages) is None
    assert _calls(bare.messages) == [
        ("find_product", {"q": "mug"}),
        ("recommend_product", {"product_ids": "1"}),
    ]
    wrapped = normalise_record({"steps": steps, "query": "other", "judge_quality": 0.9}, "s:2")
    assert wrapped.metadata.query == "other" and wrapped.metadata.judge_quality == 0.9
    no_result = copy.deepcopy(steps)
    del no_result[0]["completion"]["message"]["tool_call"][0]["result"]
    assert pairing_gate(normalise_record(no_result, "s:3").messages).reason == "unpaired_tool_call"


def test_openai_rows_and_stable_ids():
    a = normalise_record(openai_row(problem_id=None), "o:1")
    b = normalise_record(openai_row(problem_id=None, quality=0.1), "o:2")
    assert (
        a.metadata.problem_id
        == b.metadata.problem_id
        == stable_problem_id("wireless earbuds under 500 pesos")
    )
    c = normalise_record(openai_row(problem_id="given", origin="code"), "o:3")
    assert c.metadata.problem_id == "given" and c.metadata.tool_call_origin == "code"
    assert {t["function"]["name"] for t in a.tools} >= {"find_product", "recommend_product", "terminate"}
    thinking_in_content = openai_row()
    thinking_in_content["messages"][1]["content"] = "<think>hmm</think>searching"
    del thinking_in_content["messages"][1]["reasoning_content"]
    row = normalise_record(thinking_in_content, "o:4")
    assert row.messages[1]["reasoning_content"] == "hmm" and row.messages[1]["content"] == "searching"


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"foo": 1}, UNKNOWN_SHAPE),
        ([{"nope": 1}], UNKNOWN_SHAPE),
        (42, UNKNOWN_SHAPE),
        ("plain text", UNKNOWN_SHAPE),
        ({"schema_version": "shoparena.trajectory/1", "record_id": "x"}, MALFORMED),
        ({"messages": [{"role": "robot", "content": "hi"}]}, MALFORMED),
        ({"messages": [{"role": "assistant", "content": "no user"}]}, MALFORMED),
        ({"messages": [{"role": "user", "content": "q"}], "metadata": {"judge_quality": "great"}}, MALFORMED),
        (
            {"messages": [{"role": "user", "content": "q"}], "metadata": {"tool_call_origin": "robot"}},
            MALFORMED,
        ),
        ([{"completion": {"message": {"tool_call": [{"name": "x", "result": 1}]}}}], MALFORMED),  # no query
        ({"messages": [{"role": "user", "content": "q"}], "tools": "not json"}, MALFORMED),
    ],
)
def test_broken_inputs_are_rejected_with_a_reason(record, reason):
    with pytest.raises(NormaliseError) as info:
        normalise_record(record, "bad:1")
    assert info.value.reason == reason
    assert info.value.detail


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
_keys = st.sampled_from(
    ["messages", "steps", "completion", "role", "content", "tool_calls", "schema_version"]
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(_json, st.dictionaries(_keys, _json, max_size=4)))
def test_any_json_normalises_or_is_rejected_with_a_reason(record):
    try:
        row = normalise_record(record, "h:1")
    except NormaliseError as exc:
        assert exc.reason in (UNKNOWN_SHAPE, MALFORMED)
    else:
        assert row.metadata.problem_id and row.metadata.query
