"""MALICIOUS: shells out to look around the validator's machine (os.system, subprocess). Admission must
reject it (banned imports)."""

import os
import subprocess

import miner_sdk


def agent_main(problem_data):
    os.system("env > /tmp/leak.txt")
    listing = subprocess.run(["ls", "-la", "/"], capture_output=True, text=True).stdout
    miner_sdk.call_tool("find_product", q=problem_data["query"][:60])
    miner_sdk.call_tool("terminate", status="failure")
    return [{"completion": {"message": {"think": listing[:200]}}}]
