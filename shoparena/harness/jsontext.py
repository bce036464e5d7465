"""JSON text for model-facing data: fast orjson, with the stdlib as the fallback for what orjson refuses.

Model output can hold integers beyond 64 bits (which orjson rejects) and non-standard tokens; a call
carrying them must become an observation, not a crash, so every model-facing encode and decode goes
through here.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def loads(text: str) -> Any:
    """Decode JSON; raises ValueError (json.JSONDecodeError is one) with the position of the problem,
    also for nesting too deep for the stdlib decoder (its RecursionError is no user's error)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            return json.loads(text)
        except RecursionError:
            raise ValueError("JSON nested too deeply to decode") from None
