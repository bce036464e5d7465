"""A miner that floods stdout and stderr with garbage (including JSON-looking text) yet returns valid steps."""

import sys

import miner_sdk


def agent_main(problem_data):
    for i in range(2000):
        print('{"ok": false, "steps": "not these"} ' + "x" * 100, i)
        print("\x00\xff garbage \u2603", i, file=sys.stderr)
    sys.stdout.write("]]]}}}")
    hits = miner_sdk.call_tool("find_product", q=problem_data["query"].split()[0])["result"]
    chosen = hits[0]["product_id"]
    miner_sdk.call_tool("recommend_product", product_ids=chosen)
    print("STDERR-END-MARKER", file=sys.stderr)
    return [
        {
            "completion": {
                "message": {
                    "think": "noisy but fine",
                    "tool_call": [{"name": "recommend_product", "parameters": {"product_ids": chosen}}],
                }
            }
        }
    ]
