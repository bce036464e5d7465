"""A voucher specialist: pick one listing per requested item so the basket fits the budget after the
voucher, preferring the best-matching listings (a small exhaustive search over the top candidates)."""

import functools
import heapq
import itertools
import math
import re

import miner_sdk

TOP_PER_ITEM = 4
BUDGET_SLACK = 1e-9


def voucher_terms(problem_data):
    voucher = problem_data.get("voucher") or {}
    text = problem_data["query"]
    if not voucher:
        budget = re.search(r"budget is only\s*`?(\d+(?:\.\d+)?)", text)
        threshold = re.search(r"exceeds?\s*`?(\d+(?:\.\d+)?)", text)
        fixed = re.search(r"fixed discount of\s*`?(\d+(?:\.\d+)?)", text)
        voucher = {
            "budget": float(budget.group(1)) if budget else math.inf,
            "threshold": float(threshold.group(1)) if threshold else math.inf,
            "discount_type": "fixed" if fixed else "percentage",
            "face_value": float(fixed.group(1)) if fixed else 0.0,
        }
    return voucher


def after_voucher(total, voucher):
    if total < float(voucher.get("threshold") or 0):
        return total
    if voucher.get("discount_type") == "fixed":
        return total - float(voucher.get("face_value") or 0)
    discount = total * float(voucher.get("discount") or 0)
    cap = voucher.get("cap")
    return total - (min(discount, float(cap)) if cap else discount)


@functools.lru_cache(maxsize=256)
def item_words(text):
    return tuple(w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2)


def items_of(query):
    head = re.split(r"(?i)my budget is only", query)[0]
    parts = [p.strip(" .;") for p in re.split(r"\(\d+\)|;", head) if len(p.split()) > 2]
    return parts[1:] if len(parts) > 1 else parts or [head]


def agent_main(problem_data):
    voucher = voucher_terms(problem_data)
    steps = []
    pools = []
    for item in items_of(problem_data["query"]):
        words = item_words(item)
        found = miner_sdk.call_tool("find_product", q=" ".join(words[:10]))
        steps.append({"completion": {"message": {"think": f"search: {item[:80]}"}}})
        hits = found["result"] or []
        scored = [(-sum(w in h["title"].lower() for w in words), h["price"], h["product_id"]) for h in hits]
        pools.append(heapq.nsmallest(TOP_PER_ITEM, scored))
    best = None
    for basket in itertools.product(*pools):
        ids = [pid for _, _, pid in basket]
        if len(set(ids)) < len(ids):
            continue
        total = sum(price for _, price, _ in basket)
        if after_voucher(total, voucher) > float(voucher.get("budget") or math.inf) + BUDGET_SLACK:
            continue
        quality = sum(score for score, _, _ in basket)
        if best is None or (quality, total) < best[0]:
            best = ((quality, total), ids)
    if best:
        miner_sdk.call_tool("recommend_product", product_ids=",".join(best[1]))
    miner_sdk.call_tool("terminate", status="success" if best else "failure")
    steps.append({"completion": {"message": {"think": f"basket: {best[1] if best else 'none fits'}"}}})
    return steps
