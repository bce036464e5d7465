"""Conversations to token ids and an assistant-only loss mask, for Qwen3's chat template (SPEC §9.1).

Why not a collator that searches for `<|im_start|>assistant` and masks to the next end token: Qwen3's
template drops the reasoning of assistant turns before the last user query, adds an empty `<think>`
block to a final turn without reasoning, and groups tool results into user turns, so a search over the
token stream (the paper's bug B.2) drifts past the assistant boundary. Here the conversation is rendered
piece by piece, mirroring the template turn by turn, and each piece knows whether it is assistant output:

- trained: for each assistant turn, exactly what the model writes after `<|im_start|>assistant\\n` — its
  `<think>…</think>` block where the template keeps one, its text, its `<tool_call>` blocks — and the
  closing `<|im_end|>`;
- masked out: the system/tools preamble, user and tool turns, every `<|im_start|>assistant\\n` header
  and the newline after each `<|im_end|>`.

Before any of this, a row's messages go through `serving_messages`: the very function the `hf:` agent
(`ChatLoop.render_history`, protocol qwen3, tools through the template) and `model serve` use to turn an
episode's history into the messages the chat template renders, with the row's system prompt in front
(`row_system_prompt`: the one it was played with, else the agent's default). So past tool calls are the
compact JSON `Qwen3Protocol.render_turn` writes, tool results are `tool` messages, and the training text
of every assistant turn starts with exactly the prompt the agent sends at that turn (tests/train/
test_one_rendering.py proves it on generated rows and on live `hf:` episodes).

The joined pieces must equal `tokenizer.apply_chat_template(messages, tools=…)`: `render_with_mask`
checks this on every conversation (`TemplateMismatch` otherwise), so training sees the inference format.
Pieces are tokenised one by one: a prompt piece as the inference prompt is, an assistant piece as the
model's own output starts after the header. `assert_mask_is_assistant_only` re-derives the assistant
spans from the rendered text alone and checks the mask against them; the GRPO trainer calls it before
every update.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from pydantic import BaseModel, ConfigDict

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
ASSISTANT_HEADER = f"{IM_START}assistant\n"
TOOLS_INTRO = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_OUTRO = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": '
    "<args-json-object>}\n</tool_call>" + IM_END + "\n"
)


class MaskError(AssertionError):
    """The assistant mask covers something other than assistant output (or misses some of it)."""


class TemplateMismatch(ValueError):
    """The tokenizer's chat template renders this conversation differently from Qwen3's layout."""


class Piece(BaseModel):
    """A run of rendered text; `turn` is the assistant message's index when the text is trained on."""

    model_config = ConfigDict(extra="forbid")

    text: str
    turn: int | None = None


class AssistantSpan(BaseModel):
    """One trained run: message `turn`'s output, tokens [start, end), and its rendered text."""

    model_config = ConfigDict(extra="forbid")

    turn: int
    start: int
    end: int
    text: str


class RenderedConversation(BaseModel):
    """Token ids, the 0/1 assistant mask (1 = trained on), the assistant spans and the rendered text."""

    model_config = ConfigDict(extra="forbid")

    input_ids: list[int]
    assistant_mask: list[int]
    spans: list[AssistantSpan]
    text: str

    @property
    def trained_tokens(self) -> int:
        return sum(self.assistant_mask)


def _tojson(value: Any) -> str:
    """transformers' `tojson` filter: `json.dumps` without ASCII escaping or HTML escaping."""
    return json.dumps(value, ensure_ascii=False)


