"""The rejection-sampling stage end to end on the tiny model (CPU): leak guard, k samples through the
harness with strict scoring, strict 1.0 episodes mixed 50/50 with the corpus' train split, re-SFT."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.problems.io import write_problems
from shoparena.train.metrics import read_metrics
from shoparena.train.rs import RSStageConfig, mix_rows, run_rs
from tests.train.sampling_world import World, world


@pytest.fixture(scope="module")
def w(tmp_path_factory, small_catalog_dir) -> World:
    return world(tmp_path_factory, small_catalog_dir)


@pytest.fixture(scope="module")
def problems_file(w, tmp_path_factory):
    """An eval problem (refused by id), then every fresh problem (some refused by leak cluster)."""
    path = tmp_path_factory.mktemp("rs") / "problems.jsonl"
    eval_problem = next(p for p in w.problems if p.problem_id in w.pool_ids("eval"))
    write_problems(path, [eval_problem, *w.fresh])
    return path


def _lines(path):
    return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


def _config(w, model, problems, out, **extra) -> RSStageConfig:
    values = {
        "model": model,
        "catalog": w.catalog,
        "problems": problems,
        "corpus": w.corpus,
        "out": out,
        "similarity": "lexical",
        "max_steps": 2,
        "learning_rate": 1e-3,
        "max_length": 16000,
        "progress": False,
        "sft": {"gradient_checkpointing": False, "mask_check_rows": 1, "eval_rows": 1},
        **extra,
    }
    return RSStageConfig.from_values(values)


def test_rs_samples_the_tiny_model_and_skips_when_nothing_passes(w, tiny_model_dir, problems_file, tmp_path):
    config = _config(
        w,
        tiny_model_dir,
        problems_file,
        tmp_path / "rs",
        samples=2,
        limit=3,
        max_turns=1,
        max_new_tokens=8,
        on_empty="skip",
    )
    result = run_rs(config)
    counts = result.details["counts"]
    assert result.details["skipped"] is True and result.model_path == tiny_model_dir
    assert counts["problems"] == 3 and counts["guard_dropped_by_id"] == 1
    assert counts["sampled"] == 2 * counts["guard_kept"] and counts["passed"] == 0
    records = _lines(tmp_path / "rs" / "rollouts" / "trajectories.jsonl")
    assert {r["agent"]["spec"] for r in records} == {f"hf:{tiny_model_dir}"}
    run = json.loads((tmp_path / "rs" / "rollouts" / "run.json").read_text())
    assert run["mode"] == "strict" and run["samples"] == 2
    # (run.json redacts any option named like a token, max_new_tokens included)
    assert run["agent_options"] == {
        "max_new_tokens": "<redacted>",
        "max_turns": 1,
        "seed": 0,  # the stage's seed: every (problem, sample) draws with its own seed derived from it
        "temperature": 0.9,
        "top_p": 0.95,
    }
    assert read_metrics(result.metrics)[0]["trained"] is False
    assert "skipped" in result.report.read_text()
    with pytest.raises(ValueError, match="nothing to train on"):
        run_rs(
            config.model_copy(update={"on_empty": "fail"})
        )  # the same run directory: resumed, not resampled


def test_rs_mixes_kept_rollouts_half_and_half_with_the_corpus_and_re_sfts(
    w,
    tiny_model_dir,
    problems_file,
    tmp_path,
):
    out = tmp_path / "rs"
    result = run_rs(
        _config(w, tiny_model_dir, problems_file, out, sampler="reference:agentic", samples=2, max_steps=1)
    )
    counts = json.loads((out / "counts.json").read_text())
    assert counts["guard_dropped_by_id"] == 1 and counts["guard_dropped_by_cluster"] >= 1
    assert counts["passed"] > 0 and counts["duplicates"] > 0  # the reference agent repeats itself
    rollout_rows = _lines(out / "rollout_rows.jsonl")
    train = _lines(out / "dataset" / "train.jsonl")
    corpus_train = _lines(w.corpus / "train.jsonl")
    from_rollouts = [r for r in train if r in rollout_rows]
    from_corpus = [r for r in train if r in corpus_train]
    assert len(from_rollouts) == len(rollout_rows) == counts["rollout_rows"]
    assert len(from_corpus) == counts["corpus_rows"] == min(len(rollout_rows), len(corpus_train))
    assert len(train) == len(from_rollouts) + len(from_corpus)
    # re-SFT ran on the mix: adapter, mask proof, metrics (the sampling line first, then the SFT's)
    assert result.steps == 1 and (result.checkpoint / "adapter_config.json").is_file()
    assert (out / "sft" / "mask_check.json").is_file()
    lines = read_metrics(result.metrics)
    assert lines[0]["phase"] == "sampling" and lines[0]["rows"] == counts["rows"]
    assert [line["phase"] for line in lines[1:]] and all(line["phase"] == "sft" for line in lines[1:])
    dropped = sum(result.details["sft"]["dropped"].get(k, 0) for k in ("train:too_long",))
    assert result.details["sft"]["train_rows"] + dropped == len(train)
    resolved = json.loads(result.config.read_text())
    assert resolved["stage"] == "rs" and resolved["samples"] == 2 and resolved["top_p"] == 0.95


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 30), st.integers(0, 30), st.sampled_from([0.25, 0.5, 1.0]), st.integers(0, 5))
def test_mix_keeps_every_rollout_and_draws_the_corpus_share(n_rollouts, n_corpus, ratio, seed):
    rollouts = [{"r": i} for i in range(n_rollouts)]
    corpus = [{"c": i} for i in range(n_corpus)]
    mixed, drawn = mix_rows(rollouts, corpus, ratio, seed)
    assert drawn == min(round(n_rollouts * (1 - ratio) / ratio), n_corpus)
    assert sorted(r["r"] for r in mixed if "r" in r) == list(range(n_rollouts))
    assert len({orjson.dumps(r) for r in mixed if "c" in r}) == drawn == len(mixed) - n_rollouts
    assert mix_rows(rollouts, corpus, ratio, seed) == (mixed, drawn)


def test_rs_command_with_the_tiny_config(w, tiny_model_dir, problems_file, tmp_path):
    from pathlib import Path

    from typer.testing import CliRunner

    from shoparena.cli import app

    config = Path(__file__).resolve().parents[2] / "configs" / "tiny" / "rs.yaml"
    out = tmp_path / "rs"
    args = [
        "train",
        "rs",
        "--config",
        str(config),
        "--model",
        str(tiny_model_dir),
        "--catalog",
        str(w.catalog),
    ]
    args += ["--problems", str(problems_file), "--corpus", str(w.corpus), "--out", str(out), "--samples", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "leak guard: 4 candidates, " in result.output and "1 dropped by id" in result.output
    assert (
        f"checkpoint: {tiny_model_dir}" in result.output
    )  # nothing passed: skipped, the input model goes on
    resolved = json.loads((out / "config.resolved.json").read_text())
    assert resolved["samples"] == 1 and resolved["on_empty"] == "skip" and resolved["limit"] == 4
    result = CliRunner().invoke(app, [*args[:-2], "--samples", "0"])
    assert result.exit_code == 2 and "samples" in result.output
