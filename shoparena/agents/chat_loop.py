"""The multi-turn loop every model-backed agent shares: render the episode's history in the agent's
protocol, ask the model, hand its output to the harness, repeat.

The episode's OpenAI-format trace is the one history: each turn is rendered from `episode.messages`,
so what the model sees next is exactly what the harness recorded (calls with the ids it assigned,
observations and error observations). Backends (an HTTP endpoint, a local checkpoint) only implement
`complete`; parsing, execution and bookkeeping live here once.

The loop never raises for model trouble: a failed model call ends the run with `AgentRun.error`;
malformed tool calls are the harness's business (error observations) and the loop goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from shoparena.agents.base import AgentRun
from shoparena.harness import jsontext
from shoparena.harness.episode import Episode
from shoparena.harness.protocols import (
    OPENAI,
    Protocol,
    Qwen3Protocol,
    get_protocol,
    upstream_system_prompt,
)

DEFAULT_SYSTEM_PROMPT = (
    "You are a shopping assistant. Solve the user's shopping task by calling the tools: search the "
    "catalogue, check product details against every requirement in the request, then call "
    "recommend_product once with the ids that satisfy it (in the order the user asked for them) and "
    "finish with terminate."
)
"""Used when neither the episode nor the agent gives a system prompt (protocol `tags` builds upstream's own)."""

ToolsVia = Literal["api", "prompt"]


class ModelError(RuntimeError):
    """A model call that failed for good (after retries); the loop ends the run with its message."""


class Completion(BaseModel):
    """One model call's answer: the output the protocol parses, and what it cost."""

    model_config = ConfigDict(extra="forbid")

    output: Any
    """An assistant message dict (protocol openai) or the generated text (text protocols)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None


CompleteFn = Callable[[list[dict], list[dict] | None], Completion]
"""`complete(messages, tools)`: `tools` is None when the prompt already carries the tool schemas."""


class ChatLoop:
    """Drives one episode with one model.

    `tools_via="api"` hands the tool schemas to `complete` (OpenAI `tools=`, or a tokenizer chat
    template that renders them itself); `"prompt"` puts them in the system prompt in the protocol's
    own layout and passes no tools. Protocol openai is always `"api"`.
    """

    def __init__(
        self,
        complete: CompleteFn,
        protocol: str | Protocol = "openai",
        *,
        tools_via: ToolsVia | None = None,
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        max_turns: int | None = None,
    ):
        self.complete = complete
        self.protocol = get_protocol(protocol)
        if self.protocol.name == "openai":
            tools_via = "api"
        self.tools_via: ToolsVia = tools_via or "prompt"
        self.system_prompt = system_prompt or None
        if max_turns is not None and max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        self.max_turns = max_turns

    # -- rendering ---------------------------------------------------------------------------------
    def system_prompt_for(self, tools: list[dict]) -> str | None:
        """The system prompt this loop would use, for a runner to put in the episode (and so the trace).

        Protocol tags uses upstream's prompt, which lists the tools itself.
        """
        if self.protocol.name == "upstream":
            return upstream_system_prompt(tools)
        return self.system_prompt

    def history(self, episode: Episode) -> list[dict]:
        """The episode's trace with the agent's system prompt in front when the episode has none."""
        return self.with_system_prompt(episode.messages)

    def with_system_prompt(self, messages: list[dict]) -> list[dict]:
        """OpenAI-format messages with the agent's system prompt in front when they have none."""
        has_system = any(m.get("role") == "system" for m in messages)
        # upstream's prompt is built from the tools when no system prompt is given: keep that default
        if not has_system and self.system_prompt and self.protocol.name != "upstream":
            messages = [{"role": "system", "content": self.system_prompt}, *messages]
        return messages

    def render(self, episode: Episode) -> tuple[list[dict], list[dict] | None]:
        """The messages (and tools, when they travel outside the prompt) for the next model call."""
        return self.render_history(self.history(episode), episode.tools)

    def render_history(
        self, history: list[dict], tools: list[dict] | None
    ) -> tuple[list[dict], list[dict] | None]:
        """`render` for any OpenAI-format history (the model server renders its requests with it)."""
        if self.protocol.name == "openai":
            return [_with_sendable_arguments(m) for m in OPENAI.render(history)], tools
        if self.tools_via == "api":
            # a chat template renders the tools and wraps `tool` messages itself
            protocol = Qwen3Protocol(tool_role="tool") if self.protocol.name == "qwen3" else self.protocol
            return protocol.render(history, None), tools
        return self.protocol.render(history, tools), None

    # -- driving -----------------------------------------------------------------------------------
    def run(self, episode: Episode, run: AgentRun | None = None) -> AgentRun:
        run = run or AgentRun()
        turns = 0
        while not episode.ended and (self.max_turns is None or turns < self.max_turns):
            try:
                messages, tools = self.render(episode)
                completion = self.complete(messages, tools)
            except ModelError as exc:
                run.error = str(exc)
                break
            except Exception as exc:  # a backend bug must end this run, not the whole evaluation
                run.error = f"model call failed: {type(exc).__name__}: {exc}"
                break
            turns += 1
            run.usage.add(completion.prompt_tokens, completion.completion_tokens)
            run.model_outputs.append(completion.output)
            observations = episode.run_turn(self.protocol, completion.output, origin="llm")
            if not observations:  # no tool call: the model gave its final answer
                break
        return run


def _with_sendable_arguments(message: dict) -> dict:
    """Tool-call arguments that are not a JSON object become "{}" in what is sent back.

    Servers such as vLLM json-decode the arguments of past tool calls to render their chat template
    and reject the whole request otherwise; the error observation that follows already tells the model
    what was wrong with its call, and the episode's own trace keeps the raw text.
    """
    calls = message.get("tool_calls")
    if not calls:
        return message
    fixed = []
    for call in calls:
        arguments = call.get("function", {}).get("arguments")
        if isinstance(arguments, str) and not _is_json_object(arguments):
            call = {**call, "function": {**call["function"], "arguments": "{}"}}
        fixed.append(call)
    return {**message, "tool_calls": fixed}


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(jsontext.loads(text), dict)
    except ValueError:
        return False
