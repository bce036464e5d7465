"""The loop's console shows its own stage lines and nothing else (issue 25).

transformers, TRL, datasets, uvicorn and the processes the loop starts print as they please: warnings,
raw loss dicts, `Loading weights` bars, access logs, lines without the stage layout's indent.
`library_output_to(log, say)` sends all of that to a log file: while it is open, Python's
`sys.stdout`/`sys.stderr` and the process's file descriptors 1 and 2 (which child processes inherit)
point at the log, and only the `say` it yields writes to the console the loop was started on.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

Say = Callable[[str], None]
LOG_FILE = "loop.log"


def _fileno(stream: IO[str]) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


@contextlib.contextmanager
def library_output_to(log_path: Path, say: Say) -> Iterator[Say]:
    """Within the block, everything but the yielded `say`'s lines goes to `log_path` (appended)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("a", buffering=1, encoding="utf-8", errors="replace")
    console = sys.stdout
    saved: dict[int, int] = {}
    own: IO[str] | None = None
    try:
        for fd in (1, 2):
            saved[fd] = os.dup(fd)
            os.dup2(log.fileno(), fd)
    except OSError:  # no such descriptor (an embedding host): Python's streams are still redirected
        pass
    if _fileno(console) == 1 and 1 in saved:
        # the console was descriptor 1, which is the log now: write to a copy of the old one
        own = os.fdopen(
            os.dup(saved[1]), "w", buffering=1, encoding=getattr(console, "encoding", None) or "utf-8"
        )
        console = own
    before = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = log

    def to_console(line: str) -> None:
        sys.stdout = console
        try:
            say(line)
        finally:
            with contextlib.suppress(Exception):
                console.flush()
            sys.stdout = log

    try:
        yield to_console
    finally:
        with contextlib.suppress(Exception):
            log.flush()
        sys.stdout, sys.stderr = before
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        if own is not None:
            own.close()
        log.close()
