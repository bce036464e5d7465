"""`find_product` request parsing shared by every search backend (SPEC §1).

Semantics are upstream's: `page` 1–5 (anything else → empty result, not an error), `shop_id` exact,
`price` "lo-hi" or open-ended "lo-" (bounds inclusive), every listed `service` required, `sort` one of
`order` (sold_count desc), `priceasc`, `pricedesc` applied to the first 50 filtered BM25 hits only.
Malformed filters raise `SearchRequestError` with a message an agent can act on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from shoparena.catalog.models import SERVICES

PAGE_SIZE = 10
MAX_PAGES = 5
MAX_HITS = PAGE_SIZE * MAX_PAGES
SORTS = ("order", "priceasc", "pricedesc")


class SearchRequestError(ValueError):
    """A find_product argument that cannot be honoured; the message says which and why."""


class PriceRange(BaseModel):
    model_config = ConfigDict(frozen=True)

    low: float
    high: float | None

    def contains(self, price: float) -> bool:
        return price >= self.low and (self.high is None or price <= self.high)


def parse_price(text: str | None) -> PriceRange | None:
    """Parse `"lo-hi"`, `"lo-"` (open-ended) or `"-hi"` (from 0); None/"" means no filter."""
    if text is None:
        return None
    text = str(text).strip()
    if not text:
        return None
    if "-" not in text:
        raise SearchRequestError(f"price {text!r}: expected 'low-high' or 'low-' (e.g. '100-500', '300-')")
    low_text, _, high_text = text.partition("-")
    try:
        low = float(low_text) if low_text.strip() else 0.0
        high = float(high_text) if high_text.strip() else None
    except ValueError:
        raise SearchRequestError(
            f"price {text!r}: bounds must be numbers, e.g. '100-500' or '300-'"
        ) from None
    if not math.isfinite(low) or (high is not None and not math.isfinite(high)):
        raise SearchRequestError(f"price {text!r}: bounds must be finite numbers")
    if low < 0:
        raise SearchRequestError(f"price {text!r}: the lower bound cannot be negative")
    if high is not None and high < low:
        raise SearchRequestError(f"price {text!r}: the upper bound is below the lower bound")
    return PriceRange(low=low, high=high)


def parse_services(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """Services as a list or a comma-separated string; unknown flags are an error, not a silent miss."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    flags: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise SearchRequestError(f"service: expected strings, got {type(item).__name__}")
        flag = item.strip()
        if not flag:
            continue
        if flag not in SERVICES:
            matches = [s for s in SERVICES if s.lower() == flag.lower()]
            if not matches:
                raise SearchRequestError(f"service {flag!r}: unknown flag; use any of {', '.join(SERVICES)}")
            flag = matches[0]
        if flag not in flags:
            flags.append(flag)
    return tuple(flags)


def parse_sort(value: str | None) -> str | None:
    if value is None or str(value).strip() in ("", "default", "relevance", "none"):
        return None
    text = str(value).strip().lower()
    if text not in SORTS:
        raise SearchRequestError(
            f"sort {value!r}: use one of {', '.join(SORTS)} (or leave it out for relevance)"
        )
    return text


class SearchRequest(BaseModel):
    """A validated find_product call."""

    model_config = ConfigDict(frozen=True)

    q: str
    page: int = 1
    shop_id: str | None = None
    price: PriceRange | None = None
    sort: str | None = None
    service: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        q: str,
        page: int = 1,
        shop_id: str | int | None = None,
        price: str | None = None,
        sort: str | None = None,
        service: str | Sequence[str] | None = None,
    ) -> SearchRequest:
        if not isinstance(q, str):
            raise SearchRequestError(f"q: expected a string, got {type(q).__name__}")
        if isinstance(page, bool) or not isinstance(page, int):
            try:
                page = int(str(page).strip())
            except ValueError:
                raise SearchRequestError(f"page {page!r}: expected an integer 1-{MAX_PAGES}") from None
        shop = None if shop_id is None or str(shop_id).strip() == "" else str(shop_id).strip()
        return cls(
            q=q,
            page=page,
            shop_id=shop,
            price=parse_price(price),
            sort=parse_sort(sort),
            service=parse_services(service),
        )

    @property
    def page_in_range(self) -> bool:
        return 1 <= self.page <= MAX_PAGES


def sort_and_page(hits: list[dict], request: SearchRequest) -> list[dict]:
    """Apply the optional sort to the ≤50 filtered hits (stable: relevance breaks ties) and cut the page."""
    if request.sort == "order":
        hits = sorted(hits, key=lambda h: -h["sold_count"])
    elif request.sort == "priceasc":
        hits = sorted(hits, key=lambda h: h["price"])
    elif request.sort == "pricedesc":
        hits = sorted(hits, key=lambda h: -h["price"])
    start = (request.page - 1) * PAGE_SIZE
    return hits[start : start + PAGE_SIZE]
