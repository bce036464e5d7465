"""The three ways a model talks to the harness, each read (`parse`) and written (`render`) (SPEC §3).

- `openai`: Chat Completions function calling: an assistant message with `tool_calls`, answered by
  `tool` messages carrying `tool_call_id`.
- `upstream`: ShoppingBench's text tags: `<think>…</think>`, `<tool_call>[{"name", "parameters"}, …]
  </tool_call>` (a JSON list), `<response>…</response>`; observations go back as `<obs>[…]</obs>` in
  a single user prompt that replays the whole dialogue, as upstream's ReAct loop builds it.
- `qwen3`: Qwen3's native template: optional `<think>`, one `<tool_call>{"name", "arguments"}</tool_call>`
  per call, results as `<tool_response>…</tool_response>` in the next user turn.

The canonical history is OpenAI messages (what `Episode.messages` holds); each protocol's `render`
turns it into that protocol's prompt, and `render_turn` writes one assistant turn the way a model in
that protocol would, so `parse(render_turn(turn))` gives the turn back. Parsing is lenient where models
commonly slip (a missing closing tag, a code fence round JSON, a JSON string where an object belongs)
and records each slip in `format_errors` or the call's `error`; it never raises.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from shoparena.harness import jsontext
from shoparena.harness.models import Observation, ParsedCall, ParsedTurn

_DECODER = json.JSONDecoder()
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)


# -- shared text helpers ---------------------------------------------------------------------------
class TagScan(BaseModel):
    """A model output cut into tagged blocks (in order) and the text outside every tag."""

    blocks: list[tuple[str, str]] = Field(default_factory=list)
    outside: str = ""
    errors: list[str] = Field(default_factory=list)

    def bodies(self, tag: str) -> list[str]:
        return [body for name, body in self.blocks if name == tag]

    def thinking(self) -> str | None:
        bodies = self.bodies("think")
        return "\n\n".join(body.strip() for body in bodies) if bodies else None


def _json_end(text: str, start: int, closing: str) -> int | None:
    """Where `closing` starts when the block is one JSON value followed by it (so tags inside JSON strings
    do not cut the block); None when the block is not plain JSON (a code fence, broken JSON)."""
    index = start
    while index < len(text) and text[index].isspace():
        index += 1
    try:
        _, index = _DECODER.raw_decode(text, index)
    except ValueError:
        return None
    while index < len(text) and text[index].isspace():
        index += 1
    return index if text.startswith(closing, index) else None


def scan_tags(text: str, tags: tuple[str, ...], json_tags: tuple[str, ...] = ("tool_call",)) -> TagScan:
    """Cut `text` at the given tags, left to right; a block's body is not searched for other tags.

    Lenient where models slip: output that starts inside a template-opened `<think>` (only `</think>`
    present), an unclosed `<think>` (ends at the next tag), an unclosed last block (takes the rest, since
    generation often stops on the closing tag).
    """
    scan = TagScan()
    outside: list[str] = []
    position = 0
    if "think" in tags:
        close = text.find("</think>")
        first_tag = min((i for i in (text.find(f"<{tag}>") for tag in tags) if i >= 0), default=len(text))
        if 0 <= close < first_tag:
            scan.blocks.append(("think", text[:close]))
            position = close + len("</think>")
    while True:
        found = [(text.find(f"<{tag}>", position), tag) for tag in tags]
        found = [(index, tag) for index, tag in found if index >= 0]
        if not found:
            outside.append(text[position:])
            break
        start, tag = min(found)
        outside.append(text[position:start])
        body_start = start + len(tag) + 2
        closing = f"</{tag}>"
        end = _json_end(text, body_start, closing) if tag in json_tags else None
        if end is None:
            end = text.find(closing, body_start)
        if end >= 0:
            scan.blocks.append((tag, text[body_start:end]))
            position = end + len(closing)
            continue
        scan.errors.append(f"unclosed <{tag}>")
        if tag == "think":
            following = [i for i in (text.find(f"<{t}>", body_start) for t in tags if t != "think") if i >= 0]
            cut = min(following, default=len(text))
            scan.blocks.append((tag, text[body_start:cut]))
            position = cut
            continue
        scan.blocks.append((tag, text[body_start:]))
        break
    scan.outside = "".join(outside)
    return scan


def _unfence(block: str) -> str:
    block = block.strip()
    match = _FENCE.match(block)
    return match.group(1).strip() if match else block


def _arguments_of(item: dict, keys: tuple[str, ...]) -> tuple[dict | None, str | None]:
    """A call's arguments from the first present key; a JSON string holding an object is accepted."""
    for key in keys:
        if key in item:
            value = item[key]
            break
    else:
        return {}, None
    if value is None:
        return {}, None
    if isinstance(value, str):
        try:
            value = jsontext.loads(value) if value.strip() else {}
        except ValueError:
            return None, f"'{keys[0]}' is a string that is not JSON: {value[:80]!r}"
    if not isinstance(value, dict):
        return None, f"'{keys[0]}' must be a JSON object, got {type(value).__name__}"
    return value, None


