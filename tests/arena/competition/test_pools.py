"""Problem pools on a real arena over the session catalogue: the race bank (generation, never-touch
exclusion, idempotence, bad lines), the frozen rotations (determinism, mid-period additions, tamper
detection) and the race and qualifying draws."""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
from datetime import UTC, datetime, timedelta

import orjson
import pytest

from shoparena.arena import init_arena
from shoparena.arena.competition.bank import split_never_touch
from shoparena.arena.competition.pools import (
    BankError,
    RotationError,
    add_to_bank,
    draw_race_problems,
    manifest_path,
    manifest_sha256,
    qualifying_problems,
    read_bank,
    rotation_at,
    verify_manifest,
)
from shoparena.arena.config import read_config
from shoparena.problems.canonical import reward_fingerprint, with_leak_clusters
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import read_problems, write_problems
from tests.arena.arena_helpers import parallel

CREATED = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
CADENCE_S = 3600


@pytest.fixture
def arena_dir(tmp_path, small_catalog_dir, problems_file):
    """A fresh arena whose own suite is the 6-problem seed-3 file; hourly rotations from CREATED."""
    path = tmp_path / "arena"
    init_arena(
        path,
        small_catalog_dir,
        problems_file,
        created_at=CREATED,
        competition={"rotation_cadence_s": CADENCE_S, "heldout_fraction": 0.4},
    ).close()
    return path


@pytest.fixture(scope="module")
def grown(tmp_path_factory, small_catalog_dir, problems_file):
    """An arena with a 12-task bank (seed 21, 2 variants each: 12 clusters of 2), built once; tests copy it."""
    path = tmp_path_factory.mktemp("grown") / "arena"
    init_arena(
        path,
        small_catalog_dir,
        problems_file,
        created_at=CREATED,
        competition={"rotation_cadence_s": CADENCE_S, "heldout_fraction": 0.4},
    ).close()
    add_to_bank(path, 12, 21, variants=2)
    return path


@pytest.fixture
def bank_arena(grown, tmp_path):
    copy = tmp_path / "banked"
    shutil.copytree(grown, copy)
    return copy


# -- the bank ------------------------------------------------------------------------------------------------
def test_add_never_lets_the_arena_suite_or_its_clusters_in(arena_dir, problems_file):
    # Seed 3 is the seed the arena's own suite was generated with: its 6 tasks come out again (the first
    # two of each bucket) and must be dropped, the other 6 kept.
    report = add_to_bank(arena_dir, 12, 3)
    suite = with_leak_clusters(read_problems(problems_file).problems)
    assert report.dropped_never_touch >= len(suite)
    assert report.added + report.dropped_never_touch == 12
    assert report.added > 0 and report.duplicates == 0
    bank = read_bank(arena_dir)
    assert bank.size == report.added == report.bank_size
    assert (
        bank.sha256
        == report.bank_sha256
        == hashlib.sha256((arena_dir / "race_bank.jsonl").read_bytes()).hexdigest()
    )
    assert not {p.problem_id for p in suite} & set(bank.cluster_of)
    assert not {p.leak_cluster_id for p in suite} & set(bank.cluster_of.values())
    for problem in bank.problems:  # every problem carries its own leak cluster, the reward fingerprint
        assert bank.cluster_of[problem.problem_id] == problem.leak_cluster_id == reward_fingerprint(problem)


def test_add_drops_further_never_touch_files(arena_dir, small_catalog, tmp_path):
    formal = tmp_path / "v1.jsonl"
    write_problems(formal, ProblemGenerator(small_catalog, seed=40).generate(3))
    report = add_to_bank(arena_dir, 6, 40, never_touch=[formal])
    assert report.dropped_never_touch >= 3
    formal_clusters = {p.leak_cluster_id for p in read_problems(formal).problems}
    assert not formal_clusters & set(read_bank(arena_dir).cluster_of.values())


def test_guard_drops_by_suite_name_and_by_near_duplicate_query(small_catalog):
    never, other, renamed, copied = ProblemGenerator(small_catalog, seed=50).generate(4, buckets=("product",))
    renamed = renamed.model_copy(update={"suite_version": "v2"})
    copied = copied.model_copy(update={"query": never.query})  # another task, worded as a formal one
    kept, dropped = split_never_touch([other, renamed, copied], [never], ["v1", "v2", "v3"])
    assert [p.problem_id for p in kept] == [other.problem_id]
    assert {p.problem_id for p in dropped} == {renamed.problem_id, copied.problem_id}


