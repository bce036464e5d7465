"""Sends what a record cannot hold as is: a lone surrogate (a broken \\u escape), an argument nested
400 levels deep, and claims a step nested as deep; then finishes properly."""

import miner_sdk


def nested(depth):
    value = "x"
    for _ in range(depth):
        value = [value]
    return value


def agent_main(problem_data):
    miner_sdk.call_tool("find_product", q="black \ud800 shirt")
    miner_sdk.call_tool("find_product", q=nested(400))
    hits = miner_sdk.call_tool("find_product", q=problem_data["query"].split()[0])["result"]
    miner_sdk.call_tool("recommend_product", product_ids=hits[0]["product_id"])
    claimed = {"name": "terminate", "parameters": {"status": "success", "why": nested(400)}}
    return [{"completion": {"message": {"think": "done \udc00", "tool_call": [claimed]}}}]
