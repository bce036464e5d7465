"""Stage-granular resumption: a finished stage leaves `stage_done.json` holding its fingerprint — a hash
of its own settings and of the fingerprint of the stage before it, so a change upstream redoes
everything downstream. A stage directory without a matching marker is not trusted: it is moved aside
(`NAME.interrupted-TIMESTAMP`), never deleted, and the stage runs again from its start — except a stage
that resumes itself inside (the training pipeline), which keeps its directory when only the marker is
missing and its inputs are unchanged.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson

from shoparena.loop.layout import STAGE_DONE
from shoparena.train.pipeline import set_aside

STAGE_STARTED = "stage_started.json"


def fingerprint(previous: str, settings: Any) -> str:
    """The stage's identity: its settings (JSON-able) chained to the previous stage's fingerprint."""
    body = orjson.dumps({"previous": previous, "settings": settings}, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(body).hexdigest()


def _marker(path: Path) -> str | None:
    try:
        return orjson.loads(path.read_bytes()).get("fingerprint")
    except (OSError, ValueError, AttributeError):
        return None


def is_done(directory: Path, print_: str) -> bool:
    return _marker(directory / STAGE_DONE) == print_


def begin(directory: Path, print_: str, *, resumes_inside: bool = False) -> Path | None:
    """Prepare to run a stage: set its directory aside unless it resumes inside with the same inputs.
    Returns where an untrusted directory was moved (None: there was none, or it resumes inside)."""
    same_inputs = _marker(directory / STAGE_STARTED) == print_
    aside = None if resumes_inside and same_inputs else set_aside(directory)
    directory.mkdir(parents=True, exist_ok=True)
    _write(directory / STAGE_STARTED, {"fingerprint": print_})
    return aside


def started_with(directory: Path, print_: str) -> bool:
    """Whether `directory` was begun with fingerprint `print_` (an interrupted run of the same stage)."""
    return _marker(directory / STAGE_STARTED) == print_


def finish(directory: Path, print_: str, summary: dict[str, Any]) -> None:
    _write(directory / STAGE_DONE, {"fingerprint": print_, "summary": summary})


def summary_of(directory: Path) -> dict[str, Any]:
    """What a finished stage recorded about itself."""
    try:
        return orjson.loads((directory / STAGE_DONE).read_bytes()).get("summary") or {}
    except (OSError, ValueError, AttributeError):
        return {}


def _write(path: Path, body: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(orjson.dumps(body, option=orjson.OPT_INDENT_2))
    tmp.replace(path)
