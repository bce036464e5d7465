"""A miner that ends its own process without returning (no result, exit status 3)."""

import os


def agent_main(problem_data):
    os._exit(3)
