"""A miner that searches through the server but only claims its recommendation in the returned steps."""

import json

import miner_sdk


def agent_main(problem_data):
    hits = miner_sdk.call_tool("find_product", q=problem_data["query"].split()[0])["result"]
    claimed = hits[0]["product_id"] if "real" in problem_data["query"] else "no-such-product"
    return [
        {
            "completion": {
                "message": {
                    "think": "done",
                    "tool_call": [
                        {"name": "recommend_product", "parameters": json.dumps({"product_ids": claimed})},
                        {"name": "terminate", "parameters": {"status": "success"}},
                    ],
                }
            }
        }
    ]
