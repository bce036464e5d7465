"""The score summary a trajectory record carries: the rule scorer's verdict on one episode, flat.

Written by the runner (`ProblemScore.summary()` plus how the episode ended) and read by the judge's
success rate, the store's columns and the corpus's gates. Every field is optional and the JSON holds
exactly the fields a summary was given, in this order, so records written before the summary was typed
(or hand-made ones holding only `success`) read and serialise back to the same bytes.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer


class ScoreSummary(BaseModel):
    """One episode's score. Field order is the JSON's key order (part of the record's content hash)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    index: int | None = None
    problem_id: str | None = None
    bucket: str | None = None
    sample: int | None = None
    success: bool | None = None
    rule: float | None = None
    shop: bool | None = None
    budget: bool | None = None
    gold_rate: float | None = None
    answered: bool | None = None
    scoreable: bool | None = None
    product_ids: list[str] | None = None
    title: float | None = None
    """Per axis: the ratio of checks hit (None when the problem asks nothing of that axis), hits, checks."""
    title_hits: int | None = None
    title_checks: int | None = None
    price: float | None = None
    price_hits: int | None = None
    price_checks: int | None = None
    service: float | None = None
    service_hits: int | None = None
    service_checks: int | None = None
    sku_attr: float | None = None
    sku_attr_hits: int | None = None
    sku_attr_checks: int | None = None
    knowledge: float | None = None
    knowledge_hits: int | None = None
    knowledge_checks: int | None = None
    format_ok: bool | None = None
    """How the episode ended, added by the runner (absent from `shoparena score --json` rows)."""
    steps: int | None = None
    terminated: bool | None = None
    grounded: bool | None = None
    """False when the episode's recommendation named a product no search of the episode returned
    (its call record's `ungrounded`); given only for episodes with a recommendation to ground."""

    @model_serializer(mode="wrap")
    def _given_fields_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        given = self.model_fields_set
        return {key: value for key, value in handler(self).items() if key in given}
