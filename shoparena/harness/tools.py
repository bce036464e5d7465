"""The stateless tools over a catalogue backend (SPEC §3). `recommend_product` and `terminate` change the
episode's state and live in `episode.py`.

Each function takes already-checked arguments (see `params.py`) and returns a JSON-able result, or
raises `ToolError` whose message the model is shown. Behaviour follows the ShoppingBench server and
the arena's extra tools, so traces made here read like traces made there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shoparena.catalog.models import Product, ProductInformation, Shop
from shoparena.index.backend import CatalogBackend
from shoparena.index.request import SearchRequestError
from shoparena.problems.models import Voucher

MAX_SHOPS_TRIED = 10
MAX_SHOP_SPECS = 10
SUMMARY_ATTRIBUTES = 10


class ToolError(ValueError):
    """A call that was well-formed but cannot be answered; the message is the observation."""


@dataclass
class ToolContext:
    """What the tools may see: the catalogue, shop records, and the task's voucher (never its reward)."""

    backend: CatalogBackend
    shops: Mapping[str, Shop] = field(default_factory=dict)
    voucher: Voucher | None = None


def split_ids(text: str) -> list[str]:
    """Comma-separated ids, stripped, empties dropped, order kept (duplicates too: the caller decides)."""
    return [part.strip() for part in text.split(",") if part.strip()]


def _search(ctx: ToolContext, **request: Any) -> list[dict]:
    try:
        return ctx.backend.find_product(**request)
    except SearchRequestError as exc:
        raise ToolError(f"find_product: {exc}") from None


def _without_default(service: str | None) -> str | None:
    # Upstream's prompt offers "default" as "no filter"; keep the real flags only.
    if service is None:
        return None
    flags = [flag for flag in split_ids(service) if flag.lower() != "default"]
    return ",".join(flags) or None


def find_product(
    ctx: ToolContext,
    q: str,
    page: int = 1,
    shop_id: str | None = None,
    price: str | None = None,
    sort: str | None = None,
    service: str | None = None,
) -> list[dict]:
    return _search(
        ctx, q=q, page=page, shop_id=shop_id, price=price, sort=sort, service=_without_default(service)
    )


def view_product_information(ctx: ToolContext, product_ids: str) -> list[dict]:
    ids = list(dict.fromkeys(split_ids(product_ids)))
    if not ids:
        raise ToolError("view_product_information: product_ids is empty; give ids like '123,456'")
    found = ctx.backend.get_products(ids)
    return [ProductInformation.of(found[pid]).model_dump() for pid in ids if pid in found]


# -- check_product_match ---------------------------------------------------------------------------
def _norm(text: object) -> str:
    return " ".join(str(text).lower().split())


def _required_values(key: str, value: Any) -> list[str]:
    values = value if isinstance(value, list) else [value]
    out = []
    for item in values:
        if isinstance(item, dict | list) or item is None:
            raise ToolError(
                f"check_product_match: requirement {key!r} must be a string, number or list of those"
            )
        text = _norm(item)
        if text:
            out.append(text)
    if not out:
        raise ToolError(f"check_product_match: requirement {key!r} has no value")
    return out


def _value_matches(
    required: str, product: Product, key: str, all_values: list[str], descriptions: str
) -> bool:
    own = product.attributes.get(key.lower())
    if own is None:
        own = next((vals for k, vals in product.attributes.items() if _norm(k) == _norm(key)), None)
    if own is not None and any(required in _norm(v) for v in own):
        return True
    if any(required in value for value in all_values):
        return True
    return required in descriptions


def check_product_match(ctx: ToolContext, product_id: str, requirements: dict) -> dict:
    if not requirements:
        raise ToolError('check_product_match: requirements is empty; give e.g. {"color": "black"}')
    product = ctx.backend.get_product(product_id.strip())
    if product is None:
        raise ToolError(f"check_product_match: product {product_id!r} is not in the catalogue")
    all_values = [_norm(v) for vals in product.attributes.values() for v in vals]
    all_values += [_norm(v) for option in product.sku_options.values() for v in option.values()]
    descriptions = _norm(f"{product.short_description} {product.description}")
    matches, mismatches = [], []
    for key, value in requirements.items():
        wanted = _required_values(key, value)
        ok = all(_value_matches(w, product, key, all_values, descriptions) for w in wanted)
        (matches if ok else mismatches).append(key)
    return {
        "matched": not mismatches,
        "matches": matches,
        "mismatches": mismatches,
        "product_summary": {
            "product_id": product.product_id,
            "attributes": dict(list(product.attributes.items())[:SUMMARY_ATTRIBUTES]),
            "sku_options": product.sku_options,
        },
    }


# -- find_products_in_same_shop --------------------------------------------------------------------
def _spec_fields(index: int, spec: Any) -> tuple[str, str | None, str | None]:
    where = f"find_products_in_same_shop: product_queries[{index}]"
    if not isinstance(spec, dict):
        raise ToolError(f'{where} must be an object like {{"q": "yoga mat"}}')
    unknown = set(spec) - {"q", "price", "service"}
    if unknown:
        raise ToolError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; use q, price, service")
    q = spec.get("q")
    if not isinstance(q, str) or not q.strip():
        raise ToolError(f"{where}: 'q' must be a non-empty string")
    price, service = spec.get("price"), spec.get("service")
    if isinstance(service, list):
        service = ",".join(str(s) for s in service)
    if price is not None and not isinstance(price, str):
        raise ToolError(f"{where}: 'price' must be a string like '100-500'")
    if service is not None and not isinstance(service, str):
        raise ToolError(f"{where}: 'service' must be a comma-separated string")
    return q.strip(), price or None, _without_default(service)


