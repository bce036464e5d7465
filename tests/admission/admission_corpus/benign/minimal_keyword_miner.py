import miner_sdk


def agent_main(problem_data):
    words = problem_data["query"].split()
    result = miner_sdk.call_tool("find_product", q=" ".join(words[:6]))
    hits = result["result"] or []
    if hits:
        miner_sdk.call_tool("recommend_product", product_ids=hits[0]["product_id"])
    miner_sdk.call_tool("terminate", status="success" if hits else "failure")
    return [{"completion": {"message": {"think": "first hit of a keyword search"}}}]
