"""A well-behaved miner: searches, looks at the first hit, recommends it and terminates, all via the SDK."""

import miner_sdk


def step(think, calls, response=""):
    return {
        "completion": {
            "reasoning_content": "",
            "content": "",
            "message": {"think": think, "tool_call": calls, "response": response},
        },
        "extra_info": {"step": 0},
    }


def record(name, result, **parameters):
    return {
        "name": name,
        "parameters": parameters,
        "tool_call_id": result["call_id"],
        "result": result["result"],
    }


def agent_main(problem_data):
    words = problem_data["query"].split()
    for q in [" ".join(words[:4]), *words]:  # widen until something matches
        found = miner_sdk.call_tool("find_product", q=q, origin="llm")
        if found["result"]:
            break
    best = found["result"][0]["product_id"]
    viewed = miner_sdk.call_tool("view_product_information", product_ids=best)
    recommended = miner_sdk.call_tool("recommend_product", product_ids=best, origin="llm")
    ended = miner_sdk.call_tool("terminate", status="success")
    return [
        step("search the catalogue", [record("find_product", found, q=q)]),
        step("check the first hit", [record("view_product_information", viewed, product_ids=best)]),
        step(
            "recommend it and finish",
            [
                record("recommend_product", recommended, product_ids=best),
                record("terminate", ended, status="success"),
            ],
            response=f"I recommend {best}.",
        ),
    ]
