"""The three protocols: parsing realistic and malformed model output, rendering, and render → parse."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.harness import (
    OPENAI,
    PROTOCOLS,
    QWEN3,
    UPSTREAM,
    Episode,
    ParsedCall,
    ParsedTurn,
    Qwen3Protocol,
    canonical_protocol,
    get_protocol,
    protocol_spellings,
    tool_schemas,
)

# -- upstream text tags ------------------------------------------------------------------------------
UPSTREAM_TWO_CALLS = """<think>The user wants Nike running shoes under 3000; search, then check details.</think>
<tool_call>[
{"name": "find_product", "parameters": {"q": "nike running shoes", "price": "0-3000", "sort": "order"}},
{"name": "view_product_information", "parameters": {"product_ids": "123,456"}}
]</tool_call>"""


def test_upstream_parses_a_list_of_calls():
    turn = UPSTREAM.parse(UPSTREAM_TWO_CALLS)
    assert turn.thinking.startswith("The user wants Nike")
    assert [(c.name, c.arguments) for c in turn.calls] == [
        ("find_product", {"q": "nike running shoes", "price": "0-3000", "sort": "order"}),
        ("view_product_information", {"product_ids": "123,456"}),
    ]
    assert turn.content is None and turn.format_errors == []
    assert all(c.error is None and c.raw for c in turn.calls)


def test_upstream_response_and_lenient_forms():
    turn = UPSTREAM.parse(
        '<think>found it</think>\n<tool_call>```json\n{"name": "recommend_product", "parameters": {"product_ids": "9"}}\n```'
        "</tool_call>\n<response>I recommend product 9.</response>"
    )
    assert [(c.name, c.arguments) for c in turn.calls] == [("recommend_product", {"product_ids": "9"})]
    assert turn.content == "I recommend product 9." and turn.format_errors == []
    # An unclosed tool_call (generation stopped on the closing tag) still yields the call.
    cut = UPSTREAM.parse(
        '<think>x</think><tool_call>[{"name": "terminate", "parameters": {"status": "success"}}]'
    )
    assert [c.name for c in cut.calls] == ["terminate"] and cut.format_errors == ["unclosed <tool_call>"]
    # Tags named inside the thinking, or inside JSON strings, do not cut the blocks.
    mentions = UPSTREAM.parse(
        "<think>I will put a <tool_call> with a </response> query</think>"
        '<tool_call>[{"name": "find_product", "parameters": {"q": "</tool_call> <think>"}}]</tool_call>'
    )
    assert mentions.thinking == "I will put a <tool_call> with a </response> query"
    assert [(c.name, c.arguments) for c in mentions.calls] == [
        ("find_product", {"q": "</tool_call> <think>"})
    ]
    assert mentions.format_errors == []
    # A message dict with the thinking in reasoning_content, as reasoning servers return it.
    message = {
        "role": "assistant",
        "content": "<response>hello</response>",
        "reasoning_content": "<think>plan</think>",
    }
    assert UPSTREAM.parse(message).thinking == "plan"


def test_upstream_malformed_outputs():
    bad_json = UPSTREAM.parse(
        '<think>t</think><tool_call>[{"name": "find_product", "parameters": {"q": "x"}</tool_call>'
    )
    assert len(bad_json.calls) == 1 and bad_json.calls[0].error.startswith("<tool_call> is not valid JSON")
    no_name = UPSTREAM.parse('<think>t</think><tool_call>[{"parameters": {"q": "x"}}]</tool_call>')
    assert "without a 'name'" in no_name.calls[0].error
    string_params = UPSTREAM.parse(
        '<think>t</think><tool_call>[{"name": "find_product", "parameters": "{\\"q\\": \\"x\\"}"}]</tool_call>'
    )
    assert string_params.calls[0].arguments == {"q": "x"} and string_params.calls[0].error is None
    list_params = UPSTREAM.parse(
        '<think>t</think><tool_call>[{"name": "find_product", "parameters": ["x"]}]</tool_call>'
    )
    assert "must be a JSON object" in list_params.calls[0].error
    bare = UPSTREAM.parse("Sure, here are some shoes!")
    assert bare.calls == [] and bare.content == "Sure, here are some shoes!"
    assert (
        "no <think>...</think>" in bare.format_errors
        and "neither <tool_call> nor <response>" in bare.format_errors
    )
    stray = UPSTREAM.parse("<think>a</think>oops<response>b</response>")
    assert stray.content == "b" and any("outside the tags" in e for e in stray.format_errors)


def test_upstream_malformed_call_is_an_error_observation_and_the_episode_goes_on(backend):
    episode = Episode(backend, "q", profile="upstream4")
    observations = episode.run_turn(
        "upstream", '<think>t</think><tool_call>[{"name": "find_product", "parameters": {q: 1}}]</tool_call>'
    )
    assert len(observations) == 1 and not observations[0].ok
    assert "not valid JSON" in observations[0].text and "expected [" in observations[0].text
    assert episode.calls[0].raw_arguments and episode.calls[0].error
    assert episode.run_turn(
        "upstream",
        '<think>t</think><tool_call>[{"name": "find_product", "parameters": {"q": "blocks"}}]</tool_call>',
    )[0].ok


# -- qwen3 native ------------------------------------------------------------------------------------
QWEN_OUTPUT = """<think>
Two products from one shop; search the first.
</think>

