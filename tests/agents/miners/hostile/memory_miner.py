"""Holds 4.6 GiB across forked children: each stays far under the per-process address-space limit,
together they are far over the tree's memory. Reports how each child ended."""

import json
import os
import time

import miner_sdk

CHILDREN = 23
CHILD_BYTES = 200 << 20  # 23 x 200 MiB = 4.6 GiB


def agent_main(problem_data):
    children = []
    for _ in range(CHILDREN):
        pid = os.fork()
        if pid == 0:
            held = b"\1" * CHILD_BYTES  # touched, so it is really resident
            time.sleep(0.5)
            os._exit(0 if held else 1)
        children.append(pid)
    ended = {"exit 0": 0}
    for pid in children:
        _, status = os.waitpid(pid, 0)
        how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}"
        ended[how] = ended.get(how, 0) + 1
    miner_sdk.call_tool("find_product", q="ESCAPE " + json.dumps(ended, sort_keys=True))
    miner_sdk.call_tool("terminate", status="failure")
    return []
