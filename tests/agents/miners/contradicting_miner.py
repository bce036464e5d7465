"""A miner that recommends one product through the server but claims another in its steps."""

import miner_sdk


def agent_main(problem_data):
    hits = miner_sdk.call_tool("find_product", q=problem_data["query"].split()[0])["result"]
    miner_sdk.call_tool("recommend_product", product_ids=hits[0]["product_id"])
    claimed = {"name": "recommend_product", "parameters": {"product_ids": "123456789"}}
    return [{"completion": {"message": {"tool_call": [claimed]}}}]
