"""Problem pools (SPEC §6, issues 13 and 22): the race bank's rotation into open, held-out and retired
clusters, and the draws of race and qualifying problems from them.

Freshness. A problem whose answer is public is never raced again: a race reveals its problems when it
closes, and the firehose serves every qualifying trajectory as it is posted. So a leak cluster's side
only ever moves one way — new → held out → retired, or new → open:
- a cluster some race has drawn is **retired**: never raced, never qualified on again (it is public,
  and may feed training corpora);
- a cluster open in any frozen manifest stays open (qualifying runs have published it);
- a cluster held out in any frozen manifest stays held out until a race draws it.

Rotation. Periods count from the arena's `created_at` in steps of `competition.rotation_cadence_s`.
The first call for a period freezes its manifest as `ARENA/rotations/period-NNNN.json`, a
`RotationManifest` whose `sha256` hashes its canonical JSON. It partitions the bank's leak clusters —
never its problems, so a cluster is wholly on one side: the retired ones (drawn by any race before the
freeze) aside, the clusters the frozen manifests already placed keep their side, and the clusters no
manifest has placed yet (problems added since) top the held-out side up to
`round(heldout_fraction × live clusters)` in the seeded order — SHA-256 of
`"{bank_sha256}:{period}:{cluster}"`, stratified by bucket (`cluster_order`) — the rest going open. A
bank with no history gets exactly the old partition. Problems added to the bank later in the period are
not in that period's manifest (the next period takes them).

Draws. Open problems are what qualifying runs see; fresh held-out ones are raced. A race draws from the
held-out problems whose cluster no earlier race drew, with the race's seed, revealed at close: ordered
by SHA-256 of `"{seed}:{problem_id}"` within their bucket and the buckets interleaved in proportion
(`stratified_order`), the first n. A qualifying run draws from the open partition the same way, keyed
by the submission id (or takes the whole open partition).

The bank itself (`race_bank.jsonl`, `add_to_bank`, `read_bank`) lives in `bank.py`; its names are
re-exported here so callers import everything pool-related from one place.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from collections import Counter
from collections.abc import Collection, Iterable
from datetime import datetime, timedelta
from pathlib import Path

import orjson
from pydantic import BaseModel, ValidationError

from shoparena.arena.competition.bank import (
    BANK_FILE,
    BankAddReport,
    BankError,
    PoolError,
    RaceBank,
    add_to_bank,
    bank_path,
    read_bank,
)
from shoparena.arena.competition.models import ROTATION_SCHEMA_V1, RotationManifest
from shoparena.arena.config import ArenaConfig
from shoparena.problems.canonical import canonical_json

ROTATIONS_DIR = "rotations"

__all__ = [
    "BANK_FILE",
    "BankAddReport",
    "BankError",
    "PoolError",
    "RaceBank",
    "RaceDraw",
    "RotationError",
    "add_to_bank",
    "bank_path",
    "cluster_bucket",
    "cluster_order",
    "draw_race_problems",
    "fresh_heldout",
    "frozen_periods",
    "frozen_sides",
    "heldout_count",
    "manifest_path",
    "manifest_sha256",
    "period_of",
    "period_starts_at",
    "plan_rotation",
    "preview_rotation",
    "qualifying_problems",
    "read_bank",
    "read_manifest",
    "rotation_at",
    "stratified_order",
    "verify_manifest",
]


class RotationError(PoolError):
    """A rotation that cannot be made, or a frozen manifest that fails its checks."""


class RaceDraw(BaseModel):
    """A race's problems, recomputable by anyone from the revealed seed."""

    problem_ids: list[str]
    """In draw order (`stratified_order` salted with the seed)."""
    race_clusters: list[str]
    """The leak clusters of those problems, sorted."""


# -- periods -----------------------------------------------------------------------------------------------
def period_of(config: ArenaConfig, at: datetime) -> tuple[int, datetime, datetime]:
    """(period, starts_at, ends_at) of the rotation period holding `at` (timezone-aware)."""
    if at.tzinfo is None or at.utcoffset() is None:
        raise RotationError(f"rotation time {at.isoformat()} has no time zone; pass an aware datetime (UTC)")
    cadence = timedelta(seconds=config.competition.rotation_cadence_s)
    if at < config.created_at:
        raise RotationError(
            f"{at.isoformat()} is before the arena was created ({config.created_at.isoformat()}): no rotation yet"
        )
    period = (at - config.created_at) // cadence
    starts_at = config.created_at + period * cadence
    return period, starts_at, starts_at + cadence


