"""The race bank (SPEC §6, issue 13 "Problem pools"): `ARENA/race_bank.jsonl`, the problems races and
qualifying runs are drawn from, generated on the arena's catalogue and only ever appended to.

Why a separate bank: the arena's own suite and every other formal suite are never-touch — never raced,
never in a corpus' train or eval — so the competition needs problems of its own. `add_to_bank` makes
them with the project's generator (`problems.generator.ProblemGenerator`) and keeps out every problem
in the same leak cluster as a never-touch one, using the corpus' leak-cluster guard
(`corpus.split.leak_clusters`: the reward-spec fingerprint, plus near-duplicate query text against the
never-touch queries), so a race can never test an agent on a formal suite's task in other words.

The file is one problem record per line (the ShoppingBench JSONL the rest of the project reads), each
carrying its `leak_cluster_id`. It holds no wall-clock field, so the same `add` commands give the same
bytes and the same `sha256`, which the rotation (`pools.rotation_at`) seeds its partition with. Because
the file only grows, any earlier bank is a prefix of it: `RaceBank.as_of(sha256)` recovers the bank a
rotation manifest was frozen on.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict, Field

from shoparena.arena.config import ArenaConfig, read_config
from shoparena.arena.errors import ArenaError
from shoparena.corpus.split import NeverTouch, ProblemEntry, leak_clusters
from shoparena.index.catalog_dir import CatalogDirError, open_catalog
from shoparena.problems.canonical import with_leak_clusters
from shoparena.problems.generator import GENERATED_BUCKETS, GenerationError, ProblemGenerator
from shoparena.problems.io import ProblemFileError, problem_record, read_problems
from shoparena.problems.models import Problem
from shoparena.problems.records import validate_record
from shoparena.problems.suite import SuiteError

BANK_FILE = "race_bank.jsonl"
LOCK_FILE = "race_bank.lock"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
READ_CACHE_SIZE = 8
_READ_CACHE: dict[Path, tuple[tuple[int, int, int, int], RaceBank]] = {}


class PoolError(ArenaError):
    """The race bank or a rotation cannot be used as asked (the message names the file and what to do)."""


class BankError(PoolError):
    """A race bank file that cannot be read, or an `add` that cannot be done."""


class BankAddReport(BaseModel):
    """What one `bank add` did."""

    added: int = Field(ge=0)
    """Problems appended to the bank."""
    dropped_never_touch: int = Field(ge=0)
    """Generated problems in the leak cluster of a never-touch (formal suite) problem, kept out."""
    duplicates: int = Field(ge=0)
    """Generated problems whose id the bank already held (e.g. a re-run with the same seed), skipped."""
    bank_size: int = Field(ge=0)
    bank_sha256: str
    never_touch_problems: int = Field(default=0, ge=0)
    """How many never-touch problems the guard compared against."""


class RaceBank(BaseModel):
    """The race bank as read from disk: problems in file order, each problem's leak cluster, and the
    SHA-256 of the file's bytes (what a rotation manifest records as `bank_sha256`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: Path
    problems: list[Problem]
    cluster_of: dict[str, str]
    """problem id → leak cluster id."""
    sha256: str
    prefix_sha256: list[str] = Field(default_factory=lambda: [EMPTY_SHA256], repr=False)
    """`prefix_sha256[k]`: SHA-256 of the file's first k lines (k = 0 … len(problems))."""

    @cached_property
    def by_id(self) -> dict[str, Problem]:
        return {p.problem_id or "": p for p in self.problems}

    @property
    def size(self) -> int:
        return len(self.problems)

    def clusters(self) -> dict[str, list[str]]:
        """cluster id → its problem ids (file order), clusters sorted by id."""
        members: dict[str, list[str]] = {}
        for problem in self.problems:
            pid = problem.problem_id or ""
            members.setdefault(self.cluster_of[pid], []).append(pid)
        return dict(sorted(members.items()))

    def bucket_counts(self) -> dict[str, int]:
        counts = Counter(p.bucket or "unknown" for p in self.problems)
        return {b: counts[b] for b in sorted(counts)}

    def as_of(self, sha256: str) -> RaceBank:
        """The bank as it was when its bytes hashed to `sha256` (the file is append-only, so an earlier
        bank is a prefix of this one); a `BankError` if no prefix of the file has that hash."""
        try:
            size = self.prefix_sha256.index(sha256)
        except ValueError:
            raise BankError(
                f"{self.path}: no prefix of the race bank has sha256 {sha256[:12]}…; the bank was rewritten "
                "(it is append-only), so a rotation frozen on it can no longer be checked"
            ) from None
        if size == self.size:
            return self
        kept = self.problems[:size]
        return RaceBank(
            path=self.path,
            problems=kept,
            cluster_of={p.problem_id or "": self.cluster_of[p.problem_id or ""] for p in kept},
            sha256=sha256,
            prefix_sha256=self.prefix_sha256[: size + 1],
        )


