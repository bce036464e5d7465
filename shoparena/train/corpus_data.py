"""Reading training rows: a corpus directory's train/eval splits (what `shoparena corpus build` writes),
or any JSONL/Parquet file of rows in the same `{messages, tools, metadata}` shape (what a later stage —
rejection sampling, teacher rollouts — builds for `run_sft`).

A row that is not a conversation is refused with its file and line, not skipped silently: a training
set that lost rows without saying so would be a different training set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

ROLES = frozenset({"system", "user", "assistant", "tool"})


class DataError(ValueError):
    """A training file or row that cannot be used, named with its location."""


class CorpusSplits(BaseModel):
    """A corpus directory's rows and its frozen manifest."""

    model_config = ConfigDict(extra="forbid")

    path: Path
    train: list[dict[str, Any]]
    eval: list[dict[str, Any]] = Field(default_factory=list)
    manifest: dict[str, Any] = Field(default_factory=dict)

    @property
    def manifest_sha256(self) -> str | None:
        return self.manifest.get("manifest_sha256")


def check_row(row: Any, where: str) -> dict[str, Any]:
    """The row if it is a usable conversation; else `DataError` naming `where` and the problem."""
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object with messages, got {type(row).__name__}")
    messages = row.get("messages")
    if not isinstance(messages, list) or not messages:
        raise DataError(f"{where}: no `messages` list")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise DataError(f"{where}: message {index} has no role among {sorted(ROLES)}")
    if not any(m["role"] == "assistant" for m in messages):
        raise DataError(f"{where}: no assistant message to train on")
    tools = row.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise DataError(f"{where}: `tools` must be a list of function schemas")
    return row


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a `.jsonl` or `.parquet` file (corpus export form), each checked."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    if path.suffix == ".parquet":
        from shoparena.corpus.export import read_parquet_rows

        return [check_row(row, f"{path}[{i}]") for i, row in enumerate(read_parquet_rows(path))]
    rows = []
    with path.open("rb") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise DataError(f"{path}:{number}: not JSON ({exc})") from None
            rows.append(check_row(row, f"{path}:{number}"))
    return rows


def _split_file(directory: Path, split: str) -> Path | None:
    for suffix in (".jsonl", ".parquet"):
        if (directory / f"{split}{suffix}").is_file():
            return directory / f"{split}{suffix}"
    return None


def read_corpus(directory: Path) -> CorpusSplits:
    """A corpus directory's `train` and `eval` splits (JSONL, else Parquet) and `manifest.json`."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError(f"corpus {directory}: not a directory (build one with `shoparena corpus build`)")
    train = _split_file(directory, "train")
    if train is None:
        raise DataError(f"corpus {directory}: no train.jsonl or train.parquet")
    evaluation = _split_file(directory, "eval")
    manifest_path = directory / "manifest.json"
    manifest = orjson.loads(manifest_path.read_bytes()) if manifest_path.is_file() else {}
    return CorpusSplits(
        path=directory,
        train=read_rows(train),
        eval=read_rows(evaluation) if evaluation is not None else [],
        manifest=manifest,
    )


def read_training_data(path: Path) -> CorpusSplits:
    """A corpus directory, or a single rows file (train only)."""
    path = Path(path)
    if path.is_dir():
        return read_corpus(path)
    return CorpusSplits(path=path, train=read_rows(path))