def test_guard_keeps_the_real_v3_suite_out_however_reworded(upstream_dir, small_catalog):
    v3 = with_leak_clusters(read_problems(upstream_dir / "oro_problem_suite_v3.json").problems)
    reworded = [
        p.model_copy(update={"query": f"Could you look for this: item number {i}", "problem_id": f"copy-{i}"})
        for i, p in enumerate(v3[:5])
    ]
    fresh = ProblemGenerator(small_catalog, seed=51).generate(6, buckets=("product", "shop"))
    kept, dropped = split_never_touch([*reworded, *fresh], v3, ["v1", "v2", "v3"])
    assert {p.problem_id for p in dropped} == {p.problem_id for p in reworded}  # same reward, same cluster
    assert [p.problem_id for p in kept] == [p.problem_id for p in fresh]


def test_add_again_with_the_same_seed_adds_nothing(arena_dir):
    first = add_to_bank(arena_dir, 9, 5)
    again = add_to_bank(arena_dir, 9, 5)
    assert again.added == 0 and again.duplicates == first.added
    assert again.bank_sha256 == first.bank_sha256 and again.bank_size == first.bank_size
    more = add_to_bank(arena_dir, 15, 5)  # the first 9 tasks again, then new ones
    assert more.duplicates == first.added and more.added > 0
    bank = read_bank(arena_dir)
    assert bank.size == first.added + more.added == len(set(bank.cluster_of))
    assert bank.as_of(first.bank_sha256).size == first.added  # the old bank is a prefix


def test_concurrent_adds_append_whole_batches(arena_dir):
    reports = parallel(3, lambda i: add_to_bank(arena_dir, 6, 60 + i))
    bank = read_bank(arena_dir)
    assert bank.size == sum(r.added for r in reports) == max(r.bank_size for r in reports)
    assert len(set(bank.cluster_of)) == bank.size


def test_a_bad_bank_line_is_an_error_naming_the_line(bank_arena):
    path = bank_arena / "race_bank.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3]) + b'{"query": "x"}\n' + b"".join(lines[3:]))
    with pytest.raises(BankError, match=r"race_bank\.jsonl:4: bad problem record"):
        read_bank(bank_arena)
    path.write_bytes(b"".join(lines[:2]) + b"not json\n")
    with pytest.raises(BankError, match=r"race_bank\.jsonl:3: not a JSON problem record"):
        read_bank(bank_arena)
    path.write_bytes(b"".join(lines[:2]) + lines[2][:-10])
    with pytest.raises(BankError, match=r"race_bank\.jsonl:3: the last line is incomplete"):
        read_bank(bank_arena)
    path.write_bytes(b"".join(lines[:2]) + lines[0])
    with pytest.raises(BankError, match=r"race_bank\.jsonl:3: problem id .* is in the bank twice"):
        read_bank(bank_arena)


def test_an_absent_bank_is_empty(arena_dir):
    bank = read_bank(arena_dir)
    assert bank.size == 0 and bank.sha256 == hashlib.sha256(b"").hexdigest()


# -- rotations ----------------------------------------------------------------------------------------------
def test_rotation_is_frozen_and_recomputes_identically(bank_arena, tmp_path):
    config = read_config(bank_arena)
    at = CREATED + timedelta(seconds=10)
    manifest = rotation_at(bank_arena, config, at, retired=())
    path = manifest_path(bank_arena, 0)
    assert path.name == "period-0000.json" and path.exists()
    assert manifest.period == 0 and manifest.starts_at == CREATED
    assert manifest.ends_at == CREATED + timedelta(seconds=CADENCE_S)
    assert manifest.sha256 == manifest_sha256(manifest)
    assert len(manifest.heldout_clusters) == 5 and len(manifest.open_clusters) == 7  # round(0.4 × 12)
    bank = read_bank(bank_arena)
    held_buckets = Counter(bank.by_id[bank.clusters()[c][0]].bucket for c in manifest.heldout_clusters)
    assert sorted(held_buckets.values()) == [1, 2, 2]  # 4 clusters a bucket, 5 held out: stratified
    assert rotation_at(bank_arena, config, CREATED + timedelta(seconds=CADENCE_S - 1), retired=()) == manifest
    frozen = path.read_bytes()
    # Anyone with the same bank recomputes the same manifest, byte for byte.
    other = tmp_path / "other"
    shutil.copytree(bank_arena, other)
    shutil.rmtree(other / "rotations")
    assert rotation_at(other, config, at, retired=()) == manifest
    assert manifest_path(other, 0).read_bytes() == frozen
    following = rotation_at(bank_arena, config, CREATED + timedelta(seconds=CADENCE_S), retired=())
    assert following.period == 1 and manifest_path(bank_arena, 1).exists()
    # freshness: a cluster keeps its side (open ones were published by qualifying runs)
    assert (following.open_clusters, following.heldout_clusters) == (
        manifest.open_clusters,
        manifest.heldout_clusters,
    )


