"""An honest miner with a bug: it searches, then indexes the hit list as if it were a dict and raises.
Admitted (nothing forbidden), it crashes on every problem at run time — the sandbox's business."""

import miner_sdk


def agent_main(problem_data):
    hits = miner_sdk.call_tool("find_product", q=problem_data["query"][:80]).get("result") or []
    best = hits["best"]  # a list, not a dict: TypeError on every problem
    miner_sdk.call_tool("recommend_product", product_ids=str(best["product_id"]))
    return []
