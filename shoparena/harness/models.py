"""Records that cross the harness boundary: parsed model turns, observations, an episode's summary.

The verified call log's entry (`CallRecord`) is read by every later stage, so it lives in
`shoparena.records.calls`; the harness is still the only writer of the log.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shoparena.records.calls import CallRecord

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