def period_starts_at(config: ArenaConfig, period: int) -> datetime:
    """When rotation period `period` begins (`period_of`'s inverse)."""
    return config.created_at + period * timedelta(seconds=config.competition.rotation_cadence_s)


def manifest_path(arena_dir: Path, period: int) -> Path:
    return Path(arena_dir) / ROTATIONS_DIR / f"period-{period:04d}.json"


def frozen_periods(arena_dir: Path) -> list[int]:
    """The periods whose rotation is frozen in `ARENA/rotations/`, ascending (nothing is read or checked
    but the file names; `read_manifest` checks a manifest when it is used)."""
    periods = []
    for path in (Path(arena_dir) / ROTATIONS_DIR).glob("period-*.json"):
        digits = path.stem.removeprefix("period-")
        if digits.isdigit():
            periods.append(int(digits))
    return sorted(periods)


# -- the partition -----------------------------------------------------------------------------------------
def _key(*parts: object) -> str:
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()


def heldout_count(clusters: int, fraction: float) -> int:
    """round(fraction × clusters), at least 1 and at most clusters − 1 (both sides are never empty)."""
    return min(clusters - 1, max(1, math.floor(fraction * clusters + 0.5)))


def manifest_sha256(manifest: RotationManifest) -> str:
    """SHA-256 of the manifest's canonical JSON (sorted keys, compact) with `sha256` left empty."""
    body = manifest.model_dump(mode="json", by_alias=True)
    body["sha256"] = ""
    if manifest.schema_ == ROTATION_SCHEMA_V1:  # frozen before retirement: hashed without those lists
        body.pop("retired_clusters", None)
        body.pop("retired_problem_ids", None)
    return hashlib.sha256(canonical_json(body)).hexdigest()


def cluster_bucket(bank: RaceBank, members: list[str]) -> str:
    """A cluster's bucket: the most common bucket of its problems (ties to the first name)."""
    counts = Counter(bank.by_id[pid].bucket or "unknown" for pid in members)
    return min(counts, key=lambda b: (-counts[b], b))


def stratified_order(names: list[str], salt: str, bucket_of: dict[str, str]) -> list[str]:
    """`names` in a seeded order that takes every bucket in proportion: within its bucket, a name's
    place in the order of SHA-256 of `"{salt}:{name}"` gives it a quantile (place + ½) / names of the
    bucket; names are ordered by quantile, ties by the same hash. Any prefix of the order then holds
    each bucket's share of it within one name. Recomputable by anyone with the salt."""
    by_bucket: dict[str, list[tuple[str, str]]] = {}
    for name in names:
        by_bucket.setdefault(bucket_of[name], []).append((_key(salt, name), name))
    ranked = []
    for entries in by_bucket.values():
        entries.sort()
        ranked.extend(((place + 0.5) / len(entries), key, name) for place, (key, name) in enumerate(entries))
    return [name for _, _, name in sorted(ranked)]


def cluster_order(bank: RaceBank, period: int) -> list[str]:
    """The bank's clusters in the order a rotation holds them out: stratified by the clusters' buckets,
    salted with `"{bank_sha256}:{period}"`."""
    buckets = {cluster: cluster_bucket(bank, members) for cluster, members in bank.clusters().items()}
    return stratified_order(list(buckets), f"{bank.sha256}:{period}", buckets)


