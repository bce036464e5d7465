"""KTO end to end on the tiny model (CPU): strictly scored teacher trajectories → per-turn labelled
examples → TRL's KTOTrainer with an attention-only LoRA → adapter; the recommend-rate probe stops
training at the first probe when the rate is below the threshold (the random tiny model never
recommends) and never stops at threshold 0."""

from __future__ import annotations

import json

import orjson
import pytest

from shoparena.eval.config import EvalConfig
from shoparena.eval.runner import run_eval
from shoparena.problems.io import write_problems
from shoparena.train.kto import KTOStageConfig, run_kto
from shoparena.train.kto_data import kto_examples
from shoparena.train.metrics import read_metrics
from shoparena.train.rollouts import read_records
from tests.train.events import scalars
from tests.train.sampling_world import World, world


@pytest.fixture(scope="module")
def w(tmp_path_factory, small_catalog_dir) -> World:
    return world(tmp_path_factory, small_catalog_dir)


@pytest.fixture(scope="module")
def teacher_run(w, tmp_path_factory):
    """Strictly scored reference-agent episodes over fresh problems: the teacher trajectories."""
    root = tmp_path_factory.mktemp("kto-teacher")
    problems = root / "problems.jsonl"
    write_problems(problems, w.fresh[:4])
    run_eval(
        EvalConfig(
            catalog=w.catalog,
            problems=problems,
            agent="reference:agentic",
            out=root / "run",
            executor="inline",
            similarity="lexical",
            mode="strict",
            bootstrap=0,
        )
    )
    probe = root / "probe.jsonl"
    write_problems(probe, w.fresh[4:6])
    return root / "run" / "trajectories.jsonl", probe


def _records(path):
    return [(f"{path}:{i}", r) for i, r in enumerate(read_records(path), start=1)]


def test_examples_are_assistant_turns_labelled_by_strict_score(teacher_run, tiny_tokenizer, w):
    trajectories, _ = teacher_run
    records = _records(trajectories)
    upstream = _records(w.run / "trajectories.jsonl")[:1]  # scored in upstream mode: refused
    data = kto_examples(records + upstream, tiny_tokenizer)
    assert [r.reason for r in data.rejects] == ["not_strict"]
    assert data.episodes == len(records)
    by_record = {r["record_id"]: r for _, r in records}
    for example in data.examples:
        record = by_record[example.record_id]
        assert example.label is (record["score"]["success"] is True and record["score"]["rule"] >= 1.0)
        # the prompt ends with the generation prompt; the completion is one assistant turn, nothing after
        assert example.prompt.endswith("<|im_start|>assistant\n")
        assert example.completion.endswith("<|im_end|>")
        assert "<|im_start|>" not in example.completion and "<tool_response>" not in example.completion
    assert data.desirable > 0
    turns = sum(m["role"] == "assistant" for _, r in records for m in r["messages"])
    assert len(data.examples) == turns


def _config(tmp_path, model, trajectories, probe, threshold, **extra):
    return KTOStageConfig(
        model=model,
        trajectories=[trajectories],
        out=tmp_path / "kto",
        catalog=extra.pop("catalog"),
        probe_problems=probe,
        probe_limit=2,
        probe_every=1,
        probe_threshold=threshold,
        probe_max_turns=1,
        probe_max_new_tokens=4,
        max_steps=2,
        limit=3,
        max_length=4096,
        gradient_checkpointing=False,
        progress=False,
        **extra,
    )


