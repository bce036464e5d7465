"""Survives the timeout: a setsid double fork whose grandchild re-executes itself with a marker on its
command line, says it is alive through the tools, and keeps writing files (a host path first) for
ever, while agent_main never returns. @MARKER@ and @HOST_FILE@ are filled in by the test."""

import os
import sys
import time

import miner_sdk

MARKER = "@MARKER@"
HOST_FILE = "@HOST_FILE@"
DAEMON = """
import os, sys, time
import importlib.util
spec = importlib.util.spec_from_file_location("miner_sdk", sys.argv[2])
sdk = importlib.util.module_from_spec(spec); spec.loader.exec_module(sdk)
sdk.call_tool("find_product", q="DAEMON alive " + sys.argv[1])
beat = 0
while True:
    beat += 1
    for path in (sys.argv[3], "/tmp/daemon-was-here"):
        try:
            with open(path, "a") as handle:
                handle.write(f"{beat}\\n")
        except OSError:
            pass
    time.sleep(0.05)
"""


def agent_main(problem_data):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", DAEMON, MARKER, miner_sdk.__file__, HOST_FILE])
        os._exit(0)
    os.wait()
    while True:
        time.sleep(1)
