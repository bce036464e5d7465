"""Reading a JSONL output in a test: every non-blank line as an object."""

from __future__ import annotations

from pathlib import Path

import orjson


def read_jsonl(path: Path | str) -> list[dict]:
    with Path(path).open("rb") as handle:
        return [orjson.loads(line) for line in handle if line.strip()]
