"""A miner whose code raises after one search: the run must report the traceback, not crash the runner."""

import miner_sdk


def parse_budget(query):
    return int(query.split("budget")[1])  # IndexError for a query without the word


def agent_main(problem_data):
    miner_sdk.call_tool("find_product", q=problem_data["query"])
    parse_budget("no such word here")
    return []
