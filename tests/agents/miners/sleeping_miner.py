"""A miner that never returns and leaves a child process behind: both must be killed at the timeout."""

import os
import subprocess
import sys
import time


def agent_main(problem_data):
    print("noise " * 2000, file=sys.stderr)  # more than the kept tail: the error must still say why
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print(f"PIDS {os.getpid()} {child.pid}", file=sys.stderr, flush=True)
    while True:
        time.sleep(1)
