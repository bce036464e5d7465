"""The OpenAI Chat Completions request the model server accepts, validated at the boundary.

Why a schema of our own rather than passing JSON through: a served training checkpoint sees only what
this server renders, so every message must be something the qwen3 renderer understands (system, user,
assistant with `tool_calls` whose arguments are JSON text, tool results), and a client that sends
anything else should learn which field is wrong (`validation_message`), not get a 500 from deep in a
chat template. Fields OpenAI clients send that the server does not act on (`user`, `tool_choice`,
`parallel_tool_calls`, …) are accepted and ignored, as vLLM does.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

ROLES = ("system", "user", "assistant", "tool")
MAX_STOP_STRINGS = 4


def _text(value: Any) -> Any:
    """OpenAI content: a string, or a list of `{"type": "text", "text": …}` parts (joined here)."""
    if isinstance(value, list):
        texts = []
        for index, part in enumerate(value):
            if (
                not isinstance(part, dict)
                or part.get("type") != "text"
                or not isinstance(part.get("text"), str)
            ):
                raise ValueError(f'part {index} is not a text part {{"type": "text", "text": "…"}}')
            texts.append(part["text"])
        return "".join(texts)
    return value


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    @field_validator("content", mode="before", check_fields=False)
    @classmethod
    def _content(cls, value: Any) -> Any:
        return _text(value)

    def as_history(self) -> dict[str, Any]:
        """The message as the canonical OpenAI-format history entry the protocols render."""
        return self.model_dump(exclude_none=True)


class SystemMessage(_Message):
    role: Literal["system"]
    content: str


class UserMessage(_Message):
    role: Literal["user"]
    content: str


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1)
    arguments: str
    """JSON text of the arguments object, as OpenAI sends it (and as this server answers it)."""


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


class AssistantMessage(_Message):
    role: Literal["assistant"]
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None


class ToolMessage(_Message):
    role: Literal["tool"]
    content: str
    tool_call_id: str | None = None


Message = Annotated[SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")]


class FunctionSpec(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ToolSpec(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: Literal["function"]
    function: FunctionSpec


class ChatRequest(BaseModel):
    """A non-streaming, single-choice chat completion request."""

    model_config = ConfigDict(extra="ignore")

    model: str
    messages: list[Message] = Field(min_length=1)
    tools: list[ToolSpec] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    seed: int | None = None
    stop: list[str] | None = None
    stream: bool = False
    n: int = 1

    @field_validator("stop", mode="before")
    @classmethod
    def _stop(cls, value: Any) -> Any:
        value = [value] if isinstance(value, str) else value
        if isinstance(value, list) and len(value) > MAX_STOP_STRINGS:
            raise ValueError(f"at most {MAX_STOP_STRINGS} stop strings, got {len(value)}")
        return value

    @field_validator("stream")
    @classmethod
    def _no_stream(cls, value: bool) -> bool:
        if value:
            raise ValueError("streaming is not supported; send stream false (or leave it out)")
        return value

    @field_validator("n")
    @classmethod
    def _one_choice(cls, value: int) -> int:
        if value != 1:
            raise ValueError(f"only n=1 is supported (one choice per request), got {value}")
        return value

    def history(self) -> list[dict[str, Any]]:
        return [message.as_history() for message in self.messages]

    def tool_schemas(self) -> list[dict[str, Any]] | None:
        """The tools as given (key order kept: the chat template prints them as the client sent them)."""
        if not self.tools:
            return None
        return [tool.model_dump(exclude_unset=True) for tool in self.tools]

    def completion_limit(self, server_max: int) -> int:
        """The tokens to generate: the request's max (either spelling, the smaller), capped by the server's."""
        asked = [v for v in (self.max_tokens, self.max_completion_tokens) if v is not None]
        return min([*asked, server_max])


def validation_message(exc: ValidationError) -> tuple[str, str]:
    """(message, param) for the first problem of a request: `messages[2].content: Field required`."""
    error = exc.errors()[0]
    where = error_path(error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    return (f"{where}: {message}" if where else message), where


def invalid_text_path(value: Any, path: str = "") -> str | None:
    """Where the first string that is not valid Unicode sits (JSON can carry a lone surrogate escape
    such as `\\ud800`, which no tokenizer takes); None when every string is valid."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "(the body)"
        return None
    if isinstance(value, dict):
        items = ((f"{path}.{key}" if path else str(key), item) for key, item in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{index}]", item) for index, item in enumerate(value))
    else:
        return None
    for where, item in items:
        found = invalid_text_path(item, where)
        if found is not None:
            return found
    return None


def error_path(loc: tuple[int | str, ...]) -> str:
    """A pydantic location as a field path; the role tag pydantic adds inside a message is dropped."""
    path = ""
    for index, item in enumerate(loc):
        if isinstance(item, int):
            path += f"[{item}]"
        elif index >= 2 and loc[0] == "messages" and isinstance(loc[index - 1], int) and item in ROLES:
            continue
        else:
            path += f".{item}" if path else item
    return path