def _content(message: dict) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def _last_query_index(messages: list[dict]) -> int:
    """The template's `last_query_index`: the last user message that is not wrapped tool output."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        content = message.get("content")
        wrapped = (
            isinstance(content, str)
            and content.startswith("<tool_response>")
            and content.endswith("</tool_response>")
        )
        if message.get("role") == "user" and isinstance(content, str) and not wrapped:
            return index
    return len(messages) - 1


def assistant_output(message: dict, *, keep_reasoning: bool, final: bool) -> str:
    """What the model writes for one assistant turn, as the template renders it, without the header and
    without `<|im_end|>`. `keep_reasoning`: the turn comes after the last user query."""
    content = _content(message)
    reasoning = message.get("reasoning_content")
    if not isinstance(reasoning, str):
        reasoning = ""
        if "</think>" in content:
            reasoning = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
            content = content.split("</think>")[-1].lstrip("\n")
    if keep_reasoning and (final or reasoning):
        text = "<think>\n" + reasoning.strip("\n") + "\n</think>\n\n" + content.lstrip("\n")
    else:
        text = content
    for position, call in enumerate(message.get("tool_calls") or []):
        if position > 0 or content:
            text += "\n"
        function = call.get("function") or call
        arguments = function.get("arguments")
        arguments = arguments if isinstance(arguments, str) else _tojson(arguments)
        text += '<tool_call>\n{"name": "' + str(function.get("name")) + '", "arguments": ' + arguments
        text += "}\n</tool_call>"
    return text


def render_pieces(messages: list[dict], tools: list[dict] | None = None) -> list[Piece]:
    """The conversation as Qwen3's template lays it out, in pieces marked trained or not."""
    if not messages:
        raise ValueError("render: a conversation needs at least one message")
    pieces: list[Piece] = []
    first_system = messages[0].get("role") == "system"
    if tools:
        head = f"{IM_START}system\n" + (messages[0]["content"] + "\n\n" if first_system else "")
        head += TOOLS_INTRO + "".join("\n" + _tojson(tool) for tool in tools) + TOOLS_OUTRO
        pieces.append(Piece(text=head))
    elif first_system:
        pieces.append(Piece(text=f"{IM_START}system\n{messages[0]['content']}{IM_END}\n"))
    last_query = _last_query_index(messages)
    last = len(messages) - 1
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "user" or (role == "system" and index > 0):
            pieces.append(Piece(text=f"{IM_START}{role}\n{_content(message)}{IM_END}\n"))
        elif role == "assistant":
            output = assistant_output(message, keep_reasoning=index > last_query, final=index == last)
            pieces.append(Piece(text=ASSISTANT_HEADER))
            pieces.append(Piece(text=output + IM_END, turn=index))
            pieces.append(Piece(text="\n"))
        elif role == "tool":
            text = ""
            if index == 0 or messages[index - 1].get("role") != "tool":
                text += f"{IM_START}user"
            text += "\n<tool_response>\n" + _content(message) + "\n</tool_response>"
            if index == last or messages[index + 1].get("role") != "tool":
                text += f"{IM_END}\n"
            pieces.append(Piece(text=text))
    merged: list[Piece] = []
    for piece in pieces:  # one prompt piece between assistant outputs, tokenised whole as at inference
        if merged and piece.turn is None and merged[-1].turn is None:
            merged[-1] = Piece(text=merged[-1].text + piece.text)
        elif piece.text:
            merged.append(piece)
    return merged


def row_system_prompt(row: dict) -> str | None:
    """The system prompt a row was played with: its own system message wins (the agent adds none then);
    else its `system_prompt` (a corpus row's `metadata.system_prompt`, manifest /2); else the default
    every model-backed agent adds (`DEFAULT_SYSTEM_PROMPT`)."""
    from shoparena.agents.chat_loop import DEFAULT_SYSTEM_PROMPT

    metadata = row.get("metadata") if isinstance(row.get("metadata"), dict) else {}
    for value in (row.get("system_prompt"), metadata.get("system_prompt")):
        if isinstance(value, str):
            return value or None
    return DEFAULT_SYSTEM_PROMPT


def serving_messages(messages: list[dict], system_prompt: str | None) -> list[dict]:
    """An OpenAI-format history as the agent hands it to the chat template (see the module doc)."""
    from shoparena.agents.chat_loop import ChatLoop

    loop = ChatLoop(_never_called, "qwen3", tools_via="api", system_prompt=system_prompt)
    rendered, _ = loop.render_history(loop.with_system_prompt(messages), None)
    return rendered


def _never_called(messages: list[dict], tools: list[dict] | None):
    raise AssertionError("serving_messages renders only; it never calls a model")


def render_row(tokenizer: Any, row: dict, *, check_template: bool = True) -> RenderedConversation:
    """A training row (`messages`, `tools`, optional `system_prompt`) rendered as it is served."""
    messages = serving_messages(row["messages"], row_system_prompt(row))
    return render_with_mask(tokenizer, messages, row.get("tools") or None, check_template=check_template)