def plan_rotation(
    bank: RaceBank,
    period: int,
    starts_at: datetime,
    ends_at: datetime,
    heldout_fraction: float,
    *,
    retired: Collection[str] = (),
    placed: tuple[Collection[str], Collection[str]] = ((), ()),
) -> RotationManifest:
    """The partition of `bank` for `period`: `retired` are the clusters races have drawn, `placed` the
    (open, held-out) clusters of the manifests frozen before (`frozen_sides`). Pure: the same bank
    bytes, period, retired and placed clusters give the same manifest."""
    clusters = bank.clusters()
    if len(clusters) < 2:
        what = "empty" if not clusters else f"one leak cluster ({next(iter(clusters))})"
        raise RotationError(
            f"{bank.path}: the race bank is {what}; a rotation needs at least two clusters (one open, one "
            "held out): add problems with `shoparena arena bank add`"
        )
    gone = set(retired) & set(clusters)
    was_open = (set(placed[0]) & set(clusters)) - gone
    kept = (set(placed[1]) & set(clusters)) - gone - was_open
    live = len(clusters) - len(gone)
    new = [c for c in cluster_order(bank, period) if c not in gone and c not in was_open and c not in kept]
    wanted = heldout_count(live, heldout_fraction) if live >= 2 else live
    heldout = kept | set(new[: max(0, wanted - len(kept))])
    open_ = sorted(set(clusters) - gone - heldout)
    manifest = RotationManifest(
        period=period,
        starts_at=starts_at,
        ends_at=ends_at,
        bank_sha256=bank.sha256,
        open_clusters=open_,
        heldout_clusters=sorted(heldout),
        open_problem_ids=sorted(pid for c in open_ for pid in clusters[c]),
        heldout_problem_ids=sorted(pid for c in heldout for pid in clusters[c]),
        retired_clusters=sorted(gone),
        retired_problem_ids=sorted(pid for c in gone for pid in clusters[c]),
    )
    return manifest.model_copy(update={"sha256": manifest_sha256(manifest)})


def verify_manifest(manifest: RotationManifest, bank: RaceBank | None = None) -> None:
    """Raise `RotationError` with the reason unless `manifest` is intact and guarded: its hash matches,
    no cluster or problem is on two sides, and (schema 1, before retirement) neither side is empty;
    and, given the bank, the manifest's problems are exactly the bank as of `bank_sha256`, every
    cluster wholly on one side."""
    if manifest.sha256 != manifest_sha256(manifest):
        raise RotationError(
            f"period {manifest.period}: sha256 {manifest.sha256[:12] or '(empty)'}… does not match the "
            f"manifest's content ({manifest_sha256(manifest)[:12]}…): it was changed after it was frozen"
        )
    if manifest.ends_at <= manifest.starts_at:
        raise RotationError(f"period {manifest.period}: ends_at is not after starts_at")
    for side, names in (
        ("open_clusters", manifest.open_clusters),
        ("heldout_clusters", manifest.heldout_clusters),
        ("open_problem_ids", manifest.open_problem_ids),
        ("heldout_problem_ids", manifest.heldout_problem_ids),
        ("retired_clusters", manifest.retired_clusters),
        ("retired_problem_ids", manifest.retired_problem_ids),
    ):
        if not names and manifest.schema_ == ROTATION_SCHEMA_V1 and not side.startswith("retired"):
            raise RotationError(f"period {manifest.period}: {side} is empty")
        if len(set(names)) != len(names):
            raise RotationError(f"period {manifest.period}: {side} lists an entry twice")
    both = set(manifest.open_clusters) & set(manifest.heldout_clusters)
    if both:
        raise RotationError(f"period {manifest.period}: clusters both open and held out: {sorted(both)[:3]}")
    shared = set(manifest.open_problem_ids) & set(manifest.heldout_problem_ids)
    if shared:
        raise RotationError(
            f"period {manifest.period}: problems both open and held out: {sorted(shared)[:3]}"
        )
    if not (manifest.open_clusters or manifest.heldout_clusters or manifest.retired_clusters):
        raise RotationError(f"period {manifest.period}: no cluster on any side")
    stale = (set(manifest.open_clusters) | set(manifest.heldout_clusters)) & set(manifest.retired_clusters)
    if stale:
        raise RotationError(
            f"period {manifest.period}: retired clusters open or held out: {sorted(stale)[:3]}"
        )
    stale_ids = (set(manifest.open_problem_ids) | set(manifest.heldout_problem_ids)) & set(
        manifest.retired_problem_ids
    )
    if stale_ids:
        raise RotationError(
            f"period {manifest.period}: retired problems open or held out: {sorted(stale_ids)[:3]}"
        )
    if bank is None:
        return
    try:
        as_of = bank.as_of(manifest.bank_sha256)
    except BankError as exc:
        raise RotationError(f"period {manifest.period}: {exc}") from None
    sides = {
        **dict.fromkeys(manifest.open_problem_ids, "open"),
        **dict.fromkeys(manifest.heldout_problem_ids, "held out"),
        **dict.fromkeys(manifest.retired_problem_ids, "retired"),
    }
    cluster_side = {
        **dict.fromkeys(manifest.open_clusters, "open"),
        **dict.fromkeys(manifest.heldout_clusters, "held out"),
        **dict.fromkeys(manifest.retired_clusters, "retired"),
    }
    missing = sorted(set(as_of.cluster_of) - set(sides))
    if missing:
        raise RotationError(f"period {manifest.period}: bank problems on no side: {missing[:3]}")
    extra = sorted(set(sides) - set(as_of.cluster_of))
    if extra:
        raise RotationError(
            f"period {manifest.period}: problems not in the bank it was frozen on: {extra[:3]}"
        )
    for pid, side in sides.items():
        cluster = as_of.cluster_of[pid]
        if cluster_side.get(cluster) != side:
            raise RotationError(
                f"period {manifest.period}: problem {pid} is {side} but its leak cluster {cluster} is "
                f"{cluster_side.get(cluster, 'in neither list')}: the cluster is split"
            )
    unused = sorted(set(cluster_side) - set(as_of.cluster_of.values()))
    if unused:
        raise RotationError(f"period {manifest.period}: clusters with no problem in the bank: {unused[:3]}")


