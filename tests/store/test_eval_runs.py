"""The store over real eval runs: both reference agents through `run_eval` with the offline judge."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from rich.console import Console

from shoparena.eval.config import EvalConfig
from shoparena.eval.run_dir import TRAJECTORIES_FILE
from shoparena.eval.runner import run_eval
from shoparena.judge import make_judge
from shoparena.problems.generator import ProblemGenerator
from shoparena.records.trajectory import TrajectoryRecord
from shoparena.store import RecordFilter, open_store
from shoparena.store.demo import store_runs
from shoparena.store.records import canonical_bytes


def canonical_lines(run_dirs) -> bytes:
    """The runs' records in canonical form (the runner splices score and judge onto the end of each
    line, so its key order differs; the record, and so the content hash, is the same)."""
    out = b""
    for run_dir in run_dirs:
        for line in (run_dir / TRAJECTORIES_FILE).read_bytes().splitlines():
            out += canonical_bytes(TrajectoryRecord.model_validate_json(line)) + b"\n"
    return out


@pytest.fixture(scope="module")
def run_dirs(small_catalog, small_catalog_dir, tmp_path_factory):
    problems = ProblemGenerator(small_catalog, seed=19).generate(6)
    out = []
    for variant in ("pipeline", "agentic"):
        run_dir = tmp_path_factory.mktemp("runs") / variant
        judge = make_judge("offline")
        try:
            run_eval(
                EvalConfig(
                    catalog=small_catalog_dir,
                    problems=problems,
                    agent=f"reference:{variant}",
                    out=run_dir,
                    samples=2,
                    executor="inline",
                    similarity="lexical",
                ),
                judge=judge,
            )
        finally:
            judge.close()
        out.append(run_dir)
    return out


def test_export_returns_the_runners_bytes(store, run_dirs, tmp_path):
    report = store.ingest_paths(run_dirs)
    assert (report.inserted, report.rejected) == (24, 0)
    out = tmp_path / "all.jsonl"
    assert store.export(out) == 24
    assert out.read_bytes() == canonical_lines(run_dirs)
    pipeline = tmp_path / "pipeline.jsonl"
    store.export(pipeline, RecordFilter(agent="reference:pipeline"))
    assert pipeline.read_bytes() == canonical_lines(run_dirs[:1])
    assert [r.record_id for r in store.records(RecordFilter(success=True))] == [
        r.record_id
        for r in map(TrajectoryRecord.model_validate_json, canonical_lines(run_dirs).splitlines())
        if r.score.success
    ]
    stats = store.stats()
    assert {g.key for g in stats.by_agent} == {r.agent.agent_id for r in store.records()}
    assert all(g.mean_quality is not None for g in stats.by_agent)


def test_the_demo_stage_stores_twice_and_exports(run_dirs, tmp_path):
    console = Console(record=True, width=120)
    result = store_runs(run_dirs, tmp_path / "demo", console)
    assert (result.first.inserted, result.again.inserted, result.again.duplicates) == (24, 0, 24)
    assert result.jsonl.read_bytes() == canonical_lines(run_dirs)
    assert pq.read_table(result.parquet).num_rows == 24
    text = console.export_text()
    assert "ingested 24 new" in text and "24 duplicate (idempotent)" in text
    with open_store(tmp_path / "demo" / "shoparena.db") as reopened:
        assert reopened.count() == 24
