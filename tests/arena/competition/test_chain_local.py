"""The local chain: an append-only JSONL ledger that validates every line it reads back."""

from __future__ import annotations

import json
import threading

import pytest

from shoparena.arena.competition.chain import ChainLedgerError, LocalChain, WeightLedger, to_u16
from shoparena.arena.competition.models import WeightVector

VECTOR = WeightVector(race_id="race-1", uids=[0, 3, 5], weights=[0.5, 0.25, 0.25])


def test_set_weights_appends_one_line_per_push_and_history_reads_them_back(tmp_path) -> None:
    chain = LocalChain(tmp_path)
    first = chain.set_weights(VECTOR)
    second = chain.set_weights(VECTOR.model_copy(update={"race_id": "race-2"}))
    assert (first.chain, first.action, first.success, first.ledger_seq) == ("local", "set", True, 0)
    assert second.ledger_seq == 1
    assert (first.u16_uids, first.u16_values) == ([0, 3, 5], [65535, 32768, 32768])
    path = tmp_path / "chain" / "weights.jsonl"
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    line = json.loads(lines[0])
    assert line["schema"] == "shoparena.chain-weights/1"
    assert (line["race_id"], line["uids"], line["weights"], line["u16_values"]) == (
        "race-1",
        [0, 3, 5],
        [0.5, 0.25, 0.25],
        [65535, 32768, 32768],
    )
    history = chain.history()
    assert [e.race_id for e in history] == ["race-1", "race-2"]
    assert history[0].vector() == VECTOR


def test_appending_never_rewrites_earlier_lines(tmp_path) -> None:
    chain = LocalChain(tmp_path)
    chain.set_weights(VECTOR)
    before = (tmp_path / "chain" / "weights.jsonl").read_bytes()
    chain.set_weights(VECTOR)
    assert (tmp_path / "chain" / "weights.jsonl").read_bytes().startswith(before)


def test_a_tampered_line_is_named(tmp_path) -> None:
    chain = LocalChain(tmp_path)
    chain.set_weights(VECTOR)
    chain.set_weights(VECTOR)
    path = tmp_path / "chain" / "weights.jsonl"
    lines = path.read_text().splitlines()
    doctored = json.loads(lines[1])
    doctored["weights"] = [0.4, 0.35, 0.25]  # still sums to 1, but the u16 values no longer match
    path.write_text(lines[0] + "\n" + json.dumps(doctored) + "\n")
    with pytest.raises(ChainLedgerError, match=r"weights\.jsonl:2: .*u16"):
        chain.history()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda lines: [lines[0], "{not json"], r":2: not a ledger entry"),
        (lambda lines: [lines[1], lines[0]], r":1: seq 1, expected 0"),
        (lambda lines: [lines[0], lines[1].replace('"weights":[0.5', '"weights":[0.7')], r":2: .*sum"),
    ],
)
def test_broken_ledgers_are_refused_with_the_line(tmp_path, damage, message) -> None:
    chain = LocalChain(tmp_path)
    chain.set_weights(VECTOR)
    chain.set_weights(VECTOR)
    path = tmp_path / "chain" / "weights.jsonl"
    path.write_text("\n".join(damage(path.read_text().splitlines())) + "\n")
    with pytest.raises(ChainLedgerError, match=message):
        chain.history()


def test_a_torn_last_line_is_named_and_blocks_appends(tmp_path) -> None:
    chain = LocalChain(tmp_path)
    chain.set_weights(VECTOR)
    path = tmp_path / "chain" / "weights.jsonl"
    path.write_text(path.read_text() + '{"schema": "shoparena.chain-weights/1", "seq": 1')
    with pytest.raises(ChainLedgerError, match=r":2: torn line"):
        chain.history()
    with pytest.raises(ChainLedgerError, match="torn"):
        chain.set_weights(VECTOR)


def test_concurrent_appends_get_distinct_sequence_numbers(tmp_path) -> None:
    ledger = WeightLedger(tmp_path / "chain" / "weights.jsonl")
    threads = [
        threading.Thread(
            target=lambda: [ledger.append(VECTOR, chain="local", action="set") for _ in range(10)]
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [e.seq for e in ledger.entries()] == list(range(40))


def test_missing_ledger_is_empty_and_sync_reads_the_arena_metagraph(arena) -> None:
    chain = LocalChain(arena.dir, arena.metagraph)
    assert chain.history() == []
    neurons = chain.sync_metagraph()
    assert sorted(n.role for n in neurons) == ["miner", "miner", "validator"]
    assert LocalChain(arena.dir).sync_metagraph() == []


def test_u16_values_in_the_ledger_are_the_sdk_conversion(tmp_path) -> None:
    vector = WeightVector(race_id=None, uids=[0, 1, 2, 7], weights=[0.5, 0.25, 0.25 * 2 / 3, 0.25 / 3])
    receipt = LocalChain(tmp_path).set_weights(vector)
    expected = to_u16(vector.uids, vector.weights)
    assert (receipt.u16_uids, receipt.u16_values) == (expected.uids, expected.values)
    assert receipt.u16_values == [65535, 32768, 21845, 10922]
