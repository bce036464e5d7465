"""Parallel appends that keep input order: worker processes write their chunks' output straight into
the shared output files, each chunk at the byte range reserved for it right after the previous chunk
reserved its own.

Sending every output row back to one process to write costs that process a copy through a pipe, an
unpickling and a write per row (at ~40 KB a row, most of its time); writing to per-chunk files and
concatenating them afterwards costs a second copy of every byte. Here each byte is written once, by
the worker that made it. Reservation is a short critical section under a shared lock (a counter of
whose turn it is and the current end of each file); the writes happen outside it, in parallel.

The objects are created before the workers fork and are inherited by them (the `fork` start method).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class OrderedAppender:
    """Appends each chunk's bytes to the named files at ranges reserved in chunk-index order."""

    def __init__(self, context: Any, paths: dict[str, Path]):
        self.paths = paths
        self._turn = context.Condition()
        self._next = context.RawValue("q", 0)
        self._ends = {name: context.RawValue("q", 0) for name in paths}
        self._fds: dict[str, int] = {}

    def _fd(self, name: str) -> int:
        fd = self._fds.get(name)
        if fd is None:  # opened lazily, so every process (the main one too) has its own descriptor
            fd = self._fds[name] = os.open(self.paths[name], os.O_WRONLY)
        return fd

    def append(self, index: int, parts: dict[str, Sequence[bytes]]) -> dict[str, int]:
        """Writes chunk `index`'s parts (a list of byte strings per file name, written back to back)
        and returns where each began. Waits until chunks 0..index-1 have reserved theirs; a chunk that
        fails must still `append` (with nothing) or the chunks after it would wait for ever."""
        sizes = {name: sum(map(len, items)) for name, items in parts.items()}
        with self._turn:
            while self._next.value != index:
                self._turn.wait()
            starts = {}
            for name, size in sizes.items():
                starts[name] = self._ends[name].value
                self._ends[name].value += size
            self._next.value = index + 1
            self._turn.notify_all()
        for name, items in parts.items():
            if sizes[name]:
                _pwrite_all(self._fd(name), items, starts[name])
        return starts

    def end(self, name: str) -> int:
        return self._ends[name].value

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def _pwrite_all(fd: int, items: Sequence[bytes], offset: int) -> None:
    buffers = list(items)
    while buffers:
        # os.pwritev takes at most IOV_MAX buffers and may write fewer bytes than asked
        batch = buffers[:512]
        written = os.pwritev(fd, batch, offset)
        offset += written
        while batch and written >= len(batch[0]):
            written -= len(batch.pop(0))
            buffers.pop(0)
        if written:
            buffers[0] = memoryview(buffers[0])[written:]
