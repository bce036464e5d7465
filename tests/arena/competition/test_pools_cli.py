"""`shoparena arena bank add|show` from the command line, on a real arena over the session catalogue."""

from __future__ import annotations

from datetime import timedelta

import orjson
from typer.testing import CliRunner

from shoparena.arena.competition.pools import manifest_path, read_bank, rotation_at
from shoparena.arena.config import read_config
from shoparena.cli import app
from tests.arena.competition.test_pools import CREATED, arena_dir  # noqa: F401  (fixture)

runner = CliRunner()


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def test_bank_add_and_show(arena_dir):  # noqa: F811
    empty = invoke("arena", "bank", "show", "--dir", arena_dir, "--json")
    assert empty.exit_code == 0, empty.output
    assert orjson.loads(empty.stdout)["size"] == 0

    added = invoke("arena", "bank", "add", "--dir", arena_dir, "--n", 12, "--seed", 3)
    assert added.exit_code == 0, added.output
    assert "added" in added.stdout and "never-touch leak cluster" in added.stdout  # seed 3 = the suite's
    report = invoke("arena", "bank", "add", "--dir", arena_dir, "--n", 12, "--seed", 3, "--json")
    assert report.exit_code == 0, report.output
    again = orjson.loads(report.stdout)
    assert again["added"] == 0 and again["duplicates"] > 0 and again["dropped_never_touch"] >= 6
    said = invoke("arena", "bank", "add", "--dir", arena_dir, "--n", 12, "--seed", 3)
    assert "skipped" in said.stdout and "already in the bank" in said.stdout

    at = (CREATED + timedelta(minutes=1)).isoformat()
    shown = invoke("arena", "bank", "show", "--dir", arena_dir, "--at", at, "--json")
    assert shown.exit_code == 0, shown.output
    summary = orjson.loads(shown.stdout)
    bank = read_bank(arena_dir)
    assert summary["size"] == bank.size == again["bank_size"]
    assert summary["sha256"] == bank.sha256
    assert summary["clusters"] == len(bank.clusters())
    assert sum(b["problems"] for b in summary["buckets"].values()) == bank.size
    rotation = summary["rotation"]
    assert rotation["period"] == 0 and rotation["frozen"] is False  # show previews, freezes nothing
    assert not manifest_path(arena_dir, 0).exists()
    assert rotation["open_problems"] + rotation["heldout_problems"] == bank.size

    manifest = rotation_at(arena_dir, read_config(arena_dir), CREATED, retired=())
    frozen = orjson.loads(invoke("arena", "bank", "show", "--dir", arena_dir, "--at", at, "--json").stdout)
    assert frozen["rotation"]["frozen"] is True and frozen["rotation"]["sha256"] == manifest.sha256
    text = invoke("arena", "bank", "show", "--dir", arena_dir, "--at", at)
    assert text.exit_code == 0 and "period-0000.json" in text.stdout and "held out" in text.stdout


def test_bank_commands_fail_clearly(arena_dir, tmp_path):  # noqa: F811
    (arena_dir / "race_bank.jsonl").write_bytes(b"oops\n")
    shown = invoke("arena", "bank", "show", "--dir", arena_dir)
    assert shown.exit_code == 2 and "race_bank.jsonl:1" in shown.output
    added = invoke("arena", "bank", "add", "--dir", arena_dir, "--n", 3, "--seed", 1)
    assert added.exit_code == 2 and "race_bank.jsonl:1" in added.output
    nowhere = invoke("arena", "bank", "add", "--dir", tmp_path / "none", "--n", 3, "--seed", 1)
    assert nowhere.exit_code == 2 and "not an arena directory" in nowhere.output


def test_a_bank_add_that_adds_nothing_new_fails(arena_dir):  # noqa: F811
    """Every generated task in a never-touch cluster (seed 3 makes the arena's own suite again): the bank
    cannot grow from this seed, and exit 0 would read as done."""
    dropped = invoke("arena", "bank", "add", "--dir", arena_dir, "--n", 6, "--seed", 3)
    assert dropped.exit_code == 1, dropped.output
    assert "error: no problem added to the bank: all 6 generated fall in a never-touch leak cluster" in (
        dropped.output
    )
    assert read_bank(arena_dir).size == 0