# -- frozen manifests --------------------------------------------------------------------------------------
def read_manifest(path: Path, bank: RaceBank | None = None) -> RotationManifest:
    """Load a frozen manifest and verify it; any failure is a `RotationError` naming the file."""
    try:
        manifest = RotationManifest.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise RotationError(f"{path}: cannot read the rotation manifest: {exc.strerror or exc}") from None
    except ValidationError as exc:
        raise RotationError(f"{path}: not a rotation manifest: {exc}") from None
    try:
        verify_manifest(manifest, bank)
    except RotationError as exc:
        raise RotationError(f"{path}: {exc}") from None
    return manifest


def _freeze(path: Path, manifest: RotationManifest) -> bool:
    """Write `manifest` to `path` unless a manifest is there already (first writer wins, atomically: a
    reader never sees a partial file). True when this call wrote it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = orjson.dumps(manifest.model_dump(mode="json", by_alias=True), option=orjson.OPT_INDENT_2) + b"\n"
    with tempfile.NamedTemporaryFile(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
    ) as handle:
        tmp = Path(handle.name)
        handle.write(body)
        handle.flush()
        os.fsync(handle.fileno())
    tmp.chmod(0o644)  # a public record (the temp file was private)
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    except OSError:  # a file system without hard links: exclusive create (first writer still wins)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as out:
            out.write(body)
        return True
    finally:
        tmp.unlink(missing_ok=True)


def frozen_sides(arena_dir: Path, but: int | None = None) -> tuple[set[str], set[str]]:
    """(open, held-out) clusters of every frozen manifest but period `but`'s: where the arena has placed
    a cluster already. Open anywhere wins over held out elsewhere (a manifest frozen before retirement
    rotated clusters both ways): once qualifying runs have published a cluster it is never raced."""
    opened: set[str] = set()
    held: set[str] = set()
    for period in frozen_periods(arena_dir):
        if period == but:
            continue
        manifest = read_manifest(manifest_path(arena_dir, period))
        opened.update(manifest.open_clusters)
        held.update(manifest.heldout_clusters)
    return opened, held - opened


def _plan(arena_dir: Path, config: ArenaConfig, at: datetime, retired: Iterable[str]) -> RotationManifest:
    period, starts_at, ends_at = period_of(config, at)
    return plan_rotation(
        read_bank(arena_dir),
        period,
        starts_at,
        ends_at,
        config.competition.heldout_fraction,
        retired=set(retired),
        placed=frozen_sides(arena_dir, but=period),
    )


def rotation_at(
    arena_dir: Path, config: ArenaConfig, at: datetime, *, retired: Iterable[str]
) -> RotationManifest:
    """The rotation manifest of the period holding `at`: read from its frozen file (verified against its
    hash and the bank), or, at the first call for that period, planned from the bank as it is now, the
    manifests frozen before and `retired` (the clusters every race so far has drawn), and frozen."""
    period, _starts_at, _ends_at = period_of(config, at)
    path = manifest_path(arena_dir, period)
    if not path.exists():
        _freeze(path, _plan(arena_dir, config, at, retired))
    manifest = read_manifest(path, read_bank(arena_dir))
    if manifest.period != period:
        raise RotationError(f"{path}: holds period {manifest.period}, not {period}")
    return manifest


def preview_rotation(
    arena_dir: Path, config: ArenaConfig, at: datetime, *, retired: Iterable[str]
) -> tuple[RotationManifest, bool]:
    """(manifest, frozen): the frozen manifest of `at`'s period, else what `rotation_at` would freeze
    now — looking freezes nothing."""
    period, _starts_at, _ends_at = period_of(config, at)
    path = manifest_path(arena_dir, period)
    if path.exists():
        return read_manifest(path, read_bank(arena_dir)), True
    return _plan(arena_dir, config, at, retired), False


# -- draws -------------------------------------------------------------------------------------------------
def _ordered(ids: list[str], salt: str, bank: RaceBank, manifest: RotationManifest) -> list[str]:
    unknown = [pid for pid in ids if pid not in bank.cluster_of]
    if unknown:
        raise RotationError(
            f"period {manifest.period}: problems {unknown[:3]} are not in the race bank {bank.path}"
        )
    by_id = bank.by_id
    return stratified_order(ids, salt, {pid: by_id[pid].bucket or "unknown" for pid in ids})


def fresh_heldout(manifest: RotationManifest, bank: RaceBank, retired: Collection[str]) -> list[str]:
    """The manifest's held-out problems whose leak cluster no race has drawn (`retired`): what a race may
    still draw, in the manifest's order."""
    gone = set(retired)
    return [pid for pid in manifest.heldout_problem_ids if bank.cluster_of.get(pid) not in gone]


