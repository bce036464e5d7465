"""Records that cross the harness boundary: parsed model turns, observations and the verified call log.

The call log (`CallRecord`) is what the scorer, the judge and the corpus trust: it is written by the
harness, never by the agent, and says for every call who emitted it (`llm` or `code`, SPEC §3).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Origin = Literal["llm", "code"]
TerminateStatus = Literal["success", "failure"]
Refusal = Literal["ended", "malformed", "unusable", "unknown_tool", "bad_arguments"]


class ParsedCall(BaseModel):
    """One tool call as a protocol parser read it; `error` says why it cannot be executed as written."""

    model_config = ConfigDict(extra="forbid")

    name: str = ""
    arguments: dict[str, Any] | None = None
    id: str | None = None
    raw: str = ""
    error: str | None = None


class ParsedTurn(BaseModel):
    """One model output in any protocol, reduced to the parts the harness acts on."""

    model_config = ConfigDict(extra="forbid")

    thinking: str | None = None
    content: str | None = None
    calls: list[ParsedCall] = Field(default_factory=list)
    format_errors: list[str] = Field(default_factory=list)

    def signature(self) -> tuple:
        """What a round trip through a protocol must preserve (ids and raw text are protocol detail)."""
        return (
            self.thinking,
            self.content,
            [(call.name, call.arguments) for call in self.calls],
        )


class Observation(BaseModel):
    """What the harness answers to one call; `text` is exactly what the model is shown."""

    model_config = ConfigDict(extra="forbid")

    call_id: str
    name: str
    ok: bool
    result: Any = None
    error: str | None = None
    text: str
    refused: Refusal | None = None
    """Why no tool ran, when none did: the episode had ended, the call was malformed, its arguments
    were unusable (`record_limits`), the tool is not in the profile, or the arguments do not fit it.
    None when the tool ran (it may still have refused, e.g. an id not in the catalogue)."""


class CallRecord(BaseModel):
    """One entry of the verified call log."""

    model_config = ConfigDict(extra="forbid")

    step: int
    call_id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str | None = None
    result: Any = None
    error: str | None = None
    latency_s: float
    origin: Origin
    counted: bool = True
    """False for calls refused because the episode had already ended (a call made after the end uses no step)."""
    cut: str | None = None
    """What the harness cut or replaced in this entry to keep the record writable and bounded, and why
    (see `record_limits`); None when the entry is stored as made."""


class EpisodeSummary(BaseModel):
    """Everything a scorer or runner needs from a finished episode; never carries the reward."""

    model_config = ConfigDict(extra="forbid")

    problem_id: str | None
    query: str
    profile: str
    step_cap: int
    steps_used: int
    recommended_product_ids: list[str] | None
    recommended_at_step: int | None
    terminated: TerminateStatus | None
    ended: bool
    end_reason: str | None
    calls: list[CallRecord]
    notes: list[str] = Field(default_factory=list)
    """What the harness left out of the episode's record (calls not recorded, a spent budget)."""
