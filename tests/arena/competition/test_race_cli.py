"""`shoparena arena race …`, `arena race-problems` and `arena weights` on a real arena directory."""

from __future__ import annotations

import orjson
import pytest
from typer.testing import CliRunner

from shoparena.arena.competition.chain import LocalChain
from shoparena.arena.competition.rules import seed_commitment
from shoparena.cli import app
from tests.arena.competition.race_helpers import by_miner

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def as_json(result):
    assert result.exit_code == 0, result.output
    return orjson.loads(result.output)


def test_a_race_by_hand_and_its_draw_recomputed(racing):
    a, b, _ = racing.miners
    for miner in (a, b):
        racing.submit(miner)
    racing.drain()
    arena_dir = racing.arena.dir

    status = invoke("arena", "race", "status", "--dir", arena_dir)
    assert status.exit_code == 0 and "no race yet" in status.output
    refused = invoke("arena", "race", "start", "--dir", arena_dir)
    assert refused.exit_code == 1 and "open one first" in refused.output

    opened = as_json(invoke("arena", "race", "open", "--dir", arena_dir, "--json"))
    assert opened["state"] == "QUALIFYING_OPEN" and opened["seed"] is None and opened["problem_ids"] is None
    early = invoke("arena", "race-problems", "--dir", arena_dir, "--race", opened["race_id"])
    assert early.exit_code == 1 and "revealed when it closes" in early.output
    assert as_json(invoke("arena", "race", "start", "--dir", arena_dir, "--json"))["state"] == "RACE_RUNNING"
    none_yet = invoke("arena", "weights", "--dir", arena_dir)
    assert none_yet.exit_code == 1 and "no weights yet" in none_yet.output

    racing.drain(outcome=by_miner({a.hotkey: 1.0, b.hotkey: 0.5}))
    closed = as_json(invoke("arena", "race", "close", "--dir", arena_dir, "--json"))
    assert closed["state"] == "RACE_COMPLETE" and closed["winner"] == a.hotkey
    assert seed_commitment(closed["seed"]) == closed["seed_commitment"] == opened["seed_commitment"]

    check = as_json(
        invoke("arena", "race-problems", "--dir", arena_dir, "--race", closed["race_id"], "--json")
    )
    assert check["matches"] is True and check["recomputed"] == check["raced"] == closed["problem_ids"]
    text = invoke("arena", "race-problems", "--dir", arena_dir, "--race", closed["race_id"])
    assert text.exit_code == 0 and "matches the problems raced" in text.output
    unknown = invoke("arena", "race-problems", "--dir", arena_dir, "--race", "race-99999")
    assert unknown.exit_code == 1 and "no race race-99999" in unknown.output

    weights = as_json(invoke("arena", "weights", "--dir", arena_dir, "--json"))
    assert weights["race_id"] == closed["race_id"] and sum(weights["weights"]) == pytest.approx(1.0)
    chain = LocalChain(arena_dir)
    assert [entry.uids for entry in chain.history()] == [weights["uids"]]  # pushed at close
    pushed = as_json(invoke("arena", "weights", "--dir", arena_dir, "--json", "--push"))
    assert pushed["pushed"] is True and len(chain.history()) == 2
    assert as_json(invoke("arena", "race", "tick", "--dir", arena_dir, "--json")) == {"done": []}
    listed = as_json(invoke("arena", "race", "status", "--dir", arena_dir, "--json"))
    assert [race["race_id"] for race in listed] == [closed["race_id"]]
    shown = invoke("arena", "race", "status", "--dir", arena_dir)
    assert "RACE_COMPLETE" in shown.output and closed["seed"] in shown.output