Let me search.
<tool_call>
{"name": "find_product", "arguments": {"q": "yoga mat", "price": "100-500"}}
</tool_call>
<tool_call>
{"name": "find_product", "arguments": "{\\"q\\": \\"foam roller\\"}"}
</tool_call>"""


def test_qwen3_parses_blocks_think_and_content():
    turn = QWEN3.parse(QWEN_OUTPUT)
    assert turn.thinking == "Two products from one shop; search the first."
    assert turn.content == "Let me search."
    assert [(c.name, c.arguments) for c in turn.calls] == [
        ("find_product", {"q": "yoga mat", "price": "100-500"}),
        ("find_product", {"q": "foam roller"}),
    ]
    # The chat template opens <think> itself, so the output may start inside it.
    opened = QWEN3.parse(
        'thinking here\n</think>\n\n<tool_call>\n{"name": "terminate", "arguments": {}}\n</tool_call>'
    )
    assert (
        opened.thinking == "thinking here" and opened.calls[0].name == "terminate" and opened.content is None
    )


def test_qwen3_malformed_blocks():
    listed = QWEN3.parse('<tool_call>\n[{"name": "terminate", "arguments": {}}]\n</tool_call>')
    assert "one call per <tool_call> block" in listed.calls[0].error
    broken = QWEN3.parse('<tool_call>\n{"name": "terminate", "arguments": {\n</tool_call>')
    assert "not valid JSON" in broken.calls[0].error
    assert QWEN3.parse("plain answer").content == "plain answer"


# -- openai function calling ---------------------------------------------------------------------------
def test_openai_parses_messages_responses_and_legacy_calls():
    message = {
        "role": "assistant",
        "content": None,
        "reasoning_content": "look it up",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "find_product", "arguments": '{"q": "tent", "page": 2}'},
            },
            {"id": "call_b", "type": "function", "function": {"name": "terminate", "arguments": ""}},
            {
                "id": "call_c",
                "type": "function",
                "function": {"name": "find_product", "arguments": '{"q": "tent"'},
            },
            {"id": "call_d", "type": "function", "function": {"arguments": "{}"}},
            {
                "id": "call_e",
                "type": "function",
                "function": {"name": "find_product", "arguments": {"q": "dict args"}},
            },
        ],
    }
    turn = OPENAI.parse({"choices": [{"message": message}]})
    assert turn.thinking == "look it up" and turn.content is None
    a, b, c, d, e = turn.calls
    assert (a.id, a.name, a.arguments) == ("call_a", "find_product", {"q": "tent", "page": 2})
    assert (b.name, b.arguments) == ("terminate", {})
    assert c.arguments is None and "not valid JSON" in c.error and c.raw == '{"q": "tent"'
    assert "no function name" in d.error
    assert e.arguments == {"q": "dict args"}
    inline = OPENAI.parse("<think>hmm</think>The answer.")
    assert inline.thinking == "hmm" and inline.content == "The answer."
    legacy = OPENAI.parse(
        {"role": "assistant", "content": None, "function_call": {"name": "terminate", "arguments": "{}"}}
    )
    assert [c.name for c in legacy.calls] == ["terminate"]


# -- render(history) -----------------------------------------------------------------------------------
@pytest.fixture
def played(backend):
    episode = Episode(backend, "Find Lego-compatible blocks", profile="oro7")
    episode.run_turn(
        "openai",
        OPENAI.render_turn(
            ParsedTurn(thinking="search", calls=[ParsedCall(name="find_product", arguments={"q": "blocks"})])
        ),
    )
    episode.run_turn(
        "openai",
        OPENAI.render_turn(
            ParsedTurn(content="Found them.", calls=[ParsedCall(name="find_product", arguments={"page": 1})])
        ),
    )
    return episode


def test_upstream_render_replays_the_dialogue_in_one_prompt(played):
    messages = UPSTREAM.render(played.messages, tools=tool_schemas("oro7"))
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "find_products_in_same_shop" in messages[0]["content"] and "<tool_call>" in messages[0]["content"]
    prompt = messages[1]["content"]
    assert prompt.startswith(
        "# Dialogue Records History\n<user>Find Lego-compatible blocks</user>\n\n<think>search</think>"
    )
    assert '<tool_call>[{"name":"find_product","parameters":{"q":"blocks"}}]</tool_call>' in prompt
    obs = [json.loads(block.split("</obs>")[0]) for block in prompt.split("<obs>")[1:]]
    assert (
        obs[0][0]["tool_call_id"] == played.calls[0].call_id
        and obs[0][0]["results"] == played.calls[0].result
    )
    assert obs[1][0]["results"].startswith("Error: find_product: missing required argument 'q'")
    assert prompt.endswith("<response>Found them.</response>")


def test_qwen3_render_puts_results_in_user_turns_and_parses_back(played):
    messages = QWEN3.render(played.messages, tools=tool_schemas("oro7"))
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "<tools>" in messages[0]["content"] and '"name":"calculate_voucher"' in messages[0]["content"]
    assert messages[3]["content"].startswith("<tool_response>\n[") and messages[3]["content"].endswith(
        "</tool_response>"
    )
    parsed = [QWEN3.parse(m["content"]) for m in messages if m["role"] == "assistant"]
    assert [t.signature() for t in parsed] == [t.signature() for t in played.turns]
    as_tool = Qwen3Protocol(tool_role="tool").render(played.messages)
    assert [m["role"] for m in as_tool] == ["user", "assistant", "tool", "assistant", "tool"]


def test_openai_render_is_the_api_form(played):
    messages = OPENAI.render(played.messages)
    assert all("reasoning_content" not in m for m in messages)
    assert all(set(m) == {"role", "tool_call_id", "content"} for m in messages if m["role"] == "tool")
    assert [OPENAI.parse(m).signature()[2] for m in messages if m["role"] == "assistant"] == [
        t.signature()[2] for t in played.turns
    ]


def test_render_observations_per_protocol(played):
    observations = played.run_turn("openai", {"role": "assistant", "content": "", "tool_calls": []})
    assert observations == []
    obs = Episode(played._ctx.backend, "q").call("view_product_information", {"product_ids": "nope"})
    assert OPENAI.render_observations([obs]) == [
        {"role": "tool", "tool_call_id": obs.call_id, "content": "[]"}
    ]
    assert QWEN3.render_observations([obs]) == [
        {"role": "user", "content": "<tool_response>\n[]\n</tool_response>"}
    ]
    assert UPSTREAM.render_observations([obs]) == [
        {"role": "user", "content": f'<obs>[{{"tool_call_id":"{obs.call_id}","results":[]}}]</obs>'}
    ]


def test_get_protocol():
    assert get_protocol("qwen3") is QWEN3 and get_protocol(UPSTREAM) is UPSTREAM
    assert set(PROTOCOLS) == {"openai", "upstream", "qwen3"}
    with pytest.raises(ValueError, match="unknown protocol"):
        get_protocol("xml")


def test_every_spelling_resolves_through_the_one_registry():
    assert get_protocol("tags") is UPSTREAM and get_protocol("qwen") is QWEN3
    assert protocol_spellings() == ["openai", "upstream", "qwen3", "tags", "qwen"]
    assert [canonical_protocol(s) for s in protocol_spellings()] == [
        "openai", "upstream", "qwen3", "upstream", "qwen3"
    ]  # fmt: skip
    with pytest.raises(ValueError, match=r"use one of openai, upstream \(or tags\), qwen3 \(or qwen\)"):
        canonical_protocol("Tags")


# -- render → parse round trip ----------------------------------------------------------------------------
TAGS = ("<think>", "</think>", "<tool_call>", "</tool_call>", "<response>", "</response>", "think>")
free_text = (
    st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=60)
    .map(str.strip)
    .filter(lambda text: text and not any(tag in text for tag in TAGS))
)
tagged_text = st.builds(
    lambda a, tag, b: f"{a}{tag}{b}", st.text(max_size=5), st.sampled_from(TAGS), st.text(max_size=5)
)
json_values = st.recursive(
    tagged_text  # tags inside JSON strings must not cut a tool call
    | st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
calls = st.builds(
    ParsedCall,
    name=st.sampled_from(["find_product", "check_product_match", "recommend_product", "terminate", "x_tool"]),
    arguments=st.dictionaries(st.text(max_size=10), json_values, max_size=4),
)
turns = st.builds(
    ParsedTurn,
    thinking=st.none() | free_text,
    content=st.none() | free_text,
    calls=st.lists(calls, max_size=3),
)


@pytest.mark.parametrize("name", list(PROTOCOLS))
@settings(max_examples=150, deadline=None)
@given(turn=turns)
def test_render_then_parse_round_trips(name, turn):
    protocol = PROTOCOLS[name]
    parsed = protocol.parse(protocol.render_turn(turn))
    assert parsed.signature() == turn.signature()
    assert all(call.error is None for call in parsed.calls)
