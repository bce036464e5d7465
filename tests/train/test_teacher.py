"""The teacher stage end to end on the tiny model (CPU): a reference-agent teacher through the harness
behind the leak guard, strictly scored, 1.0 episodes kept, voucher rows ×3, continued SFT."""

from __future__ import annotations

import json
from collections import Counter

import orjson
import pytest

from shoparena.index.catalog_dir import open_catalog
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from shoparena.train.metrics import read_metrics
from shoparena.train.teacher import TeacherStageConfig, run_teacher, upsample
from tests.train.sampling_world import World, world


@pytest.fixture(scope="module")
def w(tmp_path_factory, small_catalog_dir) -> World:
    return world(tmp_path_factory, small_catalog_dir)


def _lines(path):
    return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


def test_teacher_rollouts_strictly_scored_vouchers_upsampled_then_sft(w, tiny_model_dir, tmp_path):
    backend = open_catalog(w.catalog)
    try:  # tasks the corpus has never seen, vouchers among them
        new = ProblemGenerator(backend, seed=21).generate(6, ["voucher"])
    finally:
        backend.close()
    problems = tmp_path / "problems.jsonl"
    write_problems(problems, [*w.fresh, *new])
    out = tmp_path / "teacher"
    config = TeacherStageConfig.from_values(
        {
            "teacher": "reference:agentic",
            "model": tiny_model_dir,
            "catalog": w.catalog,
            "problems": problems,
            "corpus": w.corpus,
            "out": out,
            "similarity": "lexical",
            "max_steps": 1,
            "learning_rate": 1e-3,
            "max_length": 16000,
            "progress": False,
            "sft": {"gradient_checkpointing": False, "mask_check_rows": 1, "eval_rows": 1},
        }
    )
    assert (config.samples, config.temperature, config.voucher_upsample) == (1, 0.0, 3)
    result = run_teacher(config)
    counts = json.loads((out / "counts.json").read_text())
    guard = json.loads((out / "guard.json").read_text())["counts"]
    assert guard["dropped_by_cluster"] > 0 and counts["sampled"] == guard["kept"]
    # every teacher episode is kept in the run, strictly scored (KTO's input); only 1.0 ones became rows
    trajectories = _lines(out / "rollouts" / "trajectories.jsonl")
    assert result.details["trajectories"] == str(out / "rollouts" / "trajectories.jsonl")
    assert {r["scoring_mode"] for r in trajectories} == {"strict"}
    rows = _lines(out / "rollout_rows.jsonl")
    assert len(rows) == counts["teacher_rows"] == sum(r["score"]["success"] for r in trajectories) > 0
    # the voucher bucket three times over, every other row once
    train = _lines(out / "dataset" / "train.jsonl")
    copies = Counter(row["metadata"]["record_id"] for row in train)
    for row in rows:
        expected = 3 if row["metadata"]["bucket"] == "voucher" else 1
        assert copies[row["metadata"]["record_id"]] == expected
    assert counts["voucher_rows"] == sum(r["metadata"]["bucket"] == "voucher" for r in rows) > 0
    assert len(train) == len(rows) + 2 * counts["voucher_rows"]
    # continued SFT from --model
    assert result.steps == 1 and (result.checkpoint / "adapter_config.json").is_file()
    base = json.loads((result.checkpoint / "adapter_config.json").read_text())["base_model_name_or_path"]
    assert base == str(tiny_model_dir.resolve())
    lines = read_metrics(result.metrics)
    assert lines[0]["phase"] == "sampling" and lines[-1]["phase"] == "sft"
    assert "voucher" in result.report.read_text()


def test_upsample_repeats_only_the_bucket():
    rows = [{"metadata": {"bucket": b, "i": i}} for i, b in enumerate(["voucher", "shop", "voucher", None])]
    out, hits = upsample(rows, "voucher", 3, seed=1)
    assert hits == 2 and len(out) == 8
    assert Counter(r["metadata"]["i"] for r in out) == {0: 3, 1: 1, 2: 3, 3: 1}
    assert upsample(rows, "voucher", 3, seed=1) == (out, hits)


def test_sample_only_writes_the_training_set_and_trains_nothing(w, tiny_model_dir, tmp_path, monkeypatch):
    problems = tmp_path / "problems.jsonl"
    write_problems(problems, w.fresh)
    values = {
        "teacher": "reference:agentic",
        "model": tiny_model_dir,
        "catalog": w.catalog,
        "problems": problems,
        "corpus": w.corpus,
        "out": tmp_path / "teacher",
        "similarity": "lexical",
        "sample_only": True,
        "progress": False,
    }
    result = run_teacher(TeacherStageConfig.from_values(values))
    assert result.model_path == tiny_model_dir and result.steps == 0
    assert not (tmp_path / "teacher" / "sft").exists()
    train = _lines(tmp_path / "teacher" / "dataset" / "train.jsonl")
    assert len(train) == result.details["counts"]["train_rows"] > 0
    assert "sample only" in result.report.read_text()
    monkeypatch.setenv("WORLD_SIZE", "2")  # under accelerate/torchrun every rank would sample: refused
    with pytest.raises(ValueError, match="--sample-only"):
        run_teacher(TeacherStageConfig.from_values({**values, "out": tmp_path / "t2"}))
