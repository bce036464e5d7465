"""The OFFLINE REFERENCE MODEL: a built-in, model-free "chat model" that answers a chat request with the
next assistant message the reference agentic policy would emit (SPEC §5, §6). For tests and demos of
the inference proxy only; it is not a language model and says so in every response's `model`.

Given the conversation so far — the user's query, the assistant turns it emitted earlier and the tool
results that answered them — it replays the reference solver (`reference/solver.py`, the policy
of `reference:agentic`) from the start, feeding each earlier turn the results that followed it, and
answers with the solver's next batch: reasoning text plus tool calls. Same conversation, same answer:
it is a pure function of the request (and of the step cap the proxy tells it).

What it reads:
- the query: the first `user` message that is not a tool result;
- the results of an assistant turn: the `tool` messages after it (their `content`, as the tool server's
  `text`: a result's JSON, or `Error: …` for a failed call), or, in a `user` message after it,
  Qwen3 `<tool_response>…</tool_response>` blocks or upstream `<obs>[{"tool_call_id", "results"}]</obs>`;
- the tools it may call: the request's `tools`, else what the proxy says the episode has.

How it answers (`protocol`): `openai` — `reasoning_content` + native `tool_calls`; `upstream` — a
`<think>` block and a `<tool_call>[…]</tool_call>` list in `content`; `qwen3` — `<think>` and one
`<tool_call>{…}</tool_call>` per call; `auto` (`reference-agentic-auto`, what SN15's model names reach)
— tags when the request's prompt asks for them and gives no `tools`, else native tool calls. A user
message that replays the whole dialogue (`<user>…</user>` … `<obs>…</obs>`, SN15's template) is read
as that dialogue. Its turns hold up to 8 calls and leave room for the final
recommend/terminate under the step cap, counting one step per call (a miner makes one call per step).
Token usage is counted by a rule (4 characters per token) and reported as the upstream's usage.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Generator
from typing import Any

from pydantic import BaseModel, ConfigDict

from shoparena.agents.reference.agent import MAX_PARALLEL_CALLS, classify_bucket
from shoparena.agents.reference.query import parse_query
from shoparena.agents.reference.solver import Batch, Solver
from shoparena.harness import jsontext
from shoparena.harness.models import ParsedCall, ParsedTurn
from shoparena.harness.protocols import content_text, get_protocol, scan_tags
from shoparena.harness.tool_specs import DEFAULT_STEP_CAPS, PROFILES

OFFLINE_MODEL_PREFIX = "offline-reference"
AUTO = "auto"
PROTOCOL_OF_MODEL = {
    "reference-agentic": "openai",
    "reference-agentic-tags": "upstream",
    "reference-agentic-qwen3": "qwen3",
    "reference-agentic-auto": AUTO,
}
"""The offline models by name (`offline:NAME` as an upstream), and the protocol each answers in;
`auto` answers in the protocol the request asks for (`protocol_for`)."""
SUBNET_MODEL_NAMES = (
    "deepseek-ai/DeepSeek-V3.2-TEE",
    "Qwen/Qwen3-32B-TEE",
    "zai-org/GLM-5.1-TEE",
    "zai-org/GLM-5-TEE",
    "google/gemma-4-31B-turbo-TEE",
)
"""Model names SN15's template and validator code request (its template's default first): the proxy's
default allowlist sends them to `offline:reference-agentic-auto`, so a subnet miner runs offline."""
HISTORY_TAGS = re.compile(r"<(user|tool_call|obs)>(.*?)</\1>", re.DOTALL)
CHARS_PER_TOKEN = 4
RESERVE = 2
"""Calls kept for recommend_product and terminate."""
ERROR_PREFIX = "Error: "
DONE_TEXT = "The task is complete; there is nothing more to call."


class ReferenceModelError(ValueError):
    """A request the offline model cannot answer (no user query); the proxy answers it with a 400."""


class _Seen(BaseModel):
    """One tool result as the solver reads observations (`ok`, `result`, `error`)."""

    model_config = ConfigDict(extra="forbid")

    ok: bool
    result: Any = None
    error: str | None = None


def tokens_of(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def _seen_from_text(text: str) -> _Seen:
    if text.startswith(ERROR_PREFIX):
        return _Seen(ok=False, error=text[len(ERROR_PREFIX) :])
    try:
        return _Seen(ok=True, result=jsontext.loads(text))
    except ValueError:
        return _Seen(ok=True, result=text)


def _results_in_user_message(text: str) -> list[_Seen] | None:
    """Tool results a `user` message carries (Qwen3 or upstream blocks); None when it carries none."""
    if "<tool_response>" in text:
        scan = scan_tags(text, ("tool_response",), json_tags=())
        return [_seen_from_text(body.strip()) for body in scan.bodies("tool_response")]
    if "<obs>" in text:
        seen: list[_Seen] = []
        for body in scan_tags(text, ("obs",), json_tags=("obs",)).bodies("obs"):
            try:
                records = jsontext.loads(body)
            except ValueError:
                continue
            for record in records if isinstance(records, list) else [records]:
                value = record.get("results") if isinstance(record, dict) else record
                if isinstance(value, str):
                    seen.append(_seen_from_text(value))
                else:
                    seen.append(_Seen(ok=True, result=value))
        return seen
    return None


class Conversation(BaseModel):
    """A chat request read the way the offline model needs it."""

    model_config = ConfigDict(extra="forbid")

    query: str
    turns: list[list[_Seen]]
    """Per earlier assistant turn, the results that answered it."""


def _read_history(text: str) -> Conversation | None:
    """A whole dialogue replayed in one user message, as upstream's ReAct loop and SN15's template
    send it: `<user>QUERY</user>`, then per turn `<think>`, `<tool_call>[…]</tool_call>` and the
    `<obs>[{"tool_call_id", "results"}]</obs>` that answered it. None when `text` holds no `<user>`."""
    query: str | None = None
    turns: list[list[_Seen]] = []
    for match in HISTORY_TAGS.finditer(text):
        tag, body = match.group(1), match.group(2)
        if tag == "user":
            query = query or body.strip()
        elif query is not None and tag == "tool_call":
            turns.append([])
        elif query is not None and tag == "obs" and turns:
            turns[-1].extend(_results_in_user_message(f"<obs>{body}</obs>") or [])
    return Conversation(query=query, turns=turns) if query else None


def asks_for_tags(body: dict[str, Any]) -> bool:
    """Whether a request asks for answers in tags: no `tools`, and a message that shows `<tool_call>`
    (the template's system prompt spells out the tag format)."""
    if body.get("tools"):
        return False
    for message in body.get("messages") or []:
        if isinstance(message, dict) and "<tool_call>" in (content_text(message.get("content")) or ""):
            return True
    return False


def read_conversation(messages: list[Any]) -> Conversation:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            history = _read_history(content_text(message.get("content")) or "")
            if history is not None:
                return history
            break
    query: str | None = None
    turns: list[list[_Seen]] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        text = content_text(message.get("content")) or ""
        if query is None:
            if role == "user" and text.strip() and _results_in_user_message(text) is None:
                query = text.strip()
            continue
        if role == "assistant":
            turns.append([])
        elif role == "tool" and turns:
            turns[-1].append(_seen_from_text(text))
        elif role == "user" and turns:
            results = _results_in_user_message(text)
            if results:
                turns[-1].extend(results)
    if query is None:
        raise ReferenceModelError("the offline reference model needs a user message holding the query")
    return Conversation(query=query, turns=turns)


def _tool_names(tools: Any, fallback: tuple[str, ...] | None) -> tuple[str, ...]:
    names = []
    for tool in tools or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return tuple(names) or fallback or PROFILES["oro7"]


def _default_step_cap(tools: tuple[str, ...]) -> int:
    for profile, names in PROFILES.items():
        if set(names) == set(tools):
            return DEFAULT_STEP_CAPS[profile]
    return DEFAULT_STEP_CAPS["oro7"]


class ReferenceChatModel:
    """`complete(body)` → a chat-completion response dict; one instance serves any number of episodes."""

    def __init__(self, name: str = "reference-agentic", max_parallel_calls: int = MAX_PARALLEL_CALLS):
        if name not in PROTOCOL_OF_MODEL:
            raise ValueError(
                f"no offline model {name!r}; the offline models are {', '.join(PROTOCOL_OF_MODEL)}"
            )
        if max_parallel_calls < 1:
            raise ValueError("max_parallel_calls must be at least 1")
        self.name = name
        protocol = PROTOCOL_OF_MODEL[name]
        self.protocol = None if protocol == AUTO else get_protocol(protocol)
        self.max_parallel_calls = max_parallel_calls

    @property
    def model_id(self) -> str:
        return f"{OFFLINE_MODEL_PREFIX}:{self.name}"

    def protocol_for(self, body: dict[str, Any]):
        """The model's own protocol, or for `auto` the one the request asks for: tags when it gives no
        `tools` and its prompt shows `<tool_call>` (SN15's template), else native tool calls."""
        if self.protocol is not None:
            return self.protocol
        return get_protocol("upstream" if asks_for_tags(body) else "openai")

    def next_batch(
        self, body: dict[str, Any], *, step_cap: int | None = None, tools: tuple[str, ...] | None = None
    ) -> tuple[int, Batch | None]:
        """(turn number, the solver's next batch) for the request; None when the policy is finished."""
        conversation = read_conversation(body.get("messages") or [])
        names = _tool_names(body.get("tools"), tools)
        cap = step_cap if step_cap is not None else _default_step_cap(names)
        used = [0]

        def capacity() -> int:
            return max(0, min(self.max_parallel_calls, cap - used[0] - RESERVE))

        plan = parse_query(conversation.query, classify_bucket(conversation.query), None)
        solver = Solver(plan, names, capacity)
        batches = solver.steps()
        batch = _next_with_calls(batches, None, [])
        for turn, results in enumerate(conversation.turns, start=1):
            if batch is None:
                return len(conversation.turns) + 1, None
            used[0] += len(batch.calls)
            try:
                batch = _next_with_calls(batches, results, [])
            except Exception as exc:  # results the policy cannot read: the request's fault, said plainly
                raise ReferenceModelError(
                    f"the offline reference model cannot read the tool results after assistant turn {turn} "
                    f"(expected each tool message to hold the tool's reply text): {type(exc).__name__}: {exc}"
                ) from None
        return len(conversation.turns) + 1, batch

    def complete(
        self, body: dict[str, Any], *, step_cap: int | None = None, tools: tuple[str, ...] | None = None
    ) -> dict[str, Any]:
        turn_number, batch = self.next_batch(body, step_cap=step_cap, tools=tools)
        if batch is None:
            turn = ParsedTurn(content=DONE_TEXT)
        else:
            calls = [
                ParsedCall(name=c.name, arguments=c.arguments, id=f"call_{turn_number}_{i + 1}")
                for i, c in enumerate(batch.calls)
            ]
            turn = ParsedTurn(thinking=batch.reasoning, content=batch.content, calls=calls)
        output = self.protocol_for(body).render_turn(turn)
        message = output if isinstance(output, dict) else {"role": "assistant", "content": output}
        prompt_text = jsontext.dumps(body.get("messages") or [])
        completion_text = jsontext.dumps(message)
        digest = hashlib.sha256(prompt_text.encode("utf-8", "replace")).hexdigest()[:16]
        return {
            "id": f"chatcmpl-offline-{digest}-{turn_number}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model_id,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if turn.calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": tokens_of(prompt_text),
                "completion_tokens": tokens_of(completion_text),
                "total_tokens": tokens_of(prompt_text) + tokens_of(completion_text),
            },
        }


def _next_with_calls(
    batches: Generator[Batch, list[Any], None], results: list[_Seen] | None, reasoning: list[str]
) -> Batch | None:
    """The solver's next batch that holds calls (batches without calls are thought, not turns)."""
    try:
        batch = next(batches) if results is None else batches.send(results)
        while not batch.calls:
            reasoning.append(batch.reasoning)
            batch = batches.send([])
    except StopIteration:
        return None
    if reasoning:
        batch = batch.model_copy(update={"reasoning": " ".join([*reasoning, batch.reasoning])})
    return batch
