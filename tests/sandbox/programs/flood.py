"""A flood of output on stdout and stderr, then a normal result."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from attempts import params, report

args = params()
line = b"x" * 1023 + b"\n"
for _ in range(args["mib"] * 1024):
    os.write(1, line)
    os.write(2, line)
report(done=True)
