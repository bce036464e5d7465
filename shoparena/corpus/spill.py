"""The survivors' spill: stage 1 workers write each chunk's axis-A rows to the chunk's own file, and
ranking (stage 2) and export (stage 4) read single rows back by (chunk, offset).

A stored row is its canonical JSON followed by its TRL-form messages JSON, LZ4-compressed (Arrow's
codec): ~4.5x smaller for ~20 µs a row in the workers, which at a million rows keeps the spill in the
page cache, so ranking and export read memory instead of the disk.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

_CODEC: Any = None


def codec() -> Any:
    """The LZ4 codec, or False where this pyarrow has none (rows are then stored as they are)."""
    global _CODEC
    if _CODEC is None:
        import pyarrow as pa

        _CODEC = pa.Codec("lz4") if pa.Codec.is_available("lz4") else False
    return _CODEC


def pack(blob: bytes) -> bytes:
    lz4 = codec()
    return lz4.compress(blob, asbytes=True) if lz4 else blob


def unpack(stored: bytes, size: int) -> bytes:
    lz4 = codec()
    return lz4.decompress(stored, decompressed_size=size, asbytes=True) if lz4 else stored


def chunk_path(scratch: Path, index: int, name: str) -> Path:
    """Where chunk `index` keeps its `name` lines (`cand` for the spill)."""
    return scratch / f"{index:07d}.{name}"


class SpillReader:
    """Reads stored rows back, keeping the last few chunk files open (export reads them in input
    order, so one file serves many rows in a row)."""

    def __init__(self, scratch: Path, keep: int = 32):
        self.scratch = scratch
        self.keep = keep
        self._open: dict[int, Any] = {}

    def __enter__(self) -> Callable[[int, int, int, int], bytes]:
        return self.read

    def __exit__(self, *exc: object) -> None:
        for handle in self._open.values():
            handle.close()
        self._open.clear()

    def read(self, chunk: int, offset: int, stored: int, size: int) -> bytes:
        """The row stored at `offset` of chunk `chunk` (`stored` bytes on disk, `size` unpacked)."""
        handle = self._open.pop(chunk, None)
        if handle is None:
            handle = chunk_path(self.scratch, chunk, "cand").open("rb")
            if len(self._open) >= self.keep:
                self._open.pop(next(iter(self._open))).close()
        self._open[chunk] = handle  # most recently used last
        handle.seek(offset)
        return unpack(handle.read(stored), size)
