"""A small, independent check that a gold product satisfies its own reward spec (not the scorer).

Written from SPEC §2 directly so the generator is checked against the rules, not against itself.
"""

from __future__ import annotations

import math

from shoparena.problems.models import Problem, RewardSpec, Voucher


def spec_violations(spec: RewardSpec, product: dict) -> list[str]:
    """Every constraint of `spec` that `product` (a catalogue record) fails; empty when it fits."""
    problems = []
    if product["title"] not in spec.title:
        problems.append(f"title {product['title']!r} is not the gold title {spec.title}")
    for option in spec.sku_options or []:
        if not any(option.items() <= have.items() for have in product["sku_options"].values()):
            problems.append(f"sku option {option} not among {product['sku_options']}")
    for entry in spec.attributes or []:
        for key, values in entry.items():
            for value in values:
                if value not in product["attributes"].get(key, []):
                    problems.append(f"attribute {key}={value} not in {product['attributes'].get(key)}")
    for flag in spec.service or []:
        if flag not in product["service"]:
            problems.append(f"service {flag} not in {product['service']}")
    price = product["price"]
    for entry in spec.price or []:
        for mode, (low, high) in entry.items():
            ok = {
                "greater than": low is not None and price > low,
                "less than": high is not None and price < high,
                "between": low is not None and high is not None and low < price < high,
            }[mode]
            if not ok:
                problems.append(f"price {price} fails {mode} {low}..{high}")
    return problems


def spec_voucher_total(voucher: Voucher, total: float) -> float:
    """SPEC arithmetic, independently: T − face, or max(T(1−d), T − cap), once T reaches the threshold."""
    if total < voucher.threshold:
        return total
    if voucher.discount_type == "fixed":
        return total - voucher.face_value
    return max(total * (1 - voucher.discount), total - voucher.cap)


def voucher_violations(problem: Problem, products: list[dict]) -> list[str]:
    voucher = problem.voucher
    found = []
    total = sum(p["price"] for p in products)
    if total < 100:
        found.append(f"gold total {total} < 100")
    if not 0.1 * total - 1 <= voucher.threshold <= 0.9 * total:
        found.append(f"threshold {voucher.threshold} outside [.1T, .9T] for T={total}")
    if voucher.discount_type == "fixed":
        if not int(0.1 * voucher.threshold) <= voucher.face_value <= int(0.5 * voucher.threshold):
            found.append(f"face {voucher.face_value} outside [.1thr, .5thr]")
    else:
        percent = round(voucher.discount * 100)
        if not 10 <= percent <= 50:
            found.append(f"discount {voucher.discount} outside 10..50%")
        if not voucher.threshold * voucher.discount < voucher.cap <= voucher.threshold:
            found.append(f"cap {voucher.cap} not in (thr·d, thr]")
    after = spec_voucher_total(voucher, total)
    if after > voucher.budget + 1e-9:
        found.append(f"discounted total {after} exceeds budget {voucher.budget}")
    if not math.isclose(after, voucher.price_after_voucher, abs_tol=0.01):
        found.append(f"price_after_voucher {voucher.price_after_voucher} != {after}")
    if not math.ceil(after) <= voucher.budget <= math.ceil(after) + math.ceil(0.1 * after):
        found.append(f"budget {voucher.budget} outside [ceil(pav), ceil(pav)+ceil(.1pav)]")
    if voucher.voucher_type == "shop" and len({p["shop_id"] for p in products}) != 1:
        found.append("shop voucher gold products come from several shops")
    if any(spec.price for spec in problem.rewards):
        found.append("voucher items must not carry price constraints")
    return found
