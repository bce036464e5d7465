"""Rule-based query understanding for the reference agents: no model, only the wordings tasks use.

A query is cut into the voucher paragraph (upstream's wording, numbers in backticks), the items the
user wants (numbered, ordinal, bulleted or joined lists for shop/voucher tasks; one item otherwise),
and per item its price bounds, service flags and the descriptive text that is left. The descriptive
text is not split into attribute pairs here: which words are keys and which are values is only known
once candidates are seen, so `matching.py` reads it against each candidate's own vocabulary.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from shoparena.agents.reference.wording import (
    content_tokens,
    item_fields,
    plain_number,
    request_phrases,
    voucher_numbers,
)
from shoparena.problems.models import Field, Voucher


class PriceBound(BaseModel):
    mode: str
    low: float | None = None
    high: float | None = None

    def filter_text(self) -> str:
        """The find_product `price` argument for these bounds (inclusive, as the scorer reads them)."""
        low = plain_number(self.low or 0)
        return f"{low}-{plain_number(self.high)}" if self.high is not None else f"{low}-"

    def admits(self, price: float) -> bool:
        if self.low is not None and price < self.low:
            return False
        return not (self.high is not None and price > self.high)

    def describe(self) -> str:
        if self.mode == "between":
            return f"between {plain_number(self.low)} and {plain_number(self.high)}"
        if self.mode == "greater than":
            return f"at least {plain_number(self.low)}"
        return f"at most {plain_number(self.high)}"


class ItemRequest(BaseModel):
    """One product the user wants, as far as the words say."""

    position: int
    text: str
    """The item's words as the user wrote them (article dropped)."""
    description: str
    """`text` without the price and service phrases: the head noun phrase plus attribute/SKU clauses."""
    head: str
    """The leading noun phrase (the product itself), cut before the first clause."""
    price: PriceBound | None = None
    services: list[str] = Field(default_factory=list)

    @property
    def service_filter(self) -> str | None:
        return ",".join(self.services) or None

    def head_tokens(self) -> list[str]:
        return content_tokens(self.head)

    def search_text(self, limit: int = 14) -> str:
        """Every content word of the description, head first: BM25 is an OR over title and values."""
        words = list(dict.fromkeys(self.head_tokens() + content_tokens(self.description)))
        return " ".join(words[:limit]) or self.head or self.text


class VoucherTerms(BaseModel):
    voucher_type: str
    discount_type: str
    threshold: float
    budget: float
    face_value: float | None = None
    discount: float | None = None
    """A fraction (0.27 for 27%)."""
    cap: float | None = None

    def total_after(self, total: float, single_shop: bool) -> float:
        """The voucher arithmetic of the task format itself (terms read from text are not validated)."""
        return Voucher.model_construct(**self.model_dump()).discounted_total(total, single_shop)

    def fits(self, total: float, single_shop: bool) -> bool:
        """The scorer's budget rule: within budget as is, or after the voucher."""
        return total <= self.budget + 1e-9 or self.total_after(total, single_shop) <= self.budget + 1e-9

    def describe(self) -> str:
        if self.discount_type == "fixed":
            off = f"{plain_number(self.face_value)} off"
        else:
            off = f"{round((self.discount or 0) * 100)}% off capped at {plain_number(self.cap)}"
        return (
            f"{self.voucher_type} voucher, {off} from a total of {plain_number(self.threshold)}, "
            f"budget {plain_number(self.budget)}"
        )


class QueryPlan(BaseModel):
    """What the reference agents understood of one query."""

    bucket: str
    items: list[ItemRequest]
    voucher: VoucherTerms | None = None
    list_style: str = "single"

    def summary(self) -> str:
        parts = []
        for item in self.items:
            bits = [f'"{item.head or item.description}"']
            if item.price:
                bits.append(f"price {item.price.describe()}")
            if item.services:
                bits.append("services " + "+".join(item.services))
            parts.append(f"item {item.position + 1}: " + ", ".join(bits))
        if self.voucher:
            parts.append(self.voucher.describe())
        return "; ".join(parts)


# -- parsing ------------------------------------------------------------------------------------------
def parse_voucher_text(text: str) -> VoucherTerms | None:
    """The upstream voucher paragraph (backticked numbers) → terms; None when there is none."""
    terms = voucher_numbers(text)
    return VoucherTerms(**terms) if terms else None


def voucher_from_view(data: dict[str, Any] | None) -> VoucherTerms | None:
    """The ProblemView voucher dict (upstream keys) → terms; it wins over the text when both exist."""
    if not data:
        return None
    try:
        return VoucherTerms(
            voucher_type=str(data["voucher_type"]),
            discount_type=str(data["discount_type"]),
            threshold=float(data.get("threshold") or 0),
            budget=float(data.get("budget") or 0),
            face_value=None if data.get("face_value") is None else float(data["face_value"]),
            discount=None if data.get("discount") is None else float(data["discount"]),
            cap=None if data.get("cap") is None else float(data["cap"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


def parse_item(position: int, raw: str) -> ItemRequest:
    fields = item_fields(raw)
    price = fields.pop("price")
    bound = PriceBound(mode=price[0], low=price[1], high=price[2]) if price else None
    return ItemRequest(position=position, price=bound, **fields)


def parse_query(query: str, bucket: str = "product", voucher: dict[str, Any] | None = None) -> QueryPlan:
    """Understand a query; `bucket` and `voucher` come from the ProblemView when known."""
    phrases, style, voucher_text = request_phrases(query, bucket)
    terms = voucher_from_view(voucher) or (parse_voucher_text(voucher_text) if voucher_text else None)
    items = [parse_item(i, phrase) for i, phrase in enumerate(phrases)]
    return QueryPlan(bucket=bucket, items=items, voucher=terms, list_style=style)
