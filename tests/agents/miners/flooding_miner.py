"""Ends its episode, then floods the server with calls of 900 KB each (a record of 276 MB before caps)."""

import miner_sdk


def agent_main(problem_data):
    miner_sdk.call_tool("terminate", status="failure")
    big = "1," * 450_000
    for _ in range(150):
        miner_sdk.call_tool("recommend_product", product_ids=big)
    return []
