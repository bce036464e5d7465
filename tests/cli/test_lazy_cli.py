"""The CLI starts without the heavy libraries (issue 25): `shoparena --help` and simple commands import
only what they use, so they start at once. Checked by what a fresh process has imported, not by a
clock (bench/cli_startup.py measures the time). Also: `--version`, `-h` everywhere, the top-level
listing matches each command's own help, and help stands on its own."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import shoparena
from shoparena import __version__
from shoparena.cli import COMMANDS, app
from shoparena.cli.lazy import walk_commands

ROOT = Path(shoparena.__file__).resolve().parent.parent
HEAVY = (
    "torch",
    "transformers",
    "trl",
    "peft",
    "datasets",
    "numpy",
    "pandas",
    "matplotlib",
    "tantivy",
    "fastapi",
    "uvicorn",
    "sqlalchemy",
    "jinja2",
    "httpx",
    "sentence_transformers",
)
PROBE = """
import json, sys
heavy = json.loads(sys.argv[2])
sys.argv = ["shoparena", *json.loads(sys.argv[1])]
from shoparena.cli import main
try:
    main()
except SystemExit:
    pass
print("\\nIMPORTED " + json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
"""


def _imported(args: list[str]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "100", "NO_COLOR": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    line = done.stdout.rsplit("IMPORTED ", 1)
    assert len(line) == 2, done.stdout + done.stderr
    return sorted({name.split(".")[0] for name in json.loads(line[1])})


@pytest.mark.parametrize(
    "args",
    [["--help"], ["-h"], ["--version"], ["tools"], ["keys", "show", "--help"], ["eval", "--help"]],
    ids=" ".join,
)
def test_simple_commands_import_no_heavy_library(args):
    assert _imported(args) == []


def test_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"shoparena {__version__}"


@pytest.mark.parametrize(
    "path", [[], ["eval"], ["train", "sft"], ["arena", "race", "open"], ["store"]], ids=str
)
def test_dash_h_is_help_everywhere(path):
    short = CliRunner().invoke(app, [*path, "-h"], env={"COLUMNS": "100", "NO_COLOR": "1"})
    long = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "100", "NO_COLOR": "1"})
    assert short.exit_code == 0, short.output
    assert short.output == long.output and "Usage:" in short.output


def test_the_listing_is_each_commands_own_first_paragraph():
    """`shoparena --help` shows COMMANDS' one-liners without importing the modules; each must be the
    first paragraph of the command's real help, and every command a module registers is listed."""
    root = typer.main.get_command(app)
    ctx = typer._click.Context(root)
    assert root.list_commands(ctx) == list(COMMANDS)
    for name, (_module, line) in COMMANDS.items():
        command = root.get_command(ctx, name)
        assert command is not None, name
        first = re.sub(r"\s+", " ", (command.help or "").split("\n\n")[0]).strip()
        assert first == line, name


def test_no_help_cites_the_spec():
    """Users do not have SPEC.md: no help text sends them to it."""
    cited = []
    for path, command in walk_commands(typer.main.get_command(app)):
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        cited += [(" ".join(path), t) for t in texts if re.search(r"SPEC\s*§", t)]
    assert cited == []


def test_a_stage_command_shows_defaults_and_required_fields():
    result = CliRunner().invoke(app, ["train", "sft", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    flat = re.sub(r"[\s│]+", " ", result.output)
    assert "resolved config. [required: here or in --config]" in flat
    assert "Seeds data order, LoRA init and sampling. [default: 0]" in flat
    assert "Show a progress bar. [default: --progress]" in flat


def test_a_mistyped_command_is_still_suggested():
    result = CliRunner().invoke(app, ["serch"], env={"COLUMNS": "120", "NO_COLOR": "1"})
    assert result.exit_code == 2
    assert "No such command 'serch'. Did you mean 'search'?" in result.output