def _call_from_item(item: Any, keys: tuple[str, ...], raw: str, example: str) -> ParsedCall:
    if not isinstance(item, dict):
        return ParsedCall(raw=raw, error=f"each tool call must be a JSON object like {example}")
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        return ParsedCall(raw=raw, error=f"tool call without a 'name'; expected {example}")
    arguments, error = _arguments_of(item, keys)
    if error is not None:
        return ParsedCall(name=name.strip(), raw=raw, error=f"{name.strip()}: {error}")
    call_id = item.get("id") if isinstance(item.get("id"), str) else None
    return ParsedCall(name=name.strip(), arguments=arguments, raw=raw, id=call_id)


def _result_value(observation: Observation) -> Any:
    return observation.result if observation.ok else observation.text


def content_text(content: Any) -> str | None:
    """Message content as text; OpenAI content parts are joined."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _text_and_reasoning(output: Any) -> tuple[str, str | None]:
    """(text, reasoning_content) of a model output for the text protocols, which find thinking and
    calls as tags in the text and fall back to a provider's separate reasoning field."""
    message = _message_of(output)
    if isinstance(message, dict):
        return content_text(message.get("content")) or "", message.get("reasoning_content")
    return message, None


def _message_of(output: Any) -> dict | str:
    """A chat-completion response, an SDK object or a message dict → the assistant message (or text)."""
    if hasattr(output, "model_dump"):
        output = output.model_dump()
    if isinstance(output, dict) and "choices" in output:
        choices = output.get("choices") or [{}]
        output = choices[0].get("message", {}) if isinstance(choices[0], dict) else {}
    return output if isinstance(output, dict | str) else str(output)


def _tool_content_value(text: str) -> Any:
    try:
        return jsontext.loads(text)
    except ValueError:
        return text


# -- the protocol interface ------------------------------------------------------------------------
class Protocol(ABC):
    name: ClassVar[str]

    @abstractmethod
    def parse(self, model_output: Any) -> ParsedTurn:
        """One model output (text, message dict, or chat-completion response) → a ParsedTurn."""

    @abstractmethod
    def render_turn(self, turn: ParsedTurn) -> Any:
        """One assistant turn written as a model in this protocol writes it."""

    @abstractmethod
    def render_observations(self, observations: list[Observation]) -> list[dict]:
        """The messages that answer one turn's calls in a running chat."""

    @abstractmethod
    def render(self, history: list[dict], tools: list[dict] | None = None) -> list[dict]:
        """A canonical (OpenAI-format) history → the chat messages to send a model in this protocol."""


