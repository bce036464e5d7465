"""The benign miner, one second slower per problem (for tests that stop a validator mid-job)."""

import time

import miner_sdk


def step(think, calls, response=""):
    return {
        "completion": {
            "reasoning_content": "",
            "content": "",
            "message": {"think": think, "tool_call": calls, "response": response},
        },
        "extra_info": {},
    }


def called(name, answer, **parameters):
    return {
        "name": name,
        "parameters": parameters,
        "tool_call_id": answer["call_id"],
        "result": answer["result"],
    }


def agent_main(problem_data):
    time.sleep(1.0)  # slow enough that a test can stop the validator mid-job
    words = problem_data["query"].split()
    query = " ".join(words[:4])
    found = miner_sdk.call_tool("find_product", q=query)
    for word in words:
        if found["result"]:
            break
        query = word
        found = miner_sdk.call_tool("find_product", q=query)
    if not found["result"]:
        ended = miner_sdk.call_tool("terminate", status="failure")
        return [step("nothing matches", [called("terminate", ended, status="failure")])]
    best = found["result"][0]["product_id"]
    viewed = miner_sdk.call_tool("view_product_information", product_ids=best)
    recommended = miner_sdk.call_tool("recommend_product", product_ids=best)
    ended = miner_sdk.call_tool("terminate", status="success")
    return [
        step("search the catalogue", [called("find_product", found, q=query)]),
        step("check the first hit", [called("view_product_information", viewed, product_ids=best)]),
        step(
            "recommend it and finish",
            [
                called("recommend_product", recommended, product_ids=best),
                called("terminate", ended, status="success"),
            ],
            response="I recommend " + best + ".",
        ),
    ]
