"""A fork bomb: every process forks for ever. The first process records when a fork is refused, returns
that, and keeps bombing until the run is killed."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from attempts import report

forked = 0
refused = None
while refused is None:
    try:
        if os.fork() == 0:
            while True:  # a child: fork for ever, ignoring refusals
                try:
                    os.fork()
                except OSError:
                    time.sleep(0.01)
        forked += 1
    except OSError as exc:
        refused = f"{type(exc).__name__}: {exc}"
report(forked=forked, refused=refused)
sys.stdout.flush()
while True:
    try:
        os.fork()
    except OSError:
        time.sleep(0.01)
