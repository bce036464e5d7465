"""The Bittensor adapter against a recording fake subtensor: metagraph sync into the arena, the u16
values pushed, wait_for_inclusion, and the commit-then-reveal path. No network."""

from __future__ import annotations

import pytest

from shoparena.arena.auth.keys import new_key_file
from shoparena.arena.competition.chain import BittensorChain, ChainError, LocalChain
from shoparena.arena.competition.models import WeightVector
from tests.arena.competition.fake_subtensor import FakeHotkey, FakeSubtensor, FakeWallet

VECTOR = WeightVector(race_id="race-7", uids=[0, 3, 5, 9], weights=[0.5, 0.25, 0.125, 0.125])
U16 = ([0, 3, 5, 9], [65535, 32768, 16384, 16384])


def hotkey() -> str:
    return new_key_file().ss58_address


@pytest.fixture
def wallet() -> FakeWallet:
    return FakeWallet(FakeHotkey(hotkey()))


def test_direct_set_weights_sends_the_u16_values_and_waits_for_inclusion(tmp_path, wallet) -> None:
    subtensor = FakeSubtensor()
    chain = BittensorChain(subtensor, wallet, netuid=7, arena_dir=tmp_path)
    receipt = chain.set_weights(VECTOR)
    assert chain.name == "bittensor:7"
    assert subtensor.names() == ["commit_reveal_enabled", "set_weights"]
    assert subtensor.calls[1][1] == {
        "wallet": wallet,
        "netuid": 7,
        "uids": U16[0],
        "weights": U16[1],
        "wait_for_inclusion": True,
        "wait_for_finalization": False,
    }
    assert (receipt.action, receipt.success, receipt.message, receipt.netuid) == (
        "set_weights",
        True,
        "included",
        7,
    )
    assert (receipt.u16_uids, receipt.u16_values) == U16
    # The push is in the same ledger `arena chain history` reads.
    (entry,) = LocalChain(tmp_path).history()
    assert (entry.chain, entry.action, entry.race_id, entry.u16_values) == (
        "bittensor:7",
        "set_weights",
        "race-7",
        U16[1],
    )


def test_version_key_and_finalization_are_passed_through(tmp_path, wallet) -> None:
    subtensor = FakeSubtensor()
    chain = BittensorChain(
        subtensor, wallet, 3, tmp_path, version_key=2001, wait_for_inclusion=False, wait_for_finalization=True
    )
    chain.set_weights(VECTOR)
    sent = subtensor.calls[-1][1]
    assert (sent["version_key"], sent["wait_for_inclusion"], sent["wait_for_finalization"]) == (
        2001,
        False,
        True,
    )


def test_a_refusal_is_recorded_not_hidden(tmp_path, wallet) -> None:
    subtensor = FakeSubtensor(answer=(False, "SettingWeightsTooFast"))  # the older SDKs' tuple answer
    receipt = BittensorChain(subtensor, wallet, 7, tmp_path).set_weights(VECTOR)
    assert (receipt.success, receipt.message) == (False, "SettingWeightsTooFast")
    (entry,) = LocalChain(tmp_path).history()
    assert entry.success is False and entry.message == "SettingWeightsTooFast"


def test_commit_reveal_commits_a_salted_hash_then_reveals_the_same_values(tmp_path, wallet) -> None:
    subtensor = FakeSubtensor(commit_reveal=True)
    chain = BittensorChain(subtensor, wallet, 7, tmp_path)
    receipt = chain.set_weights(VECTOR)
    assert receipt.action == "commit" and receipt.success
    assert "set_weights" not in subtensor.names()
    commit = subtensor.calls[-1][1]
    assert (commit["uids"], commit["weights"], commit["netuid"]) == (*U16, 7)
    assert len(commit["salt"]) == 8 and all(0 <= s <= 65535 for s in commit["salt"])
    assert [e.seq for e in chain.pending_commits()] == [0]

    # Too early: the chain refuses, the refusal is recorded, the commit stays pending.
    (early,) = chain.reveal_pending()
    assert (early.action, early.success, early.message) == ("reveal", False, "RevealTooEarly")
    assert len(chain.pending_commits()) == 1

    subtensor.reveal_open = True
    (reveal,) = chain.reveal_pending()
    assert reveal.success and subtensor.revealed == [{"uids": U16[0], "weights": U16[1]}]
    sent = subtensor.calls[-1][1]
    assert sent["salt"] == commit["salt"] and sent["wallet"] is wallet
    assert chain.pending_commits() == []
    assert chain.reveal_pending() == []
    actions = [(e.action, e.success, e.commit_seq) for e in LocalChain(tmp_path).history()]
    assert actions == [("commit", True, None), ("reveal", False, 0), ("reveal", True, 0)]


