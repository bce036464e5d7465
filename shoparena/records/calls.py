"""One entry of the verified call log: written by the harness, never by the agent, and trusted by the
scorer, the judge and the corpus because it says for every call who emitted it (`llm` or `code`, SPEC §3).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

Origin = Literal["llm", "code"]


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
    (see `record_limits`); None when the entry is stored as made, and then left out of the JSON, so an
    entry stored as made serialises to the same bytes as before the field existed (content hashes hold)."""
    ungrounded: str | None = None
    """Set on a call that names product ids (recommend, view, check) when some of them appeared in no
    search result (`find_product`, `find_products_in_same_shop`) of the episode before it: the stable
    reason, `UNGROUNDED_REASON` and the ids. An ungrounded recommendation scores 0 in strict mode.
    Left out of the JSON when None, like `cut` (added with `shoparena.trajectory/2`)."""

    @model_serializer(mode="wrap")
    def _cut_only_when_cut(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        for key in ("cut", "ungrounded"):
            if data.get(key) is None:
                data.pop(key, None)
        return data


UNGROUNDED_REASON = "not in a search result of this episode"
"""The stable start of a call's `ungrounded`: `"not in a search result of this episode: ID, ID"`."""
