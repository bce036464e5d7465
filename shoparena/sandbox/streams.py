"""The pipes out of the sandbox, read with caps: a flood of output costs the supervisor a bounded
amount of memory, and a result over its cap is refused rather than read.

stdout and stderr are drained to the end (a program that prints a lot still completes) and keep their
head and tail, which is where a banner and a traceback are. The result channel is different: past its
cap the reader closes it, so the writer gets EPIPE at once instead of pushing a gigabyte through.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import deque

CHUNK = 1 << 16


class _Drain:
    """Reads a pipe in a daemon thread until EOF (or until `_take` says stop), then closes it."""

    def __init__(self, fd: int, cap: int):
        self.cap = cap
        self.total = 0
        self._fd = fd
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _take(self, chunk: bytes) -> bool:
        raise NotImplementedError

    def _drain(self) -> None:
        try:
            while chunk := os.read(self._fd, CHUNK):
                self.total += len(chunk)
                if not self._take(chunk):
                    break
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                os.close(self._fd)

    def join(self, timeout_s: float) -> None:
        self._thread.join(timeout_s)


class HeadTail(_Drain):
    """Drains a pipe to its end, keeping at most `cap` bytes: the first half and the last half."""

    def __init__(self, fd: int, cap: int):
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_bytes = 0
        super().__init__(fd, cap)

    def _take(self, chunk: bytes) -> bool:
        head_cap = self.cap // 2
        tail_cap = self.cap - head_cap
        room = head_cap - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk and tail_cap:
            self._tail.append(chunk)
            self._tail_bytes += len(chunk)
            while self._tail and self._tail_bytes - len(self._tail[0]) >= tail_cap:
                self._tail_bytes -= len(self._tail.popleft())
        return True

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def text(self) -> str:
        tail = b"".join(self._tail)
        if not self.truncated:
            return (bytes(self._head) + tail).decode("utf-8", "replace")
        tail = tail[len(tail) - (self.cap - len(self._head)) :] if self.cap > len(self._head) else b""
        dropped = self.total - len(self._head) - len(tail)
        return (
            bytes(self._head).decode("utf-8", "replace")
            + f"\n[… {dropped} bytes dropped by the sandbox …]\n"
            + tail.decode("utf-8", "replace")
        )


class CappedResult(_Drain):
    """Reads the result channel up to `cap` bytes; one byte more and it closes the channel and keeps
    nothing (a result is whole or absent, never a truncated document)."""

    def __init__(self, fd: int, cap: int):
        self.overflow = False
        self._data = bytearray()
        super().__init__(fd, cap)

    def _take(self, chunk: bytes) -> bool:
        if self.total > self.cap:
            self.overflow = True
            self._data = bytearray()
            return False
        self._data += chunk
        return True

    def value(self) -> bytes | None:
        return None if self.overflow else bytes(self._data)
