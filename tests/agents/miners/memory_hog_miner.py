"""A miner that tries to allocate far more memory than its limit allows."""


def agent_main(problem_data):
    hoard = [bytearray(64 << 20) for _ in range(64)]  # 4 GiB
    return [{"completion": {"message": {"think": str(len(hoard))}}}]
