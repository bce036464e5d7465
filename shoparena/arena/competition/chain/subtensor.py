"""Weights on a Bittensor subnet through an injected `bittensor.Subtensor` (the `[chain]` extra).

The adapter never imports the SDK: the caller hands it a subtensor (and, to set weights, a wallet),
so the same code runs against the real network and against a recording fake in the tests.

- `sync_metagraph` reads the subnet's metagraph (hotkeys, uids, total stake, validator permits) and,
  given the arena's `Metagraph`, registers every neuron there (validators = a validator permit, else
  miners; `source="chain"`) and removes chain-sourced neurons that left the subnet.
- `set_weights` converts the vector to u16 exactly as the SDK does (`u16.py`) and pushes it:
  directly with `subtensor.set_weights(...)` when the subnet's `CommitRevealWeightsEnabled`
  hyperparameter is off; with commit-reveal when it is on — `commit_weights` (the SDK hashes the
  u16 values with a random salt) now, `reveal_weights` with the same values and salt once the chain
  accepts the reveal (`reveal_pending`, tried again before every later push). With
  `commit_reveal="sdk"` the commit-reveal is left to the SDK's own `set_weights` (SDK 10 commits
  drand-timelocked weights itself). Every action is appended to `ARENA/chain/weights.jsonl`; the
  salt of a commit lives there until its reveal.
"""

from __future__ import annotations

import math
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from shoparena.arena.auth.keys import canonical_hotkey
from shoparena.arena.auth.metagraph import Metagraph
from shoparena.arena.competition.chain.base import ChainReceipt
from shoparena.arena.competition.chain.ledger import LEDGER_FILE, LedgerEntry, WeightLedger
from shoparena.arena.competition.chain.u16 import U16_MAX, to_u16
from shoparena.arena.competition.models import WeightVector
from shoparena.arena.errors import ArenaError
from shoparena.arena.models import NeuronInfo

SALT_LENGTH = 8


class ChainError(ArenaError):
    """The subnet answered something the adapter cannot use."""


class Outcome(BaseModel):
    """A subtensor call's answer, whichever SDK shape it came in."""

    success: bool
    message: str = ""


class SyncReject(BaseModel):
    uid: int | None
    hotkey: str
    reason: str


def outcome(response: Any) -> Outcome:
    """SDK ≥ 10 answers an `ExtrinsicResponse` (`.success`, `.message`); older ones `(bool, str)` or a
    bare bool."""
    if isinstance(response, tuple):
        return Outcome(success=bool(response[0]), message=str(response[1]) if len(response) > 1 else "")
    if hasattr(response, "success"):
        return Outcome(success=bool(response.success), message=str(getattr(response, "message", "") or ""))
    return Outcome(success=bool(response))


def _as_list(values: Any) -> list:
    """numpy arrays and torch tensors (`.tolist()`) or plain sequences."""
    return values.tolist() if hasattr(values, "tolist") else list(values)


