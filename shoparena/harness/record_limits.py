"""What the harness stores about an episode must serialise and stay small, whatever an agent sends.

A call log entry that cannot be encoded (a lone surrogate from a broken `\\ud800` escape, an integer
beyond 64 bits, nesting deeper than the encoders go) used to fail the whole record, so the episode
was lost with all its calls; and a hostile agent could make one record hundreds of MB (large
arguments echoed into the result, the trace and the notes). So arguments are checked before a
call runs, and everything kept in the record goes through a per-episode `StoreBudget`: values are
made encodable (the harness never stores what it cannot write) and texts are cut to caps, and
each cut is said in the record next to what was cut.

The agent itself still sees full observations: caps bound what is *stored*, not what is answered.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict

SURROGATES = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
INT_MIN, INT_MAX = -(1 << 63), (1 << 64) - 1
"""What orjson (the record writer) encodes; Python's own JSON reader makes integers of any size."""


class RecordLimits(BaseModel):
    """Caps on one episode's call log and trace. The defaults leave ordinary episodes untouched (a
    25-step reference run stores 25-120 KB) and keep a hostile one to a few MB."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_argument_bytes: int = 16 << 10
    """A call whose arguments encode to more is refused (no tool needs more than a page of ids)."""
    max_depth: int = 32
    """Arguments nested deeper are refused; stored values are cut at this depth."""
    max_text_bytes: int = 64 << 10
    """One stored result, error, raw argument text or model text; beyond it a prefix is kept."""
    max_episode_bytes: int = 1 << 20
    """All stored results and texts of one episode; once spent, later ones keep a preview only.
    (The trace repeats what the call log holds, so a record is at most about twice this.)"""
    preview_bytes: int = 512
    """What is kept of a text that no longer fits."""
    max_calls: int = 256
    """Calls recorded while the episode runs; the episode ends when the log is full."""
    max_calls_after_end: int = 5
    """Refused calls after the end that are still recorded; later ones are counted, not stored."""


DEFAULT_LIMITS = RecordLimits()


# -- checking and cleaning values ----------------------------------------------------------------------
def _where(path: str) -> str:
    if len(path) > 48:
        path = path[:40] + "…"
    return path or "the value"


def unusable(value: Any, max_depth: int) -> str | None:
    """Why a decoded argument value cannot be used as given (None when it can), naming where."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            if not item.isascii() and SURROGATES.search(item):
                return (
                    f"{_where(path)} holds a lone surrogate (an invalid \\u escape), not valid Unicode text"
                )
        elif isinstance(item, bool) or item is None or isinstance(item, float):
            continue
        elif isinstance(item, int):
            if not INT_MIN <= item <= INT_MAX:
                return f"{_where(path)} is an integer beyond 64 bits"
        elif isinstance(item, dict | list | tuple):
            if depth >= max_depth:
                return f"{_where(path)} is nested deeper than {max_depth} levels"
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        return f"{_where(path)} has a {type(key).__name__} key, not a string"
                    if not key.isascii() and SURROGATES.search(key):
                        return f"a key of {_where(path)} holds a lone surrogate (an invalid \\u escape)"
                    stack.append((child, f"{path}.{key}" if path else key, depth + 1))
            else:
                stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(item))
        else:
            return f"{_where(path)} is a {type(item).__name__}, not a JSON value"
    return None


def clean_text(text: str) -> str:
    """The text with lone surrogates replaced by U+FFFD; the very same object when it has none."""
    if text.isascii() or not SURROGATES.search(text):
        return text
    return SURROGATES.sub(REPLACEMENT, text)


def clean_value(value: Any, max_depth: int, _depth: int = 0) -> Any:
    """An encodable copy: surrogates replaced, containers deeper than `max_depth` replaced by a marker
    string, integers beyond 64 bits and non-JSON values by their description."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        return value if INT_MIN <= value <= INT_MAX else f"<integer of {value.bit_length()} bits>"
    if isinstance(value, dict | list | tuple):
        if _depth >= max_depth:
            return f"<nested deeper than {max_depth} levels>"
        if isinstance(value, dict):
            return {
                clean_text(str(key)): clean_value(child, max_depth, _depth + 1)
                for key, child in value.items()
            }
        return [clean_value(child, max_depth, _depth + 1) for child in value]
    return f"<{type(value).__name__}>"


def deeper_than(value: Any, max_depth: int) -> bool:
    """Whether containers nest more than `max_depth` levels (strings and numbers are not walked)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth >= max_depth:
            return True
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, dict | list | tuple):
                stack.append((child, depth + 1))
    return False