def test_retired_clusters_never_come_back_and_new_ones_top_the_held_out_side_up(bank_arena):
    config = read_config(bank_arena)
    first = rotation_at(bank_arena, config, CREATED, retired=())
    raced = set(first.heldout_clusters[:3])
    bank = read_bank(bank_arena)
    # within the period, a draw never takes a raced cluster again
    draw = draw_race_problems(first, bank, "seed", 100, retired=raced)
    assert not set(draw.race_clusters) & raced and len(draw.race_clusters) == 2
    second = rotation_at(bank_arena, config, CREATED + timedelta(seconds=CADENCE_S), retired=raced)
    assert second.schema_ == "shoparena.rotation/2"
    assert set(second.retired_clusters) == raced
    assert not raced & set(second.open_clusters + second.heldout_clusters)
    assert set(second.heldout_clusters) == set(first.heldout_clusters) - raced
    assert second.open_clusters == first.open_clusters  # open stays open, never held out
    verify_manifest(second, bank)
    # problems added later: new clusters top the held-out side up to round(0.4 × live clusters)
    add_to_bank(bank_arena, 6, 99)
    bank = read_bank(bank_arena)
    third = rotation_at(bank_arena, config, CREATED + timedelta(seconds=2 * CADENCE_S), retired=raced)
    live = len(bank.clusters()) - len(raced)
    assert len(third.heldout_clusters) == round(0.4 * live)
    assert set(second.heldout_clusters) <= set(third.heldout_clusters)
    assert set(second.open_clusters) <= set(third.open_clusters)
    verify_manifest(third, bank)


def test_the_first_writer_of_a_period_wins(bank_arena):
    config = read_config(bank_arena)
    at = CREATED + timedelta(hours=5, minutes=1)
    manifests = parallel(8, lambda i: rotation_at(bank_arena, config, at, retired=()))
    assert all(m == manifests[0] for m in manifests) and manifests[0].period == 5
    assert [p.name for p in (bank_arena / "rotations").iterdir()] == ["period-0005.json"]


def test_problems_added_mid_period_wait_for_the_next(bank_arena):
    config = read_config(bank_arena)
    before = rotation_at(bank_arena, config, CREATED + timedelta(minutes=5), retired=())
    report = add_to_bank(bank_arena, 6, 99)
    assert report.added > 0
    bank = read_bank(bank_arena)
    new_ids = {p.problem_id for p in bank.problems[bank.size - report.added :]}
    during = rotation_at(bank_arena, config, CREATED + timedelta(minutes=50), retired=())
    assert during == before
    assert not new_ids & set(during.open_problem_ids + during.heldout_problem_ids)
    verify_manifest(during, bank)  # checked against the bank as of its sha256, a prefix of today's
    after = rotation_at(bank_arena, config, CREATED + timedelta(minutes=70), retired=())
    assert after.bank_sha256 == bank.sha256
    assert new_ids <= set(after.open_problem_ids + after.heldout_problem_ids)


def test_a_tampered_manifest_is_an_error_naming_its_file(bank_arena):
    config = read_config(bank_arena)
    at = CREATED + timedelta(seconds=1)
    manifest = rotation_at(bank_arena, config, at, retired=())
    path = manifest_path(bank_arena, 0)
    data = orjson.loads(path.read_bytes())
    moved = data["open_clusters"].pop()
    data["heldout_clusters"].append(moved)
    path.write_bytes(orjson.dumps(data))
    with pytest.raises(RotationError, match=r"period-0000\.json: .*changed after it was frozen"):
        rotation_at(bank_arena, config, at, retired=())
    # Re-hashed after moving the cluster alone: its problems are still open, so the cluster is split.
    rehashed = manifest.model_copy(
        update={
            "open_clusters": data["open_clusters"],
            "heldout_clusters": sorted(data["heldout_clusters"]),
        }
    )
    rehashed = rehashed.model_copy(update={"sha256": manifest_sha256(rehashed)})
    path.write_bytes(orjson.dumps(rehashed.model_dump(mode="json", by_alias=True)))
    with pytest.raises(RotationError, match=r"period-0000\.json: .*the cluster is split"):
        rotation_at(bank_arena, config, at, retired=())
    path.write_bytes(b"{not json")
    with pytest.raises(RotationError, match=r"period-0000\.json: not a rotation manifest"):
        rotation_at(bank_arena, config, at, retired=())


def test_a_rewritten_bank_breaks_its_frozen_rotation(bank_arena):
    config = read_config(bank_arena)
    rotation_at(bank_arena, config, CREATED, retired=())
    bank_file = bank_arena / "race_bank.jsonl"
    bank_file.write_bytes(b"".join(bank_file.read_bytes().splitlines(keepends=True)[1:]))
    with pytest.raises(RotationError, match="append-only"):
        rotation_at(bank_arena, config, CREATED, retired=())


