"""MALICIOUS: runs code hidden in a string with eval (dynamic execution). Admission must reject it."""

import miner_sdk

PAYLOAD = "miner_sdk.call_tool('find_product', q=q)"


def agent_main(problem_data):
    q = problem_data["query"][:60]
    hits = eval(PAYLOAD, {"miner_sdk": miner_sdk, "q": q}).get("result") or []
    if hits:
        miner_sdk.call_tool("recommend_product", product_ids=str(hits[0]["product_id"]))
    miner_sdk.call_tool("terminate", status="success")
    return []
