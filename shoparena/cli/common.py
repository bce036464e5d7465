"""Helpers shared by CLI commands: consoles, JSON output, progress bars, clean error exits."""

from __future__ import annotations

import math
import os
import sys
from contextlib import contextmanager

import orjson
import typer
from rich.console import Console, ConsoleDimensions
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

PIPE_WIDTH = 1000
"""The width tables are laid out for when stdout is not a terminal (a pipe, a file) and COLUMNS is not
set: wide enough that no column is squashed or wrapped, so each row stays one line for grep and cut."""


class OutputConsole(Console):
    """stdout's console: a terminal's width on a terminal; `PIPE_WIDTH` (or $COLUMNS) elsewhere, where
    rich would otherwise assume 80 columns and squash a wide table to 6-character columns.

    $COLUMNS is read when a table is laid out, not when the console is made: rich fixes it at
    construction, so a console made while one command ran with COLUMNS=60 would stay 60 columns wide
    for every later command of the same process (a test session, a notebook)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._fixed_width = kwargs.get("width")
        self._width = self._fixed_width

    @property
    def size(self) -> ConsoleDimensions:
        if self._fixed_width is None:  # whatever later set `_width` (a live display), not the caller
            columns = os.environ.get("COLUMNS", "")
            height = super().size.height
            if columns.isdigit() and int(columns) > 0:
                return ConsoleDimensions(int(columns), height)
            if not self.is_terminal:
                return ConsoleDimensions(PIPE_WIDTH, height)
        return super().size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)


console = OutputConsole()
err_console = OutputConsole(stderr=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print a one-line error to stderr and return the Exit to raise."""
    err_console.print(f"[bold red]error:[/] {message}", soft_wrap=True)
    return typer.Exit(code)


def say(*objects, **options) -> None:
    """One message on stdout, never wrapped (paths and URLs stay whole for copying) nor highlighted."""
    console.print(*objects, soft_wrap=True, highlight=False, **options)


def say_err(*objects, **options) -> None:
    err_console.print(*objects, soft_wrap=True, highlight=False, **options)


def duration(seconds: float) -> str:
    """A wait as a person says it: `30 s`, `59 min`, `2 h`, `2 h 5 min` (minutes rounded up, so waiting
    that long is enough)."""
    seconds = max(0, math.ceil(seconds))
    if seconds < 60:
        return f"{seconds} s"
    hours, minutes = divmod(math.ceil(seconds / 60), 60)
    if not hours:
        return f"{minutes} min"
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def print_json(data: object) -> None:
    """Machine-readable output: exactly one JSON document on stdout, nothing else."""
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


@contextmanager
def progress_bar(description: str, total: int | None):
    """A rich progress bar on stderr; yields an `advance(n)` callback."""
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
    )
    with progress:
        task = progress.add_task(description, total=total)
        yield lambda n=1: progress.advance(task, n)


def quiet_libraries() -> None:
    """Long jobs that drive transformers, TRL and datasets many times (the loop) print their own
    progress; silence the libraries' per-call bars, weight-loading bars and deprecation notices, which
    would otherwise bury it. Errors still show. Call before those libraries are imported."""
    import os
    import warnings

    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    for module in ("transformers", "trl", "peft", "datasets", "torch"):
        warnings.filterwarnings("ignore", category=FutureWarning, module=module)
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=module)