def test_kto_stops_at_the_first_probe_below_the_threshold(tmp_path, tiny_model_dir, teacher_run, w):
    trajectories, probe = teacher_run
    result = run_kto(_config(tmp_path, tiny_model_dir, trajectories, probe, 0.9, catalog=w.catalog))
    assert result.steps == 1  # stopped right after the first probe
    assert result.details["probe"]["stopped_at"] == 1
    assert result.details["probe"]["restored_to"] == 0
    lines = read_metrics(result.metrics)
    probes = [line for line in lines if "probe/recommend_rate" in line]
    assert probes == [
        {
            "stage": "kto",
            "step": 1,
            "probe/recommend_rate": 0.0,
            "probe/episodes": 2,
            "probe/threshold": 0.9,
            "probe/stop": True,
        }
    ]
    assert any("loss" in line for line in lines)
    # the probe ran real episodes through the harness, in eval mode, strictly scored
    probe_records = [
        orjson.loads(x)
        for x in (tmp_path / "kto/probes/step-000001/trajectories.jsonl").read_bytes().splitlines()
    ]
    assert len(probe_records) == 2 and {r["scoring_mode"] for r in probe_records} == {"strict"}
    # the saved adapter is the restored one (step 0: LoRA B is zero, so it is the input model)
    from safetensors.torch import load_file

    weights = load_file(str(result.checkpoint / "adapter_model.safetensors"))
    assert all(float(v.abs().sum()) == 0.0 for k, v in weights.items() if "lora_B" in k)
    adapter = json.loads((result.checkpoint / "adapter_config.json").read_text())
    assert (
        sorted(adapter["target_modules"]) == ["k_proj", "o_proj", "q_proj", "v_proj"] and adapter["r"] == 16
    )
    report = result.report.read_text()
    assert "stopped early" in report
    resolved = json.loads(result.config.read_text())
    assert resolved["beta"] == 0.02 and resolved["learning_rate"] == 5e-6


def test_kto_runs_on_when_the_threshold_is_zero(tmp_path, tiny_model_dir, teacher_run, w):
    trajectories, probe = teacher_run
    result = run_kto(
        _config(tmp_path, tiny_model_dir, trajectories, probe, 0.0, catalog=w.catalog, learning_rate=1e-2)
    )
    assert result.steps == 2
    assert result.details["probe"]["stopped_at"] is None
    rates = [line for line in read_metrics(result.metrics) if "probe/recommend_rate" in line]
    assert [r["step"] for r in rates] == [1, 2] and not any(r["probe/stop"] for r in rates)
    from safetensors.torch import load_file

    weights = load_file(str(result.checkpoint / "adapter_model.safetensors"))
    assert any(float(v.abs().sum()) > 0 for k, v in weights.items() if "lora_B" in k)  # it trained
    assert result.tokens > 0 and result.details["tokens_per_s"] > 0
    # the trained adapter runs as an agent (base + adapter), as `shoparena eval --agent hf:DIR` would
    run = run_eval(
        EvalConfig(
            catalog=w.catalog,
            problems=probe,
            agent=f"hf:{result.checkpoint}",
            out=tmp_path / "eval",
            executor="inline",
            similarity="lexical",
            limit=1,
            options={"max_new_tokens": 4, "max_turns": 1},
            bootstrap=0,
        )
    )
    assert run.episodes_run == 1


def test_kto_refuses_trajectories_without_strict_scores(tmp_path, tiny_model_dir, w):
    with pytest.raises(ValueError, match="no example could be made"):
        run_kto(
            KTOStageConfig(
                model=tiny_model_dir,
                trajectories=[w.run / "trajectories.jsonl"],
                out=tmp_path / "k",
                progress=False,
            )
        )
    rejects = [orjson.loads(x) for x in (tmp_path / "k" / "kto_rejects.jsonl").read_bytes().splitlines()]
    assert rejects and {r["reason"] for r in rejects} == {"not_strict"}


def test_kto_command_with_the_tiny_config(tmp_path, tiny_model_dir, teacher_run, w):
    from pathlib import Path

    from typer.testing import CliRunner

    from shoparena.cli import app

    trajectories, probe = teacher_run
    config = Path(__file__).resolve().parents[2] / "configs" / "tiny" / "kto.yaml"
    out = tmp_path / "kto"
    args = ["train", "kto", "--config", str(config), "--model", str(tiny_model_dir)]
    args += ["--trajectories", str(trajectories), "--catalog", str(w.catalog), "--probe-problems", str(probe)]
    result = CliRunner().invoke(app, [*args, "--out", str(out), "--report-to", "tensorboard"])
    assert result.exit_code == 0, result.output
    assert "steps: 1" in result.output and str(out / "adapter") in result.output
    assert "stopped early" in (out / "report.md").read_text()
    # --report-to reaches TRL's KTOTrainer: its TensorBoard events land in OUT/tensorboard/<run>
    pytest.importorskip("tensorboard")
    assert "train/loss" in scalars(out / "tensorboard")
    no_catalog = [a for a in args if a not in ("--catalog", str(w.catalog))]
    result = CliRunner().invoke(app, [*no_catalog, "--out", str(tmp_path / "k2")])
    assert result.exit_code == 2 and "--catalog" in result.output