def _shop_hit(ctx: ToolContext, shop_id: str, q: str, price: str | None, service: str | None) -> dict | None:
    """The best hit inside one shop, relaxing the search as the arena's tool does."""
    attempts = [(q, service)]
    if service:
        attempts.append((q, None))
    words = q.split()
    for shorter in (" ".join(words[:2]), words[0]):
        if all(shorter != tried for tried, _ in attempts):
            attempts.append((shorter, None))
    for text, flags in attempts:
        hits = _search(ctx, q=text, page=1, shop_id=shop_id, price=price, service=flags)
        if hits:
            return hits[0]
    return None


def _brief(hit: dict) -> dict:
    return {
        "product_id": hit["product_id"],
        "title": hit["title"],
        "price": hit["price"],
        "shop_id": hit["shop_id"],
    }


def find_products_in_same_shop(ctx: ToolContext, product_queries: list) -> dict:
    if not product_queries:
        raise ToolError("find_products_in_same_shop: product_queries is empty; give 1-10 search specs")
    if len(product_queries) > MAX_SHOP_SPECS:
        raise ToolError(
            f"find_products_in_same_shop: at most {MAX_SHOP_SPECS} specs, got {len(product_queries)}"
        )
    specs = [_spec_fields(i, spec) for i, spec in enumerate(product_queries)]
    first_q, first_price, first_service = specs[0]
    first_hits = _search(ctx, q=first_q, page=1, price=first_price, service=first_service)
    shops: dict[str, dict] = {}
    for hit in first_hits:
        shops.setdefault(str(hit["shop_id"]), hit)
    candidates = list(shops.items())[:MAX_SHOPS_TRIED]
    for tried, (shop_id, first_hit) in enumerate(candidates, start=1):
        products = [first_hit]
        for q, price, service in specs[1:]:
            hit = _shop_hit(ctx, shop_id, q, price, service)
            if hit is None:
                break
            products.append(hit)
        else:
            return {
                "found": True,
                "shop_id": shop_id,
                "products": [_brief(hit) for hit in products],
                "shops_tried": tried,
            }
    reason = (
        f"no results for the first spec {first_q!r}"
        if not candidates
        else f"no single shop among the {len(candidates)} tried sells all {len(specs)} products"
    )
    return {"found": False, "shop_id": None, "products": [], "shops_tried": len(candidates), "error": reason}


# -- calculate_voucher -----------------------------------------------------------------------------
def discount_rate(discount_value: float) -> float:
    """A percentage as a fraction: values below 1 already are one (0.35), others are percent (35)."""
    if discount_value < 0 or discount_value > 100:
        raise ToolError(
            f"calculate_voucher: percentage discount_value {discount_value:g} must be 0-100 (or a fraction < 1)"
        )
    return discount_value if discount_value < 1 else discount_value / 100.0


def calculate_voucher(
    ctx: ToolContext,
    product_prices: str,
    voucher_type: str,
    discount_value: float,
    threshold: float,
    budget: float,
    cap: float = 0,
) -> dict:
    parts = split_ids(product_prices)
    if not parts:
        raise ToolError("calculate_voucher: product_prices is empty; give prices like '120.5,80'")
    try:
        prices = [float(part) for part in parts]
    except ValueError:
        raise ToolError(
            f"calculate_voucher: product_prices {product_prices!r} must be comma-separated numbers"
        ) from None
    if any(price < 0 or price != price for price in prices):
        raise ToolError("calculate_voucher: prices cannot be negative")
    if discount_value < 0:
        raise ToolError("calculate_voucher: discount_value cannot be negative")
    total = sum(prices)
    applied = total >= threshold
    discount = 0.0
    if applied:
        if voucher_type == "fixed":
            discount = min(discount_value, total)
        else:
            discount = total * discount_rate(discount_value)
            if cap > 0:
                discount = min(discount, cap)
    total_after = total - discount
    return {
        "prices": prices,
        "total_before": round(total, 2),
        "discount_amount": round(discount, 2),
        "total_after": round(total_after, 2),
        "within_budget": total_after <= budget + 1e-9,
        "voucher_applied": applied,
        "budget": budget,
    }


# -- full profile ----------------------------------------------------------------------------------
def view_shop_information(ctx: ToolContext, shop_id: str) -> dict:
    if not ctx.shops:
        raise ToolError("view_shop_information: this catalogue has no shop records")
    shop = ctx.shops.get(shop_id.strip())
    if shop is None:
        raise ToolError(f"view_shop_information: shop {shop_id!r} is not in the catalogue")
    return shop.model_dump()


VOUCHER_FIELDS_SHOWN = (
    "voucher_type",
    "discount_type",
    "threshold",
    "face_value",
    "discount",
    "cap",
    "budget",
)
"""`price_after_voucher` is left out: it is computed from the gold basket and would leak the answer."""


def view_voucher_information(ctx: ToolContext) -> dict:
    if ctx.voucher is None:
        raise ToolError("view_voucher_information: this task has no voucher")
    data = ctx.voucher.model_dump()
    return {key: data[key] for key in VOUCHER_FIELDS_SHOWN}


STATELESS_TOOLS = {
    "find_product": find_product,
    "view_product_information": view_product_information,
    "check_product_match": check_product_match,
    "find_products_in_same_shop": find_products_in_same_shop,
    "calculate_voucher": calculate_voucher,
    "view_shop_information": view_shop_information,
    "view_voucher_information": view_voucher_information,
}