class BittensorChain:
    """`BittensorChain(subtensor, wallet, netuid, arena_dir, metagraph=arena.metagraph)`."""

    def __init__(
        self,
        subtensor: Any,
        wallet: Any | None,
        netuid: int,
        arena_dir: str | os.PathLike,
        *,
        metagraph: Metagraph | None = None,
        wait_for_inclusion: bool = True,
        wait_for_finalization: bool = False,
        version_key: int | None = None,
        commit_reveal: Literal["hash", "sdk"] = "hash",
    ):
        if netuid < 0:
            raise ChainError(f"netuid {netuid} must be ≥ 0")
        self.subtensor = subtensor
        self.wallet = wallet
        self.netuid = netuid
        self.metagraph = metagraph
        self.wait_for_inclusion = wait_for_inclusion
        self.wait_for_finalization = wait_for_finalization
        self.version_key = version_key
        self.commit_reveal = commit_reveal
        self.ledger = WeightLedger(Path(arena_dir) / LEDGER_FILE)
        self.rejected: list[SyncReject] = []
        """Neurons the last `sync_metagraph` could not take (e.g. a hotkey that is not SS58)."""

    @property
    def name(self) -> str:
        return f"bittensor:{self.netuid}"

    # -- metagraph ---------------------------------------------------------------------------------

    def sync_metagraph(self) -> list[NeuronInfo]:
        graph = self.subtensor.metagraph(netuid=self.netuid)
        hotkeys = _as_list(graph.hotkeys)
        uids = [int(u) for u in _as_list(graph.uids)]
        stakes = [float(s) for s in _as_list(graph.S)]
        # A metagraph without permits (a minimal or older one): stake is what makes a validator.
        permits = (
            [bool(p) for p in _as_list(graph.validator_permit)]
            if getattr(graph, "validator_permit", None) is not None
            else [s > 0 for s in stakes]
        )
        if not len(hotkeys) == len(uids) == len(stakes) == len(permits):
            raise ChainError(
                f"subnet {self.netuid}: metagraph columns differ in length (hotkeys {len(hotkeys)}, "
                f"uids {len(uids)}, stake {len(stakes)}, validator_permit {len(permits)})"
            )
        self.rejected = []
        neurons: list[NeuronInfo] = []
        for hotkey, uid, stake, permit in zip(hotkeys, uids, stakes, permits, strict=True):
            try:
                canonical_hotkey(str(hotkey))
                if not math.isfinite(stake):
                    raise ValueError(f"stake {stake} is not a finite number")
            except ValueError as exc:
                self.rejected.append(SyncReject(uid=uid, hotkey=str(hotkey), reason=str(exc)))
                continue
            role = "validator" if permit else "miner"
            if self.metagraph is not None:
                try:
                    neurons.append(
                        self.metagraph.register(hotkey, role, max(stake, 0.0), uid=uid, source="chain")
                    )
                except ArenaError as exc:  # the burn uid without a validator permit: never a miner
                    self.rejected.append(SyncReject(uid=uid, hotkey=str(hotkey), reason=str(exc)))
            else:
                neurons.append(self._neuron(hotkey, role, stake, uid))
        if self.metagraph is not None:
            present = {n.hotkey for n in neurons}
            for known in self.metagraph.all():
                if known.source == "chain" and known.hotkey not in present:
                    self.metagraph.remove(known.hotkey)
        return neurons

    @staticmethod
    def _neuron(hotkey: str, role: str, stake: float, uid: int) -> NeuronInfo:
        return NeuronInfo(
            hotkey=hotkey,
            role=role,
            stake=max(stake, 0.0),
            uid=uid,
            source="chain",
            updated_at=datetime.now(UTC),
        )

    # -- weights -----------------------------------------------------------------------------------

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {
            "wait_for_inclusion": self.wait_for_inclusion,
            "wait_for_finalization": self.wait_for_finalization,
        }
        if self.version_key is not None:
            options["version_key"] = self.version_key
        return options

    def _wallet(self) -> Any:
        if self.wallet is None:
            raise ChainError("setting weights needs a wallet (its hotkey signs the extrinsic)")
        return self.wallet

    def uses_commit_reveal(self) -> bool:
        """The subnet's `CommitRevealWeightsEnabled` hyperparameter, read now."""
        return bool(self.subtensor.commit_reveal_enabled(netuid=self.netuid))

    def set_weights(self, vector: WeightVector) -> ChainReceipt:
        """Push `vector` (see the module docstring); the receipt's `success` is the chain's answer."""
        wallet = self._wallet()
        u16 = to_u16(vector.uids, vector.weights)
        if not u16.uids:
            raise ChainError(f"race {vector.race_id}: all weights are zero, nothing to set")
        self.reveal_pending()
        if self.commit_reveal == "hash" and self.uses_commit_reveal():
            salt = [secrets.randbelow(U16_MAX + 1) for _ in range(SALT_LENGTH)]
            answer = outcome(
                self.subtensor.commit_weights(
                    wallet=wallet,
                    netuid=self.netuid,
                    salt=salt,
                    uids=u16.uids,
                    weights=u16.values,
                    **self._options(),
                )
            )
            entry = self._record(vector, "commit", answer, salt=salt, version_key=self.version_key)
        else:
            answer = outcome(
                self.subtensor.set_weights(
                    wallet=wallet, netuid=self.netuid, uids=u16.uids, weights=u16.values, **self._options()
                )
            )
            entry = self._record(vector, "set_weights", answer)
        return ChainReceipt.of(entry)

    def pending_commits(self) -> list[LedgerEntry]:
        """This subnet's successful commits with no successful reveal yet, oldest first."""
        entries = [e for e in self.ledger.entries() if e.chain == self.name]
        revealed = {e.commit_seq for e in entries if e.action == "reveal" and e.success}
        return [e for e in entries if e.action == "commit" and e.success and e.seq not in revealed]

    def reveal_pending(self) -> list[ChainReceipt]:
        """Reveal every pending commit with its recorded values and salt. A reveal the chain refuses
        (too early, or the commit expired) is recorded as failed and tried again next time."""
        wallet = self._wallet()
        receipts = []
        for commit in self.pending_commits():
            options = self._options()
            if commit.version_key is not None:
                options["version_key"] = commit.version_key
            answer = outcome(
                self.subtensor.reveal_weights(
                    wallet=wallet,
                    netuid=self.netuid,
                    uids=commit.u16_uids,
                    weights=commit.u16_values,
                    salt=commit.salt,
                    **options,
                )
            )
            entry = self._record(commit.vector(), "reveal", answer, commit_seq=commit.seq)
            receipts.append(ChainReceipt.of(entry))
        return receipts

    def _record(self, vector: WeightVector, action, answer: Outcome, **extra) -> LedgerEntry:
        return self.ledger.append(
            vector,
            chain=self.name,
            action=action,
            success=answer.success,
            message=answer.message,
            netuid=self.netuid,
            **extra,
        )
