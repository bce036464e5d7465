"""A file that is not a miner: it has no agent_main."""


def solve(problem_data):
    return []
