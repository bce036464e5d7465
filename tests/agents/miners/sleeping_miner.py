"""A miner that never returns and leaves a child process behind: both must be killed at the timeout.
The child carries the problem id on its command line, so a test can look for it among the host's
processes."""

import subprocess
import sys
import time


def agent_main(problem_data):
    print("noise " * 2000, file=sys.stderr)  # more than the kept tail: the error must still say why
    marker = problem_data["problem_id"]
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker])
    print(f"CHILD STARTED {marker}", file=sys.stderr, flush=True)
    while True:
        time.sleep(1)