class OpenAIProtocol(Protocol):
    name = "openai"

    def parse(self, model_output: Any) -> ParsedTurn:
        message = _message_of(model_output)
        if isinstance(message, str):
            message = {"role": "assistant", "content": message}
        content = content_text(message.get("content"))
        thinking = message.get("reasoning_content", message.get("reasoning"))
        errors: list[str] = []
        if thinking is None and content and "think>" in content:
            scan = scan_tags(content, ("think",), json_tags=())
            thinking, errors = scan.thinking(), scan.errors
            content = scan.outside.strip() or None
        calls = [self._parse_call(i, call) for i, call in enumerate(message.get("tool_calls") or [])]
        legacy = message.get("function_call")
        if isinstance(legacy, dict):
            calls.append(self._parse_call(len(calls), {"function": legacy}))
        return ParsedTurn(thinking=thinking, content=content, calls=calls, format_errors=errors)

    @staticmethod
    def _parse_call(index: int, call: Any) -> ParsedCall:
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            raw = jsontext.dumps(call)
            return ParsedCall(
                raw=raw, error=f"tool_calls[{index}] must be {{'type': 'function', 'function': {{...}}}}"
            )
        function = call["function"]
        call_id = call.get("id") if isinstance(call.get("id"), str) else None
        name = function.get("name")
        if not isinstance(name, str) or not name.strip():
            return ParsedCall(
                raw=jsontext.dumps(call), id=call_id, error=f"tool_calls[{index}] has no function name"
            )
        name = name.strip()
        arguments = function.get("arguments")
        if isinstance(arguments, dict):
            return ParsedCall(name=name, arguments=arguments, id=call_id, raw=jsontext.dumps(arguments))
        raw = arguments if isinstance(arguments, str) else jsontext.dumps(arguments)
        if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
            return ParsedCall(name=name, arguments={}, id=call_id, raw=raw or "")
        try:
            value = jsontext.loads(raw)
        except ValueError as exc:
            return ParsedCall(
                name=name, id=call_id, raw=raw, error=f"{name}: arguments are not valid JSON ({exc})"
            )
        if not isinstance(value, dict):
            return ParsedCall(
                name=name, id=call_id, raw=raw, error=f"{name}: arguments must be a JSON object"
            )
        return ParsedCall(name=name, arguments=value, id=call_id, raw=raw)

    def render_turn(self, turn: ParsedTurn) -> dict:
        message: dict[str, Any] = {"role": "assistant", "content": turn.content}
        if turn.thinking is not None:
            message["reasoning_content"] = turn.thinking
        if turn.calls:
            message["tool_calls"] = [
                {
                    "id": call.id or f"call_{i + 1}",
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.raw if call.arguments is None else jsontext.dumps(call.arguments),
                    },
                }
                for i, call in enumerate(turn.calls)
            ]
        return message

    def render_observations(self, observations: list[Observation]) -> list[dict]:
        return [{"role": "tool", "tool_call_id": o.call_id, "content": o.text} for o in observations]

    def render(self, history: list[dict], tools: list[dict] | None = None) -> list[dict]:
        """The history as the Chat Completions API takes it (pass `tools` to the API call itself)."""
        rendered = []
        for message in history:
            message = dict(message)
            message.pop("reasoning_content", None)
            if message.get("role") == "tool":
                message.pop("name", None)
            rendered.append(message)
        return rendered


class UpstreamProtocol(Protocol):
    name = "upstream"
    EXAMPLE = '[{"name": "find_product", "parameters": {"q": "..."}}]'

    def parse(self, model_output: Any) -> ParsedTurn:
        message, reasoning = _text_and_reasoning(model_output)
        scan = scan_tags(message, ("think", "tool_call", "response"))
        thinking, errors = scan.thinking(), list(scan.errors)
        if thinking is None and reasoning:
            thinking = reasoning.replace("<think>", "").replace("</think>", "").strip()
        blocks, responses = scan.bodies("tool_call"), scan.bodies("response")
        calls = [call for block in blocks for call in self.parse_calls(block)]
        content = responses[0].strip() if responses else None
        if len(responses) > 1:
            errors.append("more than one <response>; only the first is kept")
        stray = scan.outside.strip()
        if thinking is None:
            errors.append("no <think>...</think>")
        if not blocks and not responses:
            errors.append("neither <tool_call> nor <response>")
            content = stray or None
        elif stray:
            errors.append(f"text outside the tags: {stray[:60]!r}")
        return ParsedTurn(thinking=thinking, content=content, calls=calls, format_errors=errors)

    def parse_calls(self, block: str) -> list[ParsedCall]:
        """The calls of one `<tool_call>` body (a JSON list or one object), each with its own error."""
        body = _unfence(block)
        try:
            value = jsontext.loads(body)
        except ValueError as exc:
            return [
                ParsedCall(raw=body, error=f"<tool_call> is not valid JSON ({exc}); expected {self.EXAMPLE}")
            ]
        items = value if isinstance(value, list) else [value]
        if not items:
            return [ParsedCall(raw=body, error=f"<tool_call> holds an empty list; expected {self.EXAMPLE}")]
        return [
            _call_from_item(item, ("parameters", "arguments"), jsontext.dumps(item), self.EXAMPLE)
            for item in items
        ]

    def render_turn(self, turn: ParsedTurn) -> str:
        parts = []
        if turn.thinking is not None:
            parts.append(f"<think>{turn.thinking}</think>")
        if turn.calls:
            parts.append(
                f"<tool_call>{jsontext.dumps([self._call_item(call) for call in turn.calls])}</tool_call>"
            )
        if turn.content is not None:
            parts.append(f"<response>{turn.content}</response>")
        return "\n".join(parts)

    @staticmethod
    def _call_item(call: ParsedCall) -> dict:
        return {"name": call.name, "parameters": call.arguments if call.arguments is not None else call.raw}

    def obs_block(self, observations: list[Observation]) -> str:
        records = [{"tool_call_id": o.call_id, "results": _result_value(o)} for o in observations]
        return f"<obs>{jsontext.dumps(records)}</obs>"

    def render_observations(self, observations: list[Observation]) -> list[dict]:
        """For chat-style use; upstream itself replays the whole dialogue each step (see `render`)."""
        return [{"role": "user", "content": self.obs_block(observations)}]

    def render(self, history: list[dict], tools: list[dict] | None = None) -> list[dict]:
        """Upstream's prompt: a system prompt and one user message `# Dialogue Records History` with the
        dialogue as tagged blocks: <user>, then per step <think>, <tool_call>, <obs>, <response>."""
        system = next((m.get("content") for m in history if m.get("role") == "system"), None)
        if system is None and tools is not None:
            system = upstream_system_prompt(tools)
        parts: list[str] = []
        index = 0
        while index < len(history):
            message = history[index]
            role = message.get("role")
            index += 1
            if role == "user":
                parts.append(f"<user>{content_text(message.get('content')) or ''}</user>")
            elif role == "assistant":
                turn = OPENAI.parse(message)
                if turn.thinking:
                    parts.append(f"<think>{turn.thinking}</think>")
                if turn.calls:
                    items = [self._call_item(call) for call in turn.calls]
                    parts.append(f"<tool_call>{jsontext.dumps(items)}</tool_call>")
                results = []
                while index < len(history) and history[index].get("role") == "tool":
                    tool = history[index]
                    content = _tool_content_value(content_text(tool.get("content")) or "")
                    results.append({"tool_call_id": tool.get("tool_call_id"), "results": content})
                    index += 1
                if results:
                    parts.append(f"<obs>{jsontext.dumps(results)}</obs>")
                if turn.content:
                    parts.append(f"<response>{turn.content}</response>")
            elif role == "tool":
                content = _tool_content_value(content_text(message.get("content")) or "")
                parts.append(
                    f"<obs>{jsontext.dumps([{'tool_call_id': message.get('tool_call_id'), 'results': content}])}</obs>"
                )
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": "# Dialogue Records History\n" + "\n\n".join(parts)})
        return messages


