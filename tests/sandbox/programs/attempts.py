"""Shared by the hostile programs (placed beside them in /app): record what each escape attempt did,
and return the record through the result channel."""

import json
import os
import sys

RESULTS: list[dict] = []


def params() -> dict:
    return json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}


def attempt(name, fn):
    """Run one escape attempt; an exception means the sandbox stopped it, a value means it got through
    (the test then decides whether that value is harmless, e.g. a write into the private /tmp)."""
    try:
        value = fn()
    except BaseException as exc:
        RESULTS.append({"name": name, "blocked": True, "error": f"{type(exc).__name__}: {exc}"})
        return None
    RESULTS.append({"name": name, "blocked": False, "value": value})
    return value


def report(**extra) -> None:
    with open(os.environ["SHOPARENA_RESULT_PATH"], "w") as handle:
        json.dump({"attempts": RESULTS, **extra}, handle, default=repr)