def bank_path(arena_dir: Path) -> Path:
    return Path(arena_dir) / BANK_FILE


def read_bank(arena_dir: Path) -> RaceBank:
    """Read `ARENA/race_bank.jsonl` (an absent file is an empty bank); treat the result as read-only.

    The bank is the arena's own output, so a bad line is not skipped: it is a `BankError` naming the
    line and the reason (a skipped line would change every later rotation). Validating every problem
    costs ~0.25 ms each, and the race engine asks for the bank at every rotation lookup, so the last
    read of each file is reused while the file's identity, size and modification time are unchanged."""
    path = bank_path(arena_dir).absolute()
    try:
        with path.open("rb") as handle:
            stat = os.fstat(handle.fileno())
            key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
            cached = _READ_CACHE.get(path)
            if cached is not None and cached[0] == key:
                return cached[1]
            data = handle.read()
    except FileNotFoundError:
        return _parse_bank(path, b"")
    except OSError as exc:
        raise BankError(f"{path}: cannot read the race bank: {exc.strerror or exc}") from None
    bank = _parse_bank(path, data)
    if len(data) == key[2]:
        _READ_CACHE.pop(path, None)
        _READ_CACHE[path] = (key, bank)
        while len(_READ_CACHE) > READ_CACHE_SIZE:
            _READ_CACHE.pop(next(iter(_READ_CACHE)))
    return bank


def _parse_bank(path: Path, data: bytes) -> RaceBank:
    if data and not data.endswith(b"\n"):
        last_line = data.count(b"\n") + 1
        raise BankError(
            f"{path}:{last_line}: the last line is incomplete (no newline): an interrupted "
            "`bank add`? Remove the partial line and add again"
        )
    problems: list[Problem] = []
    cluster_of: dict[str, str] = {}
    hasher = hashlib.sha256()
    prefixes = [hasher.hexdigest()]
    for line_no, line in enumerate(data.splitlines(keepends=True), start=1):
        location = f"{path}:{line_no}"
        hasher.update(line)
        prefixes.append(hasher.hexdigest())
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise BankError(f"{location}: not a JSON problem record: {exc}") from None
        problem, errors = validate_record(record, location)
        if problem is None:
            raise BankError(
                f"{location}: bad problem record: " + "; ".join(f"{e.field}: {e.reason}" for e in errors)
            )
        if not problem.leak_cluster_id:
            raise BankError(f"{location}: problem {problem.problem_id} carries no leak_cluster_id")
        if problem.problem_id in cluster_of:
            raise BankError(f"{location}: problem id {problem.problem_id} is in the bank twice")
        problems.append(problem)
        cluster_of[problem.problem_id or ""] = problem.leak_cluster_id
    return RaceBank(
        path=path, problems=problems, cluster_of=cluster_of, sha256=prefixes[-1], prefix_sha256=prefixes
    )


