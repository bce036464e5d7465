"""A recording stand-in for the classic `bittensor.Subtensor` (SDK 9/10): the calls the chain adapter
makes, answered the way the chain answers them, with no network.

It keeps the commit-reveal rules that matter to the adapter: a reveal must carry exactly the uids,
values and salt of an earlier commit (the fake hashes them as the chain does — over what was sent),
and it is refused until the reveal epoch (`advance_epoch`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Response:
    """Shaped like SDK 10's `ExtrinsicResponse`."""

    success: bool
    message: str = ""


@dataclass
class FakeMetagraph:
    hotkeys: list[str]
    uids: np.ndarray
    S: np.ndarray
    validator_permit: np.ndarray | None


@dataclass
class FakeSubtensor:
    neurons: list[tuple[int, str, float, bool]] = field(default_factory=list)
    """(uid, hotkey, stake, validator_permit) rows of the subnet."""
    commit_reveal: bool = False
    answer: Any = None
    """What `set_weights` answers (default: success)."""
    calls: list[tuple[str, dict]] = field(default_factory=list)
    commits: dict[str, str] = field(default_factory=dict)
    reveal_open: bool = False
    revealed: list[dict] = field(default_factory=list)
    permits: bool = True
    """False: the metagraph has no validator_permit column."""

    def _record(self, name: str, **kwargs) -> None:
        self.calls.append((name, kwargs))

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def metagraph(self, netuid: int, **kwargs) -> FakeMetagraph:
        self._record("metagraph", netuid=netuid, **kwargs)
        return FakeMetagraph(
            hotkeys=[hotkey for _, hotkey, _, _ in self.neurons],
            uids=np.array([uid for uid, _, _, _ in self.neurons], dtype=np.int64),
            S=np.array([stake for _, _, stake, _ in self.neurons], dtype=np.float32),
            validator_permit=np.array([permit for *_, permit in self.neurons], dtype=bool)
            if self.permits
            else None,
        )

    def commit_reveal_enabled(self, netuid: int, block: int | None = None) -> bool:
        self._record("commit_reveal_enabled", netuid=netuid)
        return self.commit_reveal

    def set_weights(self, **kwargs) -> Any:
        self._record("set_weights", **kwargs)
        return Response(True, "included") if self.answer is None else self.answer

    @staticmethod
    def _hash(hotkey: str, netuid: int, uids, values, salt, version_key) -> str:
        blob = json.dumps([hotkey, netuid, list(uids), list(values), list(salt), version_key])
        return hashlib.blake2b(blob.encode(), digest_size=32).hexdigest()

    def commit_weights(self, *, wallet, netuid, salt, uids, weights, version_key=0, **kwargs) -> Response:
        self._record(
            "commit_weights", wallet=wallet, netuid=netuid, salt=salt, uids=uids, weights=weights, **kwargs
        )
        digest = self._hash(wallet.hotkey.ss58_address, netuid, uids, weights, salt, version_key)
        self.commits[digest] = "committed"
        return Response(True, "committed")

    def reveal_weights(self, *, wallet, netuid, uids, weights, salt, version_key=0, **kwargs) -> Response:
        self._record(
            "reveal_weights", wallet=wallet, netuid=netuid, uids=uids, weights=weights, salt=salt, **kwargs
        )
        digest = self._hash(wallet.hotkey.ss58_address, netuid, uids, weights, salt, version_key)
        if digest not in self.commits:
            return Response(False, "InvalidRevealCommitHashNotMatch")
        if not self.reveal_open:
            return Response(False, "RevealTooEarly")
        del self.commits[digest]
        self.revealed.append({"uids": list(uids), "weights": list(weights)})
        return Response(True, "revealed")


@dataclass
class FakeHotkey:
    ss58_address: str


@dataclass
class FakeWallet:
    hotkey: FakeHotkey