def _first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def render_with_mask(
    tokenizer: Any, messages: list[dict], tools: list[dict] | None = None, *, check_template: bool = True
) -> RenderedConversation:
    """Token ids and the assistant-only mask of one conversation (see the module doc).

    `check_template`: compare the rendering with the tokenizer's own `apply_chat_template` (raises
    `TemplateMismatch` naming the first differing character)."""
    pieces = render_pieces(messages, tools)
    text = "".join(piece.text for piece in pieces)
    if check_template:
        expected = tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=False)
        if expected != text:
            at = _first_difference(expected, text)
            raise TemplateMismatch(
                f"the tokenizer's chat template renders this conversation differently from Qwen3's layout "
                f"at character {at}: template {expected[at : at + 60]!r} vs render {text[at : at + 60]!r}"
            )
    input_ids: list[int] = []
    mask: list[int] = []
    spans: list[AssistantSpan] = []
    for piece in pieces:
        ids = tokenizer(piece.text, add_special_tokens=False)["input_ids"]
        if piece.turn is not None:
            spans.append(
                AssistantSpan(
                    turn=piece.turn, start=len(input_ids), end=len(input_ids) + len(ids), text=piece.text
                )
            )
        input_ids.extend(ids)
        mask.extend([1 if piece.turn is not None else 0] * len(ids))
    return RenderedConversation(input_ids=input_ids, assistant_mask=mask, spans=spans, text=text)


def _runs(mask: list[int]) -> list[tuple[int, int]]:
    """[start, end) of every run of ones."""
    runs, start = [], None
    for index, bit in enumerate([*mask, 0]):
        if bit and start is None:
            start = index
        elif not bit and start is not None:
            runs.append((start, index))
            start = None
    return runs


def assistant_char_ranges(text: str) -> list[tuple[int, int]]:
    """Where assistant output lies in rendered ChatML text, found from the text alone: after each
    `<|im_start|>assistant\\n` header up to and including the next `<|im_end|>`."""
    ranges, at = [], 0
    while (header := text.find(ASSISTANT_HEADER, at)) >= 0:
        start = header + len(ASSISTANT_HEADER)
        end = text.find(IM_END, start)
        if end < 0:
            raise MaskError(f"an assistant turn at character {start} has no {IM_END}")
        ranges.append((start, end + len(IM_END)))
        at = end
    return ranges


def assert_mask_is_assistant_only(
    tokenizer: Any, rendered: RenderedConversation, messages: list[dict], tools: list[dict] | None = None
) -> None:
    """Raise `MaskError` unless the mask covers exactly the assistant output of every assistant turn.

    Checked independently of how the mask was built: the ids decode to the chat template's rendering of
    `messages`; the runs of masked-in tokens, placed in that text by decoding, are exactly the ranges
    between each `<|im_start|>assistant\\n` header and its `<|im_end|>` (so no system, user, tool or
    header token is trained on, and no assistant token is left out); each run holds its own turn's
    text and tool calls."""
    ids, mask = rendered.input_ids, rendered.assistant_mask
    if len(ids) != len(mask) or any(bit not in (0, 1) for bit in mask):
        raise MaskError(f"the mask has {len(mask)} entries for {len(ids)} tokens, or a value other than 0/1")
    text = tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=False)
    decoded = tokenizer.decode(ids, skip_special_tokens=False)
    if decoded != text:
        at = _first_difference(decoded, text)
        raise MaskError(f"the token ids do not decode to the chat template's text (first difference at {at})")
    runs = _runs(mask)
    found: list[tuple[int, int]] = []
    bounds = sorted({0, len(ids), *(b for run in runs for b in run)})
    offsets: dict[int, int] = {0: 0}
    for left, right in itertools.pairwise(bounds):
        offsets[right] = offsets[left] + len(tokenizer.decode(ids[left:right], skip_special_tokens=False))
    found = [(offsets[start], offsets[end]) for start, end in runs]
    expected = assistant_char_ranges(text)
    if found != expected:
        raise MaskError(
            f"masked-in character ranges {found} differ from the assistant outputs {expected}: "
            + "; ".join(repr(text[a:b][:80]) for a, b in found if (a, b) not in expected)
        )
    turns = [index for index, message in enumerate(messages) if message.get("role") == "assistant"]
    if len(turns) != len(found):
        raise MaskError(f"{len(turns)} assistant messages but {len(found)} masked-in spans")
    for turn, (start, end) in zip(turns, found, strict=True):
        span = text[start:end]
        message = messages[turn]
        content = _content(message).split("</think>")[-1].strip()
        if content and content not in span:
            raise MaskError(f"message {turn}: its text is not in its masked-in span {span[:80]!r}")
        for call in message.get("tool_calls") or []:
            name = (call.get("function") or call).get("name")
            if f'{{"name": "{name}"' not in span:
                raise MaskError(f"message {turn}: tool call {name!r} is not in its masked-in span")
