"""What every stage writes while it trains and after: `metrics.jsonl` (one line per logging step), a
progress bar on stderr, and a short `report.md`. The callbacks are `transformers.TrainerCallback`s, so
any TRL trainer takes them; a stage with its own loop calls `MetricsLog.write` directly.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import orjson

METRICS_FILE = "metrics.jsonl"
REPORT_FILE = "report.md"


def is_main_process() -> bool:
    """Rank 0 of a distributed launch (`accelerate launch`, torchrun set RANK), or a plain run: the one
    process that writes a stage's files."""
    return int(os.environ.get("RANK", "0")) == 0


class MetricsLog:
    """Appends one JSON object per call to `metrics.jsonl`, flushed at once (a crash keeps the lines).
    Only the main process of a distributed run writes."""

    def __init__(self, path: Path, **constant: Any):
        self.path = path
        self.constant = constant
        self.lines = 0
        self._file = None
        if is_main_process():
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("ab")

    def write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            return
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
        self._file.write(orjson.dumps({**self.constant, **clean}, default=str) + b"\n")
        self._file.flush()
        self.lines += 1

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def read_metrics(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in Path(path).read_bytes().splitlines() if line.strip()]


def _callback_base() -> type:
    from transformers import TrainerCallback

    return TrainerCallback


def metrics_callback(log: MetricsLog, tokens_per_step: list[int] | None = None):
    """A TrainerCallback writing each `on_log` (train and eval) to `log`, with the step, wall time and
    throughput (from TRL's `num_tokens`, else from `tokens_per_step`, the tokens of each step)."""

    class MetricsCallback(_callback_base()):
        def __init__(self) -> None:
            self.started = time.monotonic()

        def on_train_begin(self, args, state, control, **kwargs):
            self.started = time.monotonic()  # throughput of training, not of dataset preparation

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not logs:
                return
            record: dict[str, Any] = {"step": state.global_step, "epoch": state.epoch}
            record.update(logs)
            elapsed = time.monotonic() - self.started
            record["elapsed_s"] = round(elapsed, 3)
            seen = logs.get("num_tokens")  # TRL counts the tokens it fed (exact)
            if seen is None and tokens_per_step is not None:
                seen = sum(tokens_per_step[: state.global_step])
            if seen is not None and elapsed > 0 and "eval_loss" not in logs:
                record["tokens_seen"] = int(seen)
                record["tokens_per_s"] = round(seen / elapsed, 2)
            log.write(record)

    return MetricsCallback()


def progress_callback(description: str):
    """A rich progress bar on stderr over the optimiser steps, with the latest loss."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    class ProgressCallback(_callback_base()):
        def __init__(self) -> None:
            self.progress: Progress | None = None
            self.task = None

        def on_train_begin(self, args, state, control, **kwargs):
            if not state.is_world_process_zero:
                return
            self.progress = Progress(
                TextColumn(f"[bold]{description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("loss [bold]{task.fields[loss]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            self.progress.start()
            self.task = self.progress.add_task(description, total=state.max_steps or None, loss="–")

        def on_step_end(self, args, state, control, **kwargs):
            if self.progress is not None:
                self.progress.update(self.task, completed=state.global_step)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if self.progress is not None and logs and "loss" in logs:
                self.progress.update(self.task, loss=f"{logs['loss']:.4f}")

        def on_train_end(self, args, state, control, **kwargs):
            if self.progress is not None:
                self.progress.stop()
                self.progress = None

    return ProgressCallback()


def markdown_table(header: list[str], rows: list[list[Any]]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.4g}"
        return "–" if value is None else str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write_report(
    path: Path, title: str, facts: dict[str, Any], sections: dict[str, str] | None = None
) -> Path:
    """`report.md`: a title, a facts table, then free sections (heading → Markdown)."""
    parts = [f"# {title}", "", markdown_table(["", "value"], [[k, v] for k, v in facts.items()])]
    for heading, body in (sections or {}).items():
        parts += ["", f"## {heading}", "", body]
    path.write_text("\n".join(parts) + "\n")
    return path
