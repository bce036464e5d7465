"""The weakest honest strategy: search the whole query once, recommend the first hit, terminate. No
verification at all — a baseline the others should beat."""

import miner_sdk


def agent_main(problem_data):
    query = " ".join(problem_data["query"].split()[:12])
    found = miner_sdk.call_tool("find_product", q=query)
    hits = found.get("result") or []
    calls = [{"name": "find_product", "parameters": {"q": query}, "tool_call_id": found["call_id"]}]
    if hits:
        chosen = str(hits[0]["product_id"])
        done = miner_sdk.call_tool("recommend_product", product_ids=chosen)
        calls.append(
            {
                "name": "recommend_product",
                "parameters": {"product_ids": chosen},
                "tool_call_id": done["call_id"],
            }
        )
    miner_sdk.call_tool("terminate", status="success" if hits else "failure")
    return [{"completion": {"message": {"think": f"{len(hits)} hits; taking the first", "tool_call": calls}}}]
