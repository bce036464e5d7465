"""Tables piped to another program keep their rows whole (issue 25): off a terminal, rich assumed 80
columns and squashed a wide table into 6-to-9-character columns, a word a line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

import shoparena
from shoparena.cli import app

ROOT = Path(shoparena.__file__).resolve().parent.parent
ROW = "Search the catalogue (BM25 over title, SKU and attribute values). Returns up to 10 products per page"


def test_a_piped_table_keeps_each_row_on_one_line():
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    done = subprocess.run(
        [sys.executable, "-c", "from shoparena.cli import main; main()", "tools", "--profile", "full"],
        capture_output=True,  # stdout is a pipe
        text=True,
        env={**env, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if "find_product" in line]
    assert rows and ROW in rows[0]


def test_under_clirunner_too_and_columns_still_wins(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    wide = CliRunner().invoke(app, ["tools"])
    assert wide.exit_code == 0, wide.output
    assert any(ROW in line for line in wide.output.splitlines())
    narrow = CliRunner().invoke(app, ["tools"], env={"COLUMNS": "60"})
    assert narrow.exit_code == 0, narrow.output
    assert max(len(line) for line in narrow.output.splitlines()) <= 60


def test_a_width_seen_when_the_console_was_made_does_not_stick():
    """rich fixes $COLUMNS when a console is made; with lazily imported commands the console is made
    inside the first command, so a first command run with COLUMNS=60 squashed every later one."""
    script = (
        "import os; os.environ.pop('COLUMNS', None)\n"
        "from typer.testing import CliRunner\n"
        "from shoparena.cli import app\n"
        "CliRunner().invoke(app, ['tools'], env={'COLUMNS': '60'})\n"
        "print(CliRunner().invoke(app, ['tools']).output)\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert any(ROW in line for line in done.stdout.splitlines()), done.stdout[:400]
