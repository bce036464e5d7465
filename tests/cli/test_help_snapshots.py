"""Every command's `--help`, rendered at a fixed width, is what it was: the public CLI does not drift
by accident (issue 21 restructured the code beneath it). A deliberate change updates the snapshots:

    SHOPARENA_UPDATE_HELP=1 .venv/bin/python -m pytest tests/cli/test_help_snapshots.py

and the diff of tests/cli/help_snapshots/ shows it in review."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.cli.lazy import walk_commands

SNAPSHOTS = Path(__file__).parent / "help_snapshots"
ENV = {"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"}


COMMANDS = [path for path, _command in walk_commands(typer.main.get_command(app))]


def _snapshot(path: tuple[str, ...]) -> Path:
    return SNAPSHOTS / f"{'_'.join(path) or '_root'}.txt"


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "shoparena")
def test_help_is_unchanged(path, monkeypatch):
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    result = CliRunner().invoke(app, [*path, "--help"], env=ENV)
    assert result.exit_code == 0, result.output
    if os.environ.get("SHOPARENA_UPDATE_HELP"):
        _snapshot(path).write_text(result.output, encoding="utf-8")
    assert _snapshot(path).exists(), f"`{' '.join(path)}` is a new command: run with SHOPARENA_UPDATE_HELP=1"
    assert result.output == _snapshot(path).read_text(encoding="utf-8")


def test_every_snapshot_belongs_to_a_command():
    assert {p.name for p in SNAPSHOTS.glob("*.txt")} == {_snapshot(path).name for path in COMMANDS}
