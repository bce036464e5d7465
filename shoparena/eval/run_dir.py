"""The run directory: its files, its lock, and reading and writing each of them.

`run.json` (the `RunConfig`, so a resume under a different configuration is refused),
`trajectories.jsonl` (one `TrajectoryRecord` per finished episode, appended and flushed by the parent
only; an episode re-run with `--retry-errors` appends a second record of its (problem, sample), and
the newest record of a pair is the one that counts — the earlier stays, superseded), `metrics.json`,
and `run.lock`, which an eval holds for as long as it runs: two evals appending
to one trajectories file would interleave records of two run ids.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, Field, ValidationError

from shoparena.agents.base import RunnerError
from shoparena.eval.config import RunConfig
from shoparena.records.score import ScoreSummary
from shoparena.records.trajectory import TrajectoryRecord, invalid_record_reason
from shoparena.records.verdict import JudgeVerdict

TRAJECTORIES_FILE = "trajectories.jsonl"
METRICS_FILE = "metrics.json"
RUN_FILE = "run.json"
LOCK_FILE = "run.lock"


class RunLock:
    """An exclusive `flock` on `run.lock`, holding the owner's pid (for the message another eval gets).

    The kernel drops the lock when the holder exits, however it exits, so a crashed run never leaves
    its directory locked (the file it leaves locks nothing). A run that ends removes the file while it
    still holds the lock; an acquirer that locked a file since removed (it opened it just before) sees
    the path no longer names what it locked, and tries again on the new file.
    """

    def __init__(self, run_dir: Path):
        self.path = run_dir / LOCK_FILE
        self.fd: int | None = None

    def acquire(self) -> RunLock:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                raise RunnerError(
                    f"run directory {self.path.parent} is in use by pid {holder} (another eval is writing "
                    "to it); wait for that run to finish, or use another --out"
                ) from None
            try:
                current = os.stat(self.path).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(fd).st_ino:
                break
            os.close(fd)  # the holder removed it as we opened it: lock the file there now
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd
        return self

    def release(self) -> None:
        """Remove the lock file, then unlock (closing the descriptor releases the lock)."""
        if self.fd is not None:
            self.path.unlink(missing_ok=True)
            os.close(self.fd)
            self.fd = None


# -- run.json -------------------------------------------------------------------------------------


def load_run_config(run_dir: Path) -> RunConfig | None:
    path = run_dir / RUN_FILE
    if not path.exists():
        return None
    try:
        return RunConfig.model_validate(orjson.loads(path.read_bytes()))
    except (orjson.JSONDecodeError, ValidationError) as exc:
        raise RunnerError(f"{path} is not a shoparena run file: {str(exc).splitlines()[0]}") from exc


def write_run_config(run_dir: Path, config: RunConfig) -> None:
    _replace(run_dir / RUN_FILE, orjson.dumps(config.model_dump(mode="json"), option=orjson.OPT_INDENT_2))


def write_metrics(run_dir: Path, metrics: dict[str, Any]) -> Path:
    path = run_dir / METRICS_FILE
    _replace(path, orjson.dumps(metrics, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    return path


def _replace(path: Path, data: bytes) -> None:
    """Write whole or not at all: a reader never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


# -- trajectories.jsonl ---------------------------------------------------------------------------


class TrajectoryLog(BaseModel):
    """What `read_trajectories` found: the good records and what was wrong with the file."""

    records: list[TrajectoryRecord]
    """The newest record of each (problem, sample), in the order the pairs first appear."""
    truncated_tail: bool = False
    """The last line was cut short (an interrupted write); repaired when read with `repair=True`."""
    attempts: dict[tuple[str, int], int] = Field(default_factory=dict)
    """How many records each (problem, sample) has: more than one where an episode was re-run."""

    @property
    def superseded(self) -> int:
        """Records replaced by a newer one of the same (problem, sample) (kept in the file, not counted)."""
        return sum(self.attempts.values()) - len(self.attempts)


def read_trajectories(path: Path, repair: bool = False) -> TrajectoryLog:
    """The newest record of each (problem, sample) of a trajectories file; a bad last line is an
    interrupted write, any other bad line is corruption and stops with its line number (dropping it
    silently would lose data)."""
    if not path.exists():
        return TrajectoryLog(records=[])
    data = path.read_bytes()
    lines = data.split(b"\n")
    ends_clean = data.endswith(b"\n") or not data
    newest: dict[tuple[str, int], TrajectoryRecord] = {}
    attempts: dict[tuple[str, int], int] = {}
    good_bytes = 0
    truncated = False
    body = lines[:-1] if ends_clean else lines
    for number, raw in enumerate(body, start=1):
        last = number == len(body)
        if not raw.strip():
            good_bytes += len(raw) + 1
            continue
        try:
            record = TrajectoryRecord.model_validate(orjson.loads(raw))
        except (orjson.JSONDecodeError, ValidationError) as exc:
            if last:
                truncated = True
                break
            raise RunnerError(
                f"{path}:{number}: {invalid_record_reason(exc)}; only the last line may be cut short by "
                "an interrupted run — move the file aside or fix the line"
            ) from exc
        if not ends_clean and last:
            truncated = True  # parsed, but its newline never made it: rewrite it whole
            break
        good_bytes += len(raw) + 1
        newest[record.key] = record
        attempts[record.key] = attempts.get(record.key, 0) + 1
    if truncated and repair:
        with path.open("r+b") as handle:
            handle.truncate(good_bytes)
    return TrajectoryLog(records=list(newest.values()), truncated_tail=truncated, attempts=attempts)


def complete_line(body: bytes, score: ScoreSummary, judge: JudgeVerdict | None) -> bytes:
    """A worker's record JSON (`{...}` without score and judge) completed into one JSONL line: the
    runner's layout, with score and judge last."""
    verdict = orjson.dumps(judge.model_dump(mode="json")) if judge is not None else b"null"
    return (
        body[:-1]
        + b',"score":'
        + orjson.dumps(score.model_dump(mode="json"))
        + b',"judge":'
        + verdict
        + b"}\n"
    )


class TrajectoryWriter:
    """The single appender: one JSON line per record, flushed so a crash loses at most the line in flight."""

    def __init__(self, path: Path):
        self.handle = path.open("ab")

    def write_line(self, line: bytes) -> None:
        self.handle.write(line)
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()
