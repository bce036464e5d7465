"""An honest miner that never finishes: after one search it waits far past any per-problem wall clock
(the wait depends on the query, so admission sees nothing constant to refuse). The sandbox kills it at
the arena's timeout and the episode fails as a timeout."""

import time

import miner_sdk


def agent_main(problem_data):
    miner_sdk.call_tool("find_product", q=problem_data["query"][:60])
    time.sleep(600 + len(problem_data["query"]))
    return []
