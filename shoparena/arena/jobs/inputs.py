"""What every job shares: the arena's problem bank and its catalogue, read once and kept while their
files stay the same (a claim needs both, and re-reading the bank per claim would cost more than the
claim).

The bank is checked against the hash `arena init` kept: a bank changed under a running arena would
have validators score against other rewards, so it is refused until the operator restores it.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from shoparena.arena.config import ArenaConfig
from shoparena.arena.errors import JobRefused
from shoparena.problems.io import parse_problems
from shoparena.problems.models import Problem


@dataclass(frozen=True)
class Bank:
    """The arena's problem bank as read from its file, checked against the hash `arena init` kept."""

    problems: list[Problem]
    sha256: str
    suite: str | None
    suite_version: str | None
    stamp: tuple[int, int]


def common(values: Iterable[str | None]) -> str | None:
    """The one value all of `values` share, else None (how a problem list names its suite)."""
    found = set(values)
    return found.pop() if len(found) == 1 else None


class SharedInputs:
    """The problem bank and the catalogue fingerprint of one arena, cached (thread-safe)."""

    def __init__(self, config: ArenaConfig):
        self.config = config
        self._lock = threading.Lock()
        self._bank: Bank | None = None
        self._fingerprint: str | None = None

    def bank(self) -> Bank:
        """The problem bank, re-read when its file changes, refused when it is no longer the one the
        arena was made with (validators would score against other rewards)."""
        path = Path(self.config.problems)
        try:
            stat = path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
            with self._lock:
                if self._bank is not None and self._bank.stamp == stamp:
                    return self._bank
            data = path.read_bytes()
        except OSError as exc:
            raise JobRefused(
                503,
                "bank_unavailable",
                f"the arena cannot read its problem bank {path}: {exc.strerror or exc}",
            ) from None
        sha256 = hashlib.sha256(data).hexdigest()
        if sha256 != self.config.problems_sha256:
            raise JobRefused(
                503,
                "bank_changed",
                f"the problem bank {path} changed since `arena init` (sha256 {sha256[:12]}…, the arena's "
                f"{self.config.problems_sha256[:12]}…); the operator must restore it or make a new arena",
            )
        problems = parse_problems(data, str(path), strict=True).problems
        settings = self.config.evaluation
        bank = Bank(
            problems=problems,
            sha256=sha256,
            suite=settings.suite or common(p.suite for p in problems) or path.stem,
            suite_version=settings.suite_version or common(p.suite_version for p in problems) or sha256[:16],
            stamp=stamp,
        )
        with self._lock:
            self._bank = bank
        return bank

    def fingerprint(self) -> str:
        """The arena's catalogue as `catalog_fingerprint` names it: validators must hold the same one."""
        with self._lock:
            if self._fingerprint is not None:
                return self._fingerprint
        from shoparena.agents.base import RunnerError
        from shoparena.eval.runner import catalog_fingerprint

        try:
            fingerprint = catalog_fingerprint(Path(self.config.catalog))
        except RunnerError as exc:
            raise JobRefused(503, "catalog_unavailable", f"the arena's catalogue: {exc}") from None
        with self._lock:
            self._fingerprint = fingerprint
        return fingerprint