def encode(value: Any, max_depth: int) -> tuple[Any, bytes]:
    """`value`, or its cleaned copy when it cannot be written as is, and its JSON bytes.

    orjson refuses surrogates, big integers and nesting past its own limit at C speed; nesting past
    `max_depth` needs at least that many brackets, so only values with that many are walked."""
    try:
        data = orjson.dumps(value)
    except (TypeError, ValueError):  # orjson.JSONEncodeError is a TypeError
        data = None
    if data is not None and (
        data.count(b"[") + data.count(b"{") < max_depth
        or not isinstance(value, dict | list | tuple)
        or not deeper_than(value, max_depth)
    ):
        return value, data
    cleaned = clean_value(value, max_depth)
    return cleaned, orjson.dumps(cleaned)


def prefix(data: bytes, limit: int) -> str:
    """The first `limit` bytes of UTF-8 `data` as text (a character cut in half is dropped)."""
    return data[:limit].decode("utf-8", "ignore")


def argument_problem(arguments: dict[str, Any], limits: RecordLimits) -> str | None:
    """Why these decoded arguments are refused before any tool runs: unusable values or their size."""
    problem = unusable(arguments, limits.max_depth)
    if problem is not None:
        return f"arguments rejected: {problem}"
    size = len(encode(arguments, limits.max_depth)[1])
    if size > limits.max_argument_bytes:
        return f"arguments of {size:,} bytes exceed the limit of {limits.max_argument_bytes:,} bytes"
    return None


# -- bounding what one episode stores -------------------------------------------------------------------
class StoreBudget:
    """Cuts what one episode stores to the caps of `limits`; each method returns the kept value and a
    note when something was cut or replaced (None when it is stored as given)."""

    def __init__(self, limits: RecordLimits):
        self.limits = limits
        self.used = 0
        self.spent = False

    def room(self) -> int:
        """The most one more stored text may take now: the cap, less once the budget runs low."""
        left = self.limits.max_episode_bytes - self.used
        if left < self.limits.max_text_bytes:
            self.spent = True
        return max(self.limits.preview_bytes, min(self.limits.max_text_bytes, left))

    def _why(self, limit: int) -> str:
        if limit < self.limits.max_text_bytes:
            return f"the episode's record budget of {self.limits.max_episode_bytes:,} bytes is spent"
        return f"over the {limit:,}-byte cap"

    def text(self, text: str | None, what: str, cap: int | None = None) -> tuple[str | None, str | None]:
        if text is None:
            return None, None
        clean = clean_text(text)
        note = f"{what}: lone surrogates replaced by U+FFFD" if clean is not text else None
        data = clean.encode()
        limit = min(self.room(), cap) if cap is not None else self.room()
        if len(data) > limit:
            clean = prefix(data, limit)
            why = f"over the {limit:,}-byte cap" if cap is not None and limit == cap else self._why(limit)
            note = f"{what} of {len(data):,} bytes cut to its first {limit:,} ({why})"
            data = data[:limit]
        self.used += len(data)
        return clean, note

    def value(self, value: Any, what: str, data: bytes | None = None) -> tuple[Any, str | None]:
        """A JSON value: kept whole when it fits; a list keeps its leading items that fit; anything
        else becomes the prefix of its JSON text (a string). `data`: the JSON of an already
        `encode`d value, to save encoding it again."""
        value_out, data = (value, data) if data is not None else encode(value, self.limits.max_depth)
        note = f"{what}: unencodable parts replaced" if value_out is not value else None
        limit = self.room()
        if len(data) <= limit:
            self.used += len(data)
            return value_out, note
        why = self._why(limit)
        if isinstance(value_out, list):
            kept, size = [], 2
            for item in value_out:
                item_size = len(orjson.dumps(item)) + 1
                if size + item_size > limit:
                    break
                kept.append(item)
                size += item_size
            if kept:
                self.used += size
                return kept, (
                    f"{what} of {len(data):,} bytes cut to its first {len(kept)} of {len(value_out)} "
                    f"items ({why})"
                )
        self.used += limit
        return prefix(data, limit), (
            f"{what} of {len(data):,} bytes stored as the first {limit:,} bytes of its JSON text ({why})"
        )
