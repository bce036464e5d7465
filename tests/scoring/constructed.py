"""Products built from a reward spec: one that satisfies every constraint, or one that breaks exactly one.

Constructed ids never equal the gold id, so the exact-id shortcut cannot hide a broken rule.
"""

from __future__ import annotations

from shoparena.catalog.models import Product
from shoparena.problems.models import RewardSpec

UNRELATED_TITLES = (
    "Stainless steel garden hose nozzle with eight spray patterns",
    "Organic dark roast coffee beans one kilogram bag",
    "Children's wooden jigsaw puzzle of a world map",
)


def price_range(spec: RewardSpec) -> tuple[float, float | None] | None:
    """The (inclusive) range all price constraints allow together, or None without constraints."""
    if not spec.price:
        return None
    low, high = 0.0, None
    for constraint in spec.price:
        ((_, (lo, hi)),) = constraint.items()
        if lo is not None:
            low = max(low, lo)
        if hi is not None:
            high = hi if high is None else min(high, hi)
    return low, high


def satisfying_price(spec: RewardSpec) -> float:
    """A price inside every constraint (the midpoint of the allowed range, or just above the floor)."""
    allowed = price_range(spec)
    if allowed is None:
        return 199.0
    low, high = allowed
    return (low + high) / 2 if high is not None else low + 1.0


def breaking_price(spec: RewardSpec) -> float:
    """A price outside the first constraint (below its floor, else above its ceiling)."""
    ((_, (low, high)),) = spec.price[0].items()
    if low is not None and low > 0:
        return low - 1.0 if low >= 1 else 0.0
    return float(high) + 1.0


def satisfying_product(spec: RewardSpec, product_id: str, shop_id: str = "shop-1", price=None) -> Product:
    sku_pairs = {k: v for option in spec.sku_options or [] for k, v in option.items()}
    attributes: dict[str, list[str]] = {}
    for attribute in spec.attributes or []:
        for key, values in attribute.items():
            attributes.setdefault(key, []).extend(values)
    return Product(
        product_id=product_id,
        shop_id=shop_id,
        title=spec.title[0],
        price=satisfying_price(spec) if price is None else price,
        sku_options={"1": {"size": "decoy"}, "2": sku_pairs} if sku_pairs else {},
        attributes=attributes,
        service=list(spec.service or []),
    )


def broken_products(spec: RewardSpec, product_id: str, shop_id: str = "shop-1", price=None):
    """(axis, product) for each constraint type the spec has, each breaking exactly that one constraint."""
    good = satisfying_product(spec, product_id, shop_id, price)
    out = [("title", good.model_copy(update={"title": UNRELATED_TITLES[0]}))]
    if spec.price:
        out.append(("price", good.model_copy(update={"price": breaking_price(spec)})))
    if spec.service:
        out.append(("service", good.model_copy(update={"service": list(spec.service[1:])})))
    if spec.sku_options:
        pairs = {k: v.lower() for k, v in spec.sku_options[0].items()}
        key = next(iter(pairs))
        pairs[key] += " (other)"
        options = {"1": {"size": "decoy"}, "2": pairs}
        out.append(("sku_attr", good.model_copy(update={"sku_options": options})))
    if spec.attributes:
        key = next(iter(spec.attributes[0]))
        attributes = {k: list(v) for k, v in good.attributes.items()}
        attributes[key] = [v + " (other)" for v in attributes[key]]
        out.append(("sku_attr", good.model_copy(update={"attributes": attributes})))
    return out