def draw_race_problems(
    manifest: RotationManifest, bank: RaceBank, seed: str, n: int, retired: Collection[str] = ()
) -> RaceDraw:
    """The race's problems: the first `n` fresh held-out ids (`fresh_heldout`: every cluster an earlier
    race drew, `retired`, left out; all of them when fewer) in `stratified_order` salted with the seed —
    by SHA-256 of `"{seed}:{problem_id}"` within each bucket, buckets taken in proportion; anyone with
    the revealed seed, the manifest, the bank and the earlier races' clusters gets the same."""
    if n < 1:
        raise RotationError(f"a race needs at least one problem (n = {n})")
    ids = _ordered(fresh_heldout(manifest, bank, retired), seed, bank, manifest)[:n]
    heldout = set(manifest.heldout_clusters)
    clusters = {bank.cluster_of[pid] for pid in ids}
    leaked = sorted(clusters - heldout)
    if leaked:
        raise RotationError(
            f"period {manifest.period}: drawn problems belong to clusters that are not held out: {leaked[:3]}"
        )
    stale = sorted(clusters & set(retired))
    if stale:
        raise RotationError(
            f"period {manifest.period}: drawn problems belong to retired clusters: {stale[:3]}"
        )
    return RaceDraw(problem_ids=ids, race_clusters=sorted(clusters))


def qualifying_problems(
    manifest: RotationManifest, bank: RaceBank, submission_id: str, n: int | None
) -> list[str]:
    """A qualifying run's problems: the whole open partition (`n` None, in the manifest's order), else
    the first `n` of the open ids in `stratified_order` salted with the submission id."""
    if n is not None and n < 1:
        raise RotationError(f"a qualifying run needs at least one problem (n = {n})")
    ordered = _ordered(manifest.open_problem_ids, submission_id, bank, manifest)
    return list(manifest.open_problem_ids) if n is None else ordered[:n]
