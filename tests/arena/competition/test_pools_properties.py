"""The leak-cluster guard and the draws as properties: any bank (random cluster assignments, sizes and
growth), any held-out fraction, any period, any seed."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.arena.competition.pools import (
    draw_race_problems,
    heldout_count,
    plan_rotation,
    qualifying_problems,
    read_bank,
    verify_manifest,
)

START = datetime(2026, 11, 2, tzinfo=UTC)
END = START + timedelta(days=7)


BUCKETS = ("product", "shop", "web")


def bank_record(index: int, cluster: int) -> bytes:
    """A problem of leak cluster `cluster`; the cluster decides the bucket (as a generated task's does)."""
    bucket = BUCKETS[cluster % 3]
    record = {
        "query": f"task {index}",
        "reward": {"product_id": str(1000 + index), "title": [f"item {index}"]},
        "problem_id": f"{bucket}-{index:05d}",
        "bucket": bucket,
        "leak_cluster_id": f"lc-{cluster:04d}",
    }
    if bucket == "web":
        record["Knowledge_Attribute"] = "colour"
    return orjson.dumps(record) + b"\n"


def write_bank(directory: Path, clusters: list[int], start: int = 0) -> None:
    with (directory / "race_bank.jsonl").open("ab") as handle:
        handle.write(b"".join(bank_record(start + i, c) for i, c in enumerate(clusters)))


def assert_proportional(chosen: list[str], population: list[str], bucket_of) -> None:
    """Each bucket's share of `chosen` is its share of `population`, within one."""
    for bucket in {bucket_of(x) for x in population}:
        size = sum(bucket_of(x) == bucket for x in population)
        taken = sum(bucket_of(x) == bucket for x in chosen)
        assert abs(taken - len(chosen) * size / len(population)) <= 1, (bucket, taken, size)


# Cluster assignments with at least two distinct clusters (a rotation needs one per side).
assignments = st.lists(st.integers(0, 30), min_size=2, max_size=60).filter(lambda cs: len(set(cs)) >= 2)
fractions = st.floats(min_value=0.01, max_value=0.99, allow_nan=False)


@settings(max_examples=80, deadline=None)
@given(
    clusters=assignments,
    growth=st.lists(st.integers(0, 40), max_size=20),
    fraction=fractions,
    period=st.integers(0, 10_000),
)
def test_the_guard_holds_at_every_rotation(clusters, growth, fraction, period):
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        write_bank(directory, clusters)
        bank = read_bank(directory)
        manifest = plan_rotation(bank, period, START, END, fraction)
        write_bank(directory, growth, start=len(clusters))  # the bank grows during the period
        grown = read_bank(directory)
    verify_manifest(manifest, grown)
    cluster_of = bank.cluster_of
    open_ids, held_ids = set(manifest.open_problem_ids), set(manifest.heldout_problem_ids)
    assert not open_ids & held_ids
    assert open_ids | held_ids == set(cluster_of)  # the bank as of the manifest, not the grown one
    assert {cluster_of[p] for p in open_ids} == set(manifest.open_clusters)
    assert {cluster_of[p] for p in held_ids} == set(manifest.heldout_clusters)
    assert not set(manifest.open_clusters) & set(manifest.heldout_clusters)  # never split
    distinct = len(set(clusters))
    assert len(manifest.heldout_clusters) == heldout_count(distinct, fraction)
    assert 1 <= len(manifest.heldout_clusters) <= distinct - 1
    assert plan_rotation(bank, period, START, END, fraction) == manifest  # deterministic
    every = manifest.open_clusters + manifest.heldout_clusters
    assert_proportional(manifest.heldout_clusters, every, lambda c: BUCKETS[int(c[3:]) % 3])


@settings(max_examples=80, deadline=None)
@given(clusters=assignments, period=st.integers(0, 100), seed=st.text(max_size=20), n=st.integers(1, 70))
def test_draws_are_deterministic_subsets_of_their_partition(clusters, period, seed, n):
    with tempfile.TemporaryDirectory() as tmp:
        write_bank(Path(tmp), clusters)
        bank = read_bank(Path(tmp))
    manifest = plan_rotation(bank, period, START, END, 0.5)
    draw = draw_race_problems(manifest, bank, seed, n)
    assert len(draw.problem_ids) == min(n, len(manifest.heldout_problem_ids))
    assert len(set(draw.problem_ids)) == len(draw.problem_ids)
    assert set(draw.problem_ids) <= set(manifest.heldout_problem_ids)
    assert set(draw.race_clusters) <= set(manifest.heldout_clusters)
    assert draw_race_problems(manifest, bank, seed, n) == draw
    bucket_of = {p.problem_id: p.bucket for p in bank.problems}.get
    assert_proportional(draw.problem_ids, manifest.heldout_problem_ids, bucket_of)
    assert draw_race_problems(manifest, bank, seed, n + 1).problem_ids[:n] == draw.problem_ids
    qualifying = qualifying_problems(manifest, bank, seed, n)
    assert set(qualifying) <= set(manifest.open_problem_ids)
    assert len(qualifying) == min(n, len(manifest.open_problem_ids))
    assert qualifying_problems(manifest, bank, seed, n) == qualifying
    assert_proportional(qualifying, manifest.open_problem_ids, bucket_of)


@settings(max_examples=60, deadline=None)
@given(
    clusters=assignments,
    steps=st.lists(
        st.tuples(st.lists(st.integers(0, 60), max_size=12), st.integers(0, 4), st.text(max_size=8)),
        min_size=1,
        max_size=6,
    ),
    fraction=fractions,
)
def test_sides_only_move_one_way_and_no_raced_cluster_is_drawn_again(clusters, steps, fraction):
    """Period after period — the bank growing, races drawing — a cluster goes new → held out → retired
    or new → open, never back: no draw takes a cluster an earlier race took, no open cluster is ever
    held out, no retired one open or held out."""
    retired: set[str] = set()
    opened: set[str] = set()
    held: set[str] = set()
    size = len(clusters)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        write_bank(directory, clusters)
        for period, (growth, races, seed) in enumerate(steps):
            bank = read_bank(directory)
            manifest = plan_rotation(
                bank, period, START, END, fraction, retired=retired, placed=(opened, held - opened)
            )
            verify_manifest(manifest, bank)
            assert not set(manifest.heldout_clusters) & (opened | retired)
            assert not set(manifest.open_clusters) & retired
            assert (held - retired) <= set(manifest.heldout_clusters)
            assert opened <= set(manifest.open_clusters)
            opened |= set(manifest.open_clusters)
            held |= set(manifest.heldout_clusters)
            for race in range(races):
                draw = draw_race_problems(manifest, bank, f"{seed}:{race}", 2, retired)
                assert not set(draw.race_clusters) & retired
                retired |= set(draw.race_clusters)
            write_bank(directory, growth, start=size)
            size += len(growth)
