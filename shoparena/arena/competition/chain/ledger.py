"""The append-only weights ledger `ARENA/chain/weights.jsonl`: one line per weight-setting action.

Every push of a weight vector — to the local chain, to a subnet, a commit or its reveal — appends one
line and never rewrites one, so the file is the arena's history of what it paid and when. Reading it
back validates every line (shape, the vector's invariants, the u16 values recomputed from the
weights, the sequence numbers) and names the first bad line, so a hand-edited or torn ledger is
caught rather than believed.
"""

from __future__ import annotations

import fcntl
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from shoparena.arena.competition.chain.u16 import to_u16
from shoparena.arena.competition.models import WeightVector

LEDGER_SCHEMA = "shoparena.chain-weights/1"
LEDGER_FILE = Path("chain") / "weights.jsonl"
Action = Literal["set", "set_weights", "commit", "reveal"]


class ChainLedgerError(ValueError):
    """A ledger line is not a valid entry (the message names the file and the line)."""


class LedgerEntry(BaseModel):
    """One line of the ledger.

    `action`: `set` (the local chain), `set_weights` (a subnet's direct weights), `commit` (a
    commit-reveal hash; `salt` kept for the reveal) or `reveal` (of the commit at `commit_seq`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal["shoparena.chain-weights/1"] = Field(default=LEDGER_SCHEMA, alias="schema")
    seq: int = Field(ge=0)
    at: datetime
    chain: str
    action: Action
    race_id: str | None
    source: Literal["race", "consensus", "validator"]
    uids: list[int]
    weights: list[float]
    u16_uids: list[int]
    u16_values: list[int]
    success: bool = True
    message: str = ""
    netuid: int | None = None
    salt: list[int] | None = None
    version_key: int | None = None
    commit_seq: int | None = None

    @model_validator(mode="after")
    def _consistent(self) -> LedgerEntry:
        WeightVector(race_id=self.race_id, uids=self.uids, weights=self.weights, source=self.source)
        expected = to_u16(self.uids, self.weights)
        if (self.u16_uids, self.u16_values) != (expected.uids, expected.values):
            raise ValueError("u16_uids/u16_values are not the u16 conversion of uids/weights")
        if self.at.tzinfo is None:
            raise ValueError("at must be timezone-aware")
        if self.action == "commit" and not self.salt:
            raise ValueError("a commit entry keeps its salt (the reveal needs it)")
        if self.action == "reveal" and self.commit_seq is None:
            raise ValueError("a reveal entry names its commit (commit_seq)")
        return self

    def vector(self) -> WeightVector:
        return WeightVector(race_id=self.race_id, uids=self.uids, weights=self.weights, source=self.source)


class WeightLedger:
    """The JSONL file, appended under an exclusive lock (several processes may push)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def append(
        self,
        vector: WeightVector,
        *,
        chain: str,
        action: Action,
        success: bool = True,
        message: str = "",
        at: datetime | None = None,
        **extra,
    ) -> LedgerEntry:
        """Append one entry for `vector` (its u16 values computed here) and return it."""
        u16 = to_u16(vector.uids, vector.weights)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with open(self.path, "rb") as existing:
                data = existing.read()
            if data and not data.endswith(b"\n"):
                raise ChainLedgerError(
                    f"{self.path}: the last line is torn (no newline); repair the file before appending"
                )
            entry = LedgerEntry(
                seq=data.count(b"\n"),
                at=at or datetime.now(UTC),
                chain=chain,
                action=action,
                race_id=vector.race_id,
                source=vector.source,
                uids=vector.uids,
                weights=vector.weights,
                u16_uids=u16.uids,
                u16_values=u16.values,
                success=success,
                message=message,
                **extra,
            )
            os.write(fd, (entry.model_dump_json(by_alias=True) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return entry

    def entries(self) -> list[LedgerEntry]:
        """Every entry, validated; a missing file is an empty ledger."""
        if not self.path.exists():
            return []
        entries: list[LedgerEntry] = []
        with open(self.path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                where = f"{self.path}:{number}"
                if not line.endswith("\n"):
                    raise ChainLedgerError(f"{where}: torn line (no newline at the end)")
                try:
                    entry = LedgerEntry.model_validate_json(line)
                except ValidationError as exc:
                    problems = "; ".join(
                        f"{'.'.join(map(str, e['loc'])) or 'line'}: {e['msg']}" for e in exc.errors()
                    )
                    raise ChainLedgerError(f"{where}: not a ledger entry ({problems})") from None
                if entry.seq != number - 1:
                    raise ChainLedgerError(
                        f"{where}: seq {entry.seq}, expected {number - 1} (lines reordered or lost)"
                    )
                entries.append(entry)
        return entries
