"""`shoparena arena chain sync|history` on a real arena directory (the subnet side through the fake
subtensor, injected where the command connects)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from shoparena.arena import open_arena
from shoparena.arena.auth.keys import new_key_file
from shoparena.arena.competition.chain import LocalChain
from shoparena.arena.competition.models import WeightVector
from shoparena.cli import app, arena_chain_cmd
from tests.arena.competition.fake_subtensor import FakeSubtensor

runner = CliRunner()
VECTOR = WeightVector(race_id="race-3", uids=[0, 4], weights=[0.75, 0.25])


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def arena_dir(arena):
    return arena.dir


def test_history_lists_the_ledger(arena_dir) -> None:
    empty = invoke("arena", "chain", "history", "--dir", arena_dir)
    assert empty.exit_code == 0 and "no weights pushed yet" in empty.output
    LocalChain(arena_dir).set_weights(VECTOR)
    LocalChain(arena_dir).set_weights(VECTOR.model_copy(update={"race_id": "race-4"}))
    table = invoke("arena", "chain", "history", "--dir", arena_dir)
    assert table.exit_code == 0, table.output
    assert "race-3" in table.output and "race-4" in table.output and "0.7500" in table.output
    as_json = invoke("arena", "chain", "history", "--dir", arena_dir, "--json")
    entries = json.loads(as_json.stdout)
    assert [(e["seq"], e["race_id"], e["u16_values"]) for e in entries] == [
        (0, "race-3", [65535, 21845]),
        (1, "race-4", [65535, 21845]),
    ]


def test_history_names_a_damaged_line(arena_dir) -> None:
    LocalChain(arena_dir).set_weights(VECTOR)
    path = arena_dir / "chain" / "weights.jsonl"
    path.write_text(path.read_text() + "garbage\n")
    result = invoke("arena", "chain", "history", "--dir", arena_dir)
    assert result.exit_code == 1
    assert "weights.jsonl:2" in result.output and "not a ledger entry" in result.output


def test_history_refuses_a_directory_that_is_no_arena(tmp_path) -> None:
    result = invoke("arena", "chain", "history", "--dir", tmp_path)
    assert result.exit_code == 2 and "not an arena directory" in result.output


def test_sync_without_netuid_lists_the_local_metagraph(arena_dir, miner, validator) -> None:
    result = invoke("arena", "chain", "sync", "--dir", arena_dir, "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["chain"] == "local" and answer["rejected"] == []
    roles = {n["hotkey"]: n["role"] for n in answer["neurons"]}
    assert roles[miner.hotkey] == "miner" and roles[validator.hotkey] == "validator"


def test_sync_with_netuid_reads_the_subnet_into_the_arena(arena_dir, monkeypatch) -> None:
    validator, miner = new_key_file().ss58_address, new_key_file().ss58_address
    subtensor = FakeSubtensor(
        neurons=[(0, validator, 900.0, True), (5, miner, 1.0, False), (6, "0xbad", 0.0, False)]
    )
    networks = []
    monkeypatch.setattr(
        arena_chain_cmd, "connect_subtensor", lambda network: networks.append(network) or subtensor
    )
    result = invoke("arena", "chain", "sync", "--dir", arena_dir, "--netuid", 21, "--network", "test")
    assert result.exit_code == 0, result.output
    assert networks == ["test"] and subtensor.calls == [("metagraph", {"netuid": 21})]
    assert "skipped uid 6" in result.output and "synced from subnet 21" in result.output
    with open_arena(arena_dir) as arena:
        synced = {n.hotkey: (n.role, n.uid, n.stake, n.source) for n in arena.metagraph.all()}
    assert synced[validator] == ("validator", 0, 900.0, "chain")
    assert synced[miner] == ("miner", 5, 1.0, "chain")