def test_a_new_push_first_reveals_what_is_due(tmp_path, wallet) -> None:
    subtensor = FakeSubtensor(commit_reveal=True)
    chain = BittensorChain(subtensor, wallet, 7, tmp_path)
    chain.set_weights(VECTOR)
    subtensor.reveal_open = True
    # A second chain object over the same arena (a later process) finds the commit in the ledger.
    later = BittensorChain(subtensor, wallet, 7, tmp_path)
    later.set_weights(VECTOR.model_copy(update={"race_id": "race-8"}))
    assert subtensor.names()[-3:] == ["reveal_weights", "commit_reveal_enabled", "commit_weights"]
    assert [e.race_id for e in later.pending_commits()] == ["race-8"]


def test_sdk_mode_leaves_commit_reveal_to_the_sdk(tmp_path, wallet) -> None:
    subtensor = FakeSubtensor(commit_reveal=True)
    BittensorChain(subtensor, wallet, 7, tmp_path, commit_reveal="sdk").set_weights(VECTOR)
    assert subtensor.names() == ["set_weights"]


def test_setting_weights_needs_a_wallet_and_some_weight(tmp_path, wallet) -> None:
    with pytest.raises(ChainError, match="needs a wallet"):
        BittensorChain(FakeSubtensor(), None, 7, tmp_path).set_weights(VECTOR)
    with pytest.raises(ChainError, match="netuid -1"):
        BittensorChain(FakeSubtensor(), wallet, -1, tmp_path)


def test_sync_fills_the_arena_metagraph_and_drops_neurons_that_left(arena) -> None:
    local = {n.hotkey for n in arena.metagraph.all()}
    validator, miner_a, miner_b = hotkey(), hotkey(), hotkey()
    subtensor = FakeSubtensor(
        neurons=[
            (0, validator, 1200.5, True),
            (1, miner_a, 0.0, False),
            (2, "not-an-ss58", 3.0, False),
            (3, miner_b, 2.0, False),
        ]
    )
    chain = BittensorChain(subtensor, None, 11, arena.dir, metagraph=arena.metagraph)
    neurons = chain.sync_metagraph()
    assert subtensor.calls == [("metagraph", {"netuid": 11})]
    assert [(n.uid, n.role, n.stake, n.source) for n in neurons] == [
        (0, "validator", 1200.5, "chain"),
        (1, "miner", 0.0, "chain"),
        (3, "miner", 2.0, "chain"),
    ]
    assert [(r.uid, r.hotkey) for r in chain.rejected] == [(2, "not-an-ss58")]
    assert "SS58" in chain.rejected[0].reason
    assert arena.metagraph.get(validator).role == "validator"

    subtensor.neurons = [row for row in subtensor.neurons if row[1] != miner_a]
    chain.sync_metagraph()
    remaining = {n.hotkey for n in arena.metagraph.all()}
    assert miner_a not in remaining
    assert remaining == local | {validator, miner_b}  # hand-registered neurons stay


def test_sync_without_an_arena_metagraph_only_reports(tmp_path) -> None:
    key = hotkey()
    chain = BittensorChain(FakeSubtensor(neurons=[(4, key, 5.0, True)]), None, 1, tmp_path)
    (neuron,) = chain.sync_metagraph()
    assert (neuron.hotkey, neuron.uid, neuron.role, neuron.stake) == (key, 4, "validator", 5.0)


def test_sync_rejects_a_non_finite_stake_and_reads_stake_as_the_role_without_permits(tmp_path) -> None:
    good, bad, idle = hotkey(), hotkey(), hotkey()
    subtensor = FakeSubtensor(
        neurons=[(1, good, 7.0, True), (2, bad, float("nan"), False), (3, idle, 0.0, False)]
    )
    chain = BittensorChain(subtensor, None, 1, tmp_path)
    assert [n.hotkey for n in chain.sync_metagraph()] == [good, idle]
    assert [(r.uid, "stake nan" in r.reason) for r in chain.rejected] == [(2, True)]
    subtensor.permits = False
    assert [(n.uid, n.role) for n in chain.sync_metagraph()] == [(1, "validator"), (3, "miner")]


def test_sync_never_registers_a_miner_on_the_burn_uid(arena) -> None:
    owner, miner = hotkey(), hotkey()
    subtensor = FakeSubtensor(neurons=[(0, owner, 0.0, False), (1, miner, 0.0, False)])
    chain = BittensorChain(subtensor, None, 11, arena.dir, metagraph=arena.metagraph)
    assert [(n.uid, n.role) for n in chain.sync_metagraph()] == [(1, "miner")]
    assert [(r.uid, r.hotkey) for r in chain.rejected] == [(0, owner)]
    assert "burn uid" in chain.rejected[0].reason and arena.metagraph.get(owner) is None
