"""`src.agent.agent_interface` of SN15 (issue 23): the tool registry, tool-call ids and the dialogue
step format a subnet miner builds its steps with.

Same names, signatures and outputs as the subnet's module: `Tool` registers a function under its own
name or a given one (`@Tool`, `@Tool()`, `@Tool("name")`); `generate_tool_call_id` is the first
`length` characters of the URL-safe base64 MD5 of "NAME\\nPARAMETERS" with `=`, `+` and `/` removed
(so ids match the subnet's for the same call); `create_dialogue_step` returns
`{"completion": {"reasoning_content", "content", "message"}, "extra_info": {"step", "query",
"timestamp"}}` with `content` in `<think>` / `<tool_call>` / `<response>` tags. The registered tools
run in the miner's process: a tool that searches calls `ProxyClient`, which is where the episode
records it.
"""

import base64
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any, TypedDict


class ToolCallResult(TypedDict):
    """One executed tool call as a step records it."""

    name: str
    parameters: dict[str, Any]
    tool_call_id: str
    result: Any


_TOOL_REGISTRY: dict[str, Callable] = {}
"""Tool name → function, in registration order (the template builds its prompt from it)."""


def register_tool(name: str, func: Callable) -> None:
    _TOOL_REGISTRY[name] = func


def Tool(name=None):
    """Register a tool: `@Tool` (the function's name), `@Tool()` or `@Tool("name")`."""
    if callable(name):
        register_tool(name.__name__, name)
        return name

    def decorator(func: Callable) -> Callable:
        register_tool(name if name is not None else func.__name__, func)
        return func

    return decorator


def get_tool(name: str) -> Callable:
    """The registered tool; an unknown name raises ValueError listing the registered ones."""
    try:
        return _TOOL_REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_TOOL_REGISTRY)) or "(none)"
        raise ValueError(f"Tool '{name}' is not registered. Available tools: {known}") from None


def generate_tool_call_id(name: str, parameters: dict, length: int = 8) -> str:
    """The subnet's deterministic call id (see the module docstring)."""
    digest = hashlib.md5(f"{name}\n{parameters}".encode(), usedforsecurity=False).digest()
    text = base64.urlsafe_b64encode(digest).decode("ascii")
    for dropped in "=+/":
        text = text.replace(dropped, "")
    return text[:length]


def format_content(think: str, tool_calls: list[dict], response: str) -> str:
    """The step's `content`: the tagged parts present, one per line (calls without their ids)."""
    parts = []
    if think:
        parts.append(f"<think>{think}</think>")
    if tool_calls:
        listed = [{"name": call["name"], "parameters": call["parameters"]} for call in tool_calls]
        parts.append(f"<tool_call>{json.dumps(listed)}</tool_call>")
    if response:
        parts.append(f"<response>{response}</response>")
    return "\n".join(parts)


def create_dialogue_step(
    think: str, tool_results: list[ToolCallResult], response: str, query: str, step: int
) -> dict:
    """One step in the subnet's (and the arena's) step format."""
    message: dict[str, Any] = {}
    if think:
        message["think"] = think
    if tool_results:
        message["tool_call"] = tool_results
    if response:
        message["response"] = response
    return {
        "completion": {
            "reasoning_content": "",
            "content": format_content(think, tool_results, response),
            "message": message,
        },
        "extra_info": {"step": step, "query": query, "timestamp": int(time.time() * 1000)},
    }


def execute_tool_call(tool_name: str, parameters: dict) -> ToolCallResult:
    """Run a registered tool with `parameters` as keyword arguments; the result with its call id."""
    result = get_tool(tool_name)(**parameters)
    return {
        "name": tool_name,
        "parameters": parameters,
        "tool_call_id": generate_tool_call_id(tool_name, parameters),
        "result": result,
    }