class Qwen3Protocol(Protocol):
    name = "qwen3"
    EXAMPLE = '{"name": "find_product", "arguments": {"q": "..."}}'

    def __init__(self, tool_role: str = "user"):
        """`tool_role="tool"` leaves results as `tool` messages for a tokenizer chat template to wrap."""
        self.tool_role = tool_role

    def parse(self, model_output: Any) -> ParsedTurn:
        message, reasoning = _text_and_reasoning(model_output)
        scan = scan_tags(message, ("think", "tool_call"))
        thinking, errors = scan.thinking(), list(scan.errors)
        if thinking is None and reasoning:
            thinking = reasoning.strip()
        calls = [self._parse_block(block) for block in scan.bodies("tool_call")]
        content = scan.outside.strip() or None
        return ParsedTurn(thinking=thinking, content=content, calls=calls, format_errors=errors)

    def _parse_block(self, block: str) -> ParsedCall:
        body = _unfence(block)
        try:
            value = jsontext.loads(body)
        except ValueError as exc:
            return ParsedCall(
                raw=body, error=f"<tool_call> is not valid JSON ({exc}); expected {self.EXAMPLE}"
            )
        if isinstance(value, list):
            return ParsedCall(raw=body, error=f"one call per <tool_call> block; expected {self.EXAMPLE}")
        return _call_from_item(value, ("arguments", "parameters"), body, self.EXAMPLE)

    def render_turn(self, turn: ParsedTurn) -> str:
        text = f"<think>\n{turn.thinking}\n</think>\n\n" if turn.thinking is not None else ""
        text += turn.content or ""
        for i, call in enumerate(turn.calls):
            if i > 0 or turn.content:
                text += "\n"
            item = {
                "name": call.name,
                "arguments": call.arguments if call.arguments is not None else call.raw,
            }
            text += f"<tool_call>\n{jsontext.dumps(item)}\n</tool_call>"
        return text

    def render_observations(self, observations: list[Observation]) -> list[dict]:
        if self.tool_role == "tool":
            return [{"role": "tool", "content": o.text} for o in observations]
        body = "\n".join(f"<tool_response>\n{o.text}\n</tool_response>" for o in observations)
        return [{"role": "user", "content": body}]

    def render(self, history: list[dict], tools: list[dict] | None = None) -> list[dict]:
        rendered: list[dict] = []
        system = next((m.get("content") for m in history if m.get("role") == "system"), None)
        if tools:
            system = qwen3_tools_system(system, tools)
        if system:
            rendered.append({"role": "system", "content": system})
        pending: list[str] = []

        def flush() -> None:
            if pending:
                if self.tool_role == "tool":
                    rendered.extend({"role": "tool", "content": text} for text in pending)
                else:
                    body = "\n".join(f"<tool_response>\n{text}\n</tool_response>" for text in pending)
                    rendered.append({"role": "user", "content": body})
                pending.clear()

        for message in history:
            role = message.get("role")
            if role == "tool":
                pending.append(content_text(message.get("content")) or "")
                continue
            flush()
            if role == "assistant":
                rendered.append({"role": "assistant", "content": self.render_turn(OPENAI.parse(message))})
            elif role == "user":
                rendered.append({"role": "user", "content": content_text(message.get("content")) or ""})
        flush()
        return rendered


