"""A miner that burns CPU without end: the CPU-seconds limit stops it before the wall-clock timeout."""


def agent_main(problem_data):
    count = 0
    while True:
        count += 1