def never_touch_problems(config: ArenaConfig, extra: Iterable[Path] = ()) -> list[Problem]:
    """The arena's own suite (`ArenaConfig.problems`) and any further formal suite files, every problem
    with its leak cluster: all of them stay out of the race bank."""
    problems: list[Problem] = []
    for path in [Path(config.problems), *extra]:
        try:
            loaded = read_problems(path)
        except (ProblemFileError, SuiteError) as exc:
            raise BankError(f"never-touch suite {path}: {exc}") from None
        if not loaded.problems:
            raise BankError(
                f"never-touch suite {path}: no problem could be read ({len(loaded.rejects)} rejects)"
            )
        problems.extend(loaded.problems)
    return with_leak_clusters(problems)


def split_never_touch(
    candidates: list[Problem], never: list[Problem], never_touch_suites: Sequence[str]
) -> tuple[list[Problem], list[Problem]]:
    """(kept, dropped): a candidate is dropped when it belongs to a never-touch suite by name, or when the
    leak-cluster guard puts it in one cluster with a never-touch problem (same id, same reward-spec
    fingerprint, or near-duplicate query)."""
    suites = set(never_touch_suites)
    by_name = [p for p in candidates if p.suite in suites or p.suite_version in suites]
    entries = [
        ProblemEntry(
            problem_id=p.problem_id or "",
            bucket=p.bucket,
            query=p.query,
            cluster_hint=p.leak_cluster_id,
            rows=1,
        )
        for p in candidates
    ]
    cluster_of, never_clusters = leak_clusters(entries, {}, NeverTouch.from_problems([*never, *by_name]))
    kept, dropped = [], []
    for problem in candidates:
        (dropped if cluster_of[problem.problem_id or ""] in never_clusters else kept).append(problem)
    return kept, dropped


@contextmanager
def _bank_lock(arena_dir: Path):
    """One `bank add` at a time per arena (the check for duplicates and the append are one step)."""
    with (Path(arena_dir) / LOCK_FILE).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def add_to_bank(
    arena_dir: Path,
    n: int,
    seed: int,
    *,
    variants: int = 1,
    buckets: Sequence[str] = GENERATED_BUCKETS,
    never_touch: Sequence[Path] = (),
    progress: Callable[[int], object] | None = None,
) -> BankAddReport:
    """Generate `n` tasks (× `variants` surface forms, which share a leak cluster) on the arena's
    catalogue with `seed` and append the new, allowed ones to the race bank.

    Problems whose id the bank holds already are skipped (a re-run with the same seed adds nothing);
    problems in a never-touch leak cluster are dropped. Both are counted in the report."""
    arena_dir = Path(arena_dir)
    if n < 1:
        raise BankError("n must be at least 1")
    if variants < 1:
        raise BankError("variants must be at least 1")
    config = read_config(arena_dir)
    read_bank(arena_dir)  # a bad bank is reported before minutes of generation, not after
    never = never_touch_problems(config, never_touch)
    try:
        backend = open_catalog(config.catalog)
    except (CatalogDirError, ValueError) as exc:
        raise BankError(f"the arena's catalogue {config.catalog}: {exc}") from None
    try:
        generated = ProblemGenerator(backend, seed=seed).generate(
            n, buckets, variants=variants, progress=progress
        )
    except (GenerationError, ValueError) as exc:
        raise BankError(f"generating {n} tasks with seed {seed}: {exc}") from None
    finally:
        backend.close()
    kept, dropped = split_never_touch(generated, never, config.competition.never_touch_suites)
    with _bank_lock(arena_dir):
        bank = read_bank(arena_dir)
        seen = set(bank.cluster_of)
        new: list[Problem] = []
        duplicates = 0
        for problem in kept:
            if problem.problem_id in seen:
                duplicates += 1
                continue
            seen.add(problem.problem_id or "")
            new.append(problem)
        if new:
            lines = b"".join(orjson.dumps(problem_record(p)) + b"\n" for p in new)
            with bank.path.open("ab") as handle:
                handle.write(lines)
                handle.flush()
                os.fsync(handle.fileno())
            bank = read_bank(arena_dir)
    return BankAddReport(
        added=len(new),
        dropped_never_touch=len(dropped),
        duplicates=duplicates,
        bank_size=bank.size,
        bank_sha256=bank.sha256,
        never_touch_problems=len(never),
    )