def upstream_system_prompt(tools: list[dict]) -> str:
    """A system prompt in upstream's layout (role, tools, rules, output format) for the given tools."""
    lines = []
    for i, tool in enumerate(tools, start=1):
        function = tool["function"]
        properties = function["parameters"].get("properties", {})
        required = set(function["parameters"].get("required", []))
        args = ", ".join(
            f"{name}{'' if name in required else '?'}: {p['type']}" for name, p in properties.items()
        )
        lines.append(f"{i}. {function['name']}({args})\n    {function['description']}")
        lines.extend(f"    - {name}: {p['description']}" for name, p in properties.items())
    return (
        "# Role\nYou are a shopping assistant that solves the user's task over several turns by calling "
        "tools and answering in a structured format.\n\n"
        "# Available Tools\n" + "\n".join(lines) + "\n\n"
        "# Tools Rules\n"
        "1. Results of your tool calls come back in <obs>...</obs>, linked by tool_call_id.\n"
        "2. Check tool results against the user's needs before relying on them.\n"
        "3. Recommend the products that meet the need with recommend_product (once), then call terminate.\n\n"
        "# Output Format\n"
        "Always write <think>...</think> and at least one of <tool_call>...</tool_call> or "
        "<response>...</response>, nothing else. <tool_call> holds a JSON array of calls, each "
        '{"name": tool name, "parameters": {...}}:\n'
        '<think>your reasoning</think>\n<tool_call>[{"name": "find_product", "parameters": {"q": "..."}}]'
        "</tool_call>\n<response>what the user sees</response>"
    )


def qwen3_tools_system(system: str | None, tools: list[dict]) -> str:
    """Qwen3's chat-template tool preamble, for callers that format text without the tokenizer."""
    signatures = "\n".join(jsontext.dumps(tool) for tool in tools)
    preamble = (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
        f"{signatures}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )
    return f"{system}\n\n{preamble}" if system else preamble


OPENAI = OpenAIProtocol()
UPSTREAM = UpstreamProtocol()
QWEN3 = Qwen3Protocol()
PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (OPENAI, UPSTREAM, QWEN3)}


PROTOCOL_ALIASES: dict[str, str] = {"tags": "upstream", "qwen": "qwen3"}
"""Other spellings every agent and the CLI accept: upstream's protocol is its text tags, `qwen` is short."""


def protocol_spellings() -> list[str]:
    """Every accepted name: the protocols', then the aliases."""
    return [*PROTOCOLS, *PROTOCOL_ALIASES]


def canonical_protocol(name: str) -> str:
    """The protocol's own name for any spelling (`tags` → `upstream`); ValueError names the choices."""
    canonical = PROTOCOL_ALIASES.get(name, name)
    if canonical not in PROTOCOLS:
        choices = ", ".join(
            f"{p} (or {', '.join(a for a, c in PROTOCOL_ALIASES.items() if c == p)})"
            if p in PROTOCOL_ALIASES.values()
            else p
            for p in PROTOCOLS
        )
        raise ValueError(f"unknown protocol {name!r}; use one of {choices}")
    return canonical


def get_protocol(protocol: str | Protocol) -> Protocol:
    if isinstance(protocol, Protocol):
        return protocol
    return PROTOCOLS[canonical_protocol(protocol)]
