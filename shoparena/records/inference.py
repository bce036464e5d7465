"""The verified inference log (SPEC §6, §7): every request an agent sent through the inference proxy in
one episode, and what the proxy answered, as the proxy saw it.

This is the judge's evidence that a model really reasoned, and the record of which tool calls a model
emitted (a call is `llm` only when it used one of the calls listed here). It is written by the proxy,
never by the agent. Pure data with no imports of the stages, so it can sit with the other records.

Bounded like the call log: each text is capped, the texts of an episode have a budget past which they
are kept as previews (an entry's `cut` says so), and refused requests beyond a few are counted, not
stored (the `notes` say so). Served and failed requests are bounded by the proxy's per-episode cap.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

INFERENCE_LOG_SCHEMA = "shoparena.inference/2"
"""2: the proxy verifies each request's history (`unshown`, `tool_messages`, `unverified_tool_messages`,
`unshown_id_calls`); each new field is left out of the JSON while it holds its default, so a log
written before reads and serialises back to the same bytes."""


def _without_defaults(data: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    for key, default in defaults.items():
        if data.get(key, default) == default:
            data.pop(key, None)
    return data


InferenceOutcome = Literal["ok", "refused", "upstream_error"]


class InferenceToolCall(BaseModel):
    """One tool call of a response, and the recorded tool call that used it (if one did)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: str
    """Canonical JSON of the arguments (what a tool call is matched against), cut to the text cap."""
    used_by: str | None = None
    """The call id, in the verified call log, of the tool call that matched it; None while unused."""
    unshown: str | None = None
    """Why the call cannot be the model's choice: product ids in its arguments that no verified tool
    message of the request held (they could only come from text the agent wrote). Such a call is not
    offered to the ledger, so an agent's tool call like it is recorded as `code`. None: not refused."""

    @model_serializer(mode="wrap")
    def _new_fields_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_defaults(handler(self), {"unshown": None})


class InferenceEntry(BaseModel):
    """One request to the proxy and its answer."""

    model_config = ConfigDict(extra="forbid")

    seq: int
    """1-based order of the request in the episode."""
    at_s: float
    """Seconds since the episode's session opened, when the request arrived."""
    calls_before: int
    """Entries in the episode's verified call log when the request arrived: what the model had been
    shown is the results of those calls."""
    model: str | None
    """The model the agent asked for (None: the proxy's default)."""
    upstream: str | None = None
    """What served it: `offline:NAME` or the upstream's URL and model; None when refused before."""
    status: int
    """The HTTP status the agent got."""
    outcome: InferenceOutcome
    error: str | None = None
    request_sha256: str | None
    """SHA-256 of the request body as received (the messages are not stored; this identifies them);
    None when the body was refused unread (too large)."""
    request_bytes: int
    request_messages: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_estimated: bool = False
    """True when the upstream reported no usage and the proxy counted ~4 characters per token."""
    latency_s: float = 0.0
    """Time the upstream took (zero when refused before forwarding)."""
    finish_reason: str | None = None
    reasoning: str | None = None
    """The response's reasoning text (`reasoning_content`), cut to the text cap."""
    content: str | None = None
    """The response's content, cut to the text cap."""
    tool_calls: list[InferenceToolCall] = Field(default_factory=list)
    cut: str | None = None
    """What was cut from this entry to keep the log bounded."""
    tool_messages: int = 0
    """`tool` messages in the request."""
    unverified_tool_messages: int = 0
    """Of those, the ones whose content is no result of this episode in an accepted form (doctored,
    summarised, reordered): the model read them, but ids in them do not make a call the model's."""

    @model_serializer(mode="wrap")
    def _new_fields_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_defaults(handler(self), {"tool_messages": 0, "unverified_tool_messages": 0})


class InferenceLog(BaseModel):
    """The episode's verified inference: totals and one entry per request."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = INFERENCE_LOG_SCHEMA
    requests: int = 0
    """Requests received, refused ones included."""
    served: int = 0
    """Requests answered by an upstream with a completion."""
    failed: int = 0
    """Requests forwarded that the upstream did not answer (unreachable, refused, broken)."""
    refused: int = 0
    """Requests the proxy refused (allowlist, caps, rate, budget, a malformed request)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    """Totals over the served requests (what the token budget counts)."""
    token_budget: int | None = None
    tool_calls_offered: int = 0
    tool_calls_used: int = 0
    unverified_llm_claims: int = 0
    """Tool calls the agent said its model emitted that matched no response: recorded as `code`."""
    entries: list[InferenceEntry] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    unshown_id_calls: int = 0
    """Tool calls of served responses that named product ids the request showed in no verified tool
    message (each entry's `unshown` says which): never offered, so never `llm`."""

    @model_serializer(mode="wrap")
    def _new_fields_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_defaults(handler(self), {"unshown_id_calls": 0})
