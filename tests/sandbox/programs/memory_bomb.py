"""Memory bombs: one allocation over the address-space limit, then children that together hold more than
the tree's memory limit while each stays far under the per-process one."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from attempts import attempt, params, report

args = params()
attempt("one huge allocation", lambda: len(b"\1" * args["huge_bytes"]))
children = []
for _ in range(args["children"]):
    pid = os.fork()
    if pid == 0:
        held = b"\1" * args["child_bytes"]  # touched, so it is really resident
        time.sleep(args["hold_s"])
        os._exit(0 if held else 1)
    children.append(pid)
statuses = {}
for pid in children:
    _, status = os.waitpid(pid, 0)
    statuses[pid] = (
        {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"exit": os.WEXITSTATUS(status)}
    )
report(children=statuses)
