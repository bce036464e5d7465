"""crashing, fixed (its miner resubmits this later in a season): take the cheapest of the first three
hits that respects a stated upper price bound, recommend it and terminate."""

import re

import miner_sdk

BOUND = re.compile(r"(?:under|below|less than|at most)\s+(\d[\d,]*)")


def agent_main(problem_data):
    query = problem_data["query"]
    hits = miner_sdk.call_tool("find_product", q=query[:80]).get("result") or []
    bound = BOUND.search(query.lower())
    limit = float(bound.group(1).replace(",", "")) if bound else float("inf")
    fitting = [h for h in hits[:3] if float(h["price"]) <= limit] or hits[:1]
    if fitting:
        best = min(fitting, key=lambda h: float(h["price"]))
        miner_sdk.call_tool("recommend_product", product_ids=str(best["product_id"]))
    miner_sdk.call_tool("terminate", status="success" if fitting else "failure")
    return [{"completion": {"message": {"think": f"{len(hits)} hits, {len(fitting)} within the bound"}}}]
