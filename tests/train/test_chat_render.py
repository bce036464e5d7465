"""The assistant-only loss mask, proved (SPEC §9.1, the paper's bug B.2): over generated conversations with
tool calls, reasoning and several user turns, the rendering equals the tokenizer's `apply_chat_template`,
every masked-in span decodes to exactly its assistant turn's output plus `<|im_end|>`, and no system, user,
tool or header token is masked in; masks built the naive way are caught."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.harness.tool_specs import tool_schemas
from shoparena.train.chat_render import (
    MaskError,
    RenderedConversation,
    TemplateMismatch,
    assert_mask_is_assistant_only,
    render_with_mask,
)

pytest.importorskip("transformers")

TOOLS = tool_schemas("full")
_TEXT = st.text(
    alphabet=st.characters(exclude_categories=("Cs", "Cc"), include_characters="\n "), max_size=25
).filter(lambda s: "<|" not in s and "think>" not in s and "tool_response>" not in s)
_NAMES = st.sampled_from(["find_product", "view_product_information", "recommend_product", "terminate"])
_ARGS = st.dictionaries(st.sampled_from(["q", "product_ids", "page"]), _TEXT, max_size=2)


@st.composite
def conversations(draw) -> tuple[list[dict], list[dict]]:
    messages: list[dict] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(_TEXT)})
    call_no = 0
    for _ in range(draw(st.integers(1, 2))):
        messages.append({"role": "user", "content": draw(_TEXT)})
        for _ in range(draw(st.integers(1, 3))):
            message: dict = {"role": "assistant", "content": draw(st.one_of(st.none(), _TEXT))}
            reasoning = draw(st.one_of(st.none(), _TEXT))
            if reasoning is not None:
                message["reasoning_content"] = reasoning
            calls = []
            for _ in range(draw(st.integers(0, 2))):
                call_no += 1
                arguments = draw(_ARGS)
                if draw(st.booleans()):  # the OpenAI wire form: arguments as JSON text
                    arguments = json.dumps(arguments, ensure_ascii=False)
                calls.append(
                    {
                        "id": f"c{call_no}",
                        "type": "function",
                        "function": {"name": draw(_NAMES), "arguments": arguments},
                    }
                )
            if calls:
                message["tool_calls"] = calls
            messages.append(message)
            for call in calls:
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": draw(_TEXT)})
    if draw(st.booleans()) and messages[-1]["role"] == "tool":
        messages.append({"role": "assistant", "content": draw(_TEXT)})
    return messages, draw(st.sampled_from([[], TOOLS]))


def expected_output(messages: list[dict], index: int) -> str:
    """What assistant message `index` is trained on, from Qwen3's documented behaviour: reasoning kept
    only after the last user query (an empty think block on a final turn without it), the text, each
    call as `<tool_call>` JSON, then `<|im_end|>`."""
    message = messages[index]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    content = message.get("content") or ""
    reasoning = message.get("reasoning_content")
    final = index == len(messages) - 1
    if index > last_user and (final or reasoning):
        text = "<think>\n" + (reasoning or "").strip("\n") + "\n</think>\n\n" + content.lstrip("\n")
    else:
        text = content
    calls = []
    for call in message.get("tool_calls") or []:
        arguments = call["function"]["arguments"]
        if isinstance(arguments, str):
            arguments = json.loads(arguments)
        body = json.dumps({"name": call["function"]["name"], "arguments": arguments}, ensure_ascii=False)
        calls.append(f"<tool_call>\n{body}\n</tool_call>")
    if calls:
        text += ("\n" if content else "") + "\n".join(calls)
    return text + "<|im_end|>"


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(conversation=conversations())
def test_mask_is_exactly_assistant_output(tiny_tokenizer, conversation):
    messages, tools = conversation
    rendered = render_with_mask(tiny_tokenizer, messages, tools)
    template = tiny_tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=False)
    assert rendered.text == template
    assert tiny_tokenizer.decode(rendered.input_ids, skip_special_tokens=False) == template
    assistant_turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    assert [span.turn for span in rendered.spans] == assistant_turns
    for span in rendered.spans:
        decoded = tiny_tokenizer.decode(rendered.input_ids[span.start : span.end], skip_special_tokens=False)
        assert decoded == expected_output(messages, span.turn)
        assert set(rendered.assistant_mask[span.start : span.end]) == {1}
    # everything else is masked out: the prompt pieces decode to system/user/tool turns and headers only
    masked_out = [t for t, bit in zip(rendered.input_ids, rendered.assistant_mask, strict=True) if not bit]
    assert sum(rendered.assistant_mask) == sum(s.end - s.start for s in rendered.spans)
    unmasked_text = tiny_tokenizer.decode(masked_out, skip_special_tokens=False)
    assert unmasked_text.count("<|im_start|>assistant\n") == len(assistant_turns)
    assert '<tool_call>\n{"name": "' not in unmasked_text and "<think>" not in unmasked_text
    assert_mask_is_assistant_only(tiny_tokenizer, rendered, messages, tools)


def _conversation() -> list[dict]:
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "wireless earbuds"},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "Search first.",
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "find_product", "arguments": {"q": "earbuds"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": '[{"product_id": "P1"}]'},
        {
            "role": "assistant",
            "content": "P1 fits.",
            "reasoning_content": "P1 is wireless.",
            "tool_calls": [
                {
                    "id": "b",
                    "type": "function",
                    "function": {"name": "recommend_product", "arguments": '{"product_ids": "P1"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "b", "content": "ok"},
        {"role": "user", "content": "thanks, and a case?"},
        {"role": "assistant", "content": "<think>\nNo more searching.\n</think>\n\nDone."},
    ]


def test_earlier_turns_lose_their_reasoning_and_spans_stay_inside(tiny_tokenizer):
    messages = _conversation()
    rendered = render_with_mask(tiny_tokenizer, messages, TOOLS)
    spans = [tiny_tokenizer.decode(rendered.input_ids[s.start : s.end]) for s in rendered.spans]
    assert spans == [
        '<tool_call>\n{"name": "find_product", "arguments": {"q": "earbuds"}}\n</tool_call><|im_end|>',
        'P1 fits.\n<tool_call>\n{"name": "recommend_product", "arguments": {"product_ids": "P1"}}\n</tool_call><|im_end|>',
        "<think>\nNo more searching.\n</think>\n\nDone.<|im_end|>",
    ]
    assert "Search first." not in rendered.text  # before the last user query: dropped by the template


def _naive_mask(tokenizer, rendered: RenderedConversation) -> list[int]:
    """The collator bug: from each `<|im_start|>assistant` token to the next `<|im_start|>`."""
    start = tokenizer.convert_tokens_to_ids("<|im_start|>")
    ids, mask, inside = rendered.input_ids, [], False
    for position, token in enumerate(ids):
        if token == start:
            following = tokenizer.decode(ids[position : position + 4])
            inside = following.startswith("<|im_start|>assistant")
        mask.append(1 if inside else 0)
    return mask


def test_wrong_masks_are_caught(tiny_tokenizer):
    messages = _conversation()
    rendered = render_with_mask(tiny_tokenizer, messages, TOOLS)
    naive = rendered.model_copy(update={"assistant_mask": _naive_mask(tiny_tokenizer, rendered)})
    with pytest.raises(MaskError, match="differ from the assistant outputs"):
        assert_mask_is_assistant_only(tiny_tokenizer, naive, messages, TOOLS)
    short = list(rendered.assistant_mask)
    short[rendered.spans[0].end - 1] = 0  # the first turn's <|im_end|> left out: never learns to stop
    with pytest.raises(MaskError):
        assert_mask_is_assistant_only(
            tiny_tokenizer, rendered.model_copy(update={"assistant_mask": short}), messages, TOOLS
        )
    everything = rendered.model_copy(update={"assistant_mask": [1] * len(rendered.input_ids)})
    with pytest.raises(MaskError):
        assert_mask_is_assistant_only(tiny_tokenizer, everything, messages, TOOLS)


def test_a_different_template_is_refused(tiny_tokenizer):
    other = copy.deepcopy(tiny_tokenizer)
    other.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content or '' }}<|im_end|>\n{% endfor %}"
    )
    with pytest.raises(TemplateMismatch, match="at character"):
        render_with_mask(other, _conversation(), None)
