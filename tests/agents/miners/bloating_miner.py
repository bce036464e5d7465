"""Claims, without calling it, one recommendation of 600 KB, copied into five fields of its step."""

import miner_sdk


def agent_main(problem_data):
    miner_sdk.call_tool("find_product", q=problem_data["query"].split()[0])
    big = "7," * 300_000
    call = {"name": "recommend_product", "parameters": {"product_ids": big}, "result": big}
    message = {"think": big, "tool_call": [call], "response": big}
    return [{"completion": {"message": message, "content": big}, "extra_info": {"copy": big}}]