def test_rotation_refuses_what_it_cannot_partition(arena_dir):
    config = read_config(arena_dir)
    with pytest.raises(RotationError, match="race bank is empty"):
        rotation_at(arena_dir, config, CREATED, retired=())
    add_to_bank(arena_dir, 1, 8, variants=3)  # one task in three wordings: one leak cluster
    assert read_bank(arena_dir).size == 3
    with pytest.raises(RotationError, match="one leak cluster"):
        rotation_at(arena_dir, config, CREATED, retired=())
    with pytest.raises(RotationError, match="no time zone"):
        rotation_at(arena_dir, config, datetime(2026, 11, 3), retired=())
    with pytest.raises(RotationError, match="before the arena was created"):
        rotation_at(arena_dir, config, CREATED - timedelta(seconds=1), retired=())
    assert not (arena_dir / "rotations").exists() or not list((arena_dir / "rotations").iterdir())


# -- draws --------------------------------------------------------------------------------------------------
def recompute_draw(ids: list[str], bucket_of: dict[str, str], seed: str) -> list[str]:
    """The draw rule as docs/arena.md states it, written out independently: within each bucket the ids by
    sha256("{seed}:{id}"), a quantile (place + 1/2) / bucket size each; all ids by (quantile, hash)."""
    digest = {p: hashlib.sha256(f"{seed}:{p}".encode()).hexdigest() for p in ids}
    quantile = {}
    for bucket in {bucket_of[p] for p in ids}:
        members = sorted((p for p in ids if bucket_of[p] == bucket), key=digest.__getitem__)
        quantile.update({p: (place + 0.5) / len(members) for place, p in enumerate(members)})
    return sorted(ids, key=lambda p: (quantile[p], digest[p]))


def test_race_draw_is_recomputable_from_the_revealed_seed(bank_arena):
    config = read_config(bank_arena)
    manifest = rotation_at(bank_arena, config, CREATED, retired=())
    bank = read_bank(bank_arena)
    seed = "race-7:3f9a"
    draw = draw_race_problems(manifest, bank, seed, 4)
    by_hand = recompute_draw(
        manifest.heldout_problem_ids, {p.problem_id: p.bucket for p in bank.problems}, seed
    )
    assert draw.problem_ids == by_hand[:4]
    assert draw.race_clusters == sorted({bank.cluster_of[p] for p in draw.problem_ids})
    assert set(draw.race_clusters) <= set(manifest.heldout_clusters)
    assert draw_race_problems(manifest, bank, seed, 4) == draw
    assert draw_race_problems(manifest, bank, "another seed", 4) != draw
    everything = draw_race_problems(manifest, bank, seed, 1000)
    assert everything.problem_ids == by_hand and set(everything.race_clusters) == set(
        manifest.heldout_clusters
    )
    with pytest.raises(RotationError, match="at least one problem"):
        draw_race_problems(manifest, bank, seed, 0)


def test_qualifying_draws_from_the_open_partition(bank_arena):
    config = read_config(bank_arena)
    manifest = rotation_at(bank_arena, config, CREATED, retired=())
    bank = read_bank(bank_arena)
    assert qualifying_problems(manifest, bank, "sub-1", None) == manifest.open_problem_ids
    first = qualifying_problems(manifest, bank, "sub-1", 5)
    assert len(first) == 5 and set(first) <= set(manifest.open_problem_ids)
    assert qualifying_problems(manifest, bank, "sub-1", 5) == first
    assert qualifying_problems(manifest, bank, "sub-2", 5) != first
    assert not set(first) & set(manifest.heldout_problem_ids)


def test_a_draw_from_a_manifest_the_bank_does_not_hold_is_refused(bank_arena, arena_dir):
    manifest = rotation_at(bank_arena, read_config(bank_arena), CREATED, retired=())
    with pytest.raises(RotationError, match="not in the race bank"):
        draw_race_problems(manifest, read_bank(arena_dir), "seed", 3)


def test_a_manifest_frozen_before_retirement_still_reads(bank_arena):
    """Schema 1 (no retired lists) is hashed without them, as it was frozen."""
    from shoparena.arena.competition.models import RotationManifest
    from shoparena.arena.competition.pools import read_manifest

    config = read_config(bank_arena)
    rotation_at(bank_arena, config, CREATED, retired=())
    data = orjson.loads(manifest_path(bank_arena, 0).read_bytes())
    data["schema"] = "shoparena.rotation/1"
    del data["retired_clusters"], data["retired_problem_ids"]
    old = RotationManifest.model_validate(data)
    data["sha256"] = manifest_sha256(old)
    path = manifest_path(bank_arena, 0)
    path.write_bytes(orjson.dumps(data))
    assert read_manifest(path, read_bank(bank_arena)).schema_ == "shoparena.rotation/1"
