"""`--report-to none|tensorboard|wandb` on every training stage: TRL's own `report_to` for the TRL stages
(its TensorBoard callback pointed at OUT/tensorboard), the stage's own writer for hand-written loops
(`--mode full`), wandb offline; metrics.jsonl is written either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.train.pipeline import PipelineConfig, PipelineStage, _fingerprint, stage_config
from tests.train.events import scalars

pytest.importorskip("trl")
pytest.importorskip("tensorboard")

TINY_SFT = Path(__file__).resolve().parents[2] / "configs" / "tiny" / "sft.yaml"


def metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_lora_sft_reports_to_tensorboard_through_trl(tiny_corpus, tiny_model_dir, tmp_path):
    out = tmp_path / "sft"
    args = ["train", "sft", "--config", str(TINY_SFT), "--corpus", str(tiny_corpus), "--model"]
    args += [str(tiny_model_dir), "--out", str(out), "--max-length", "4000", "--report-to", "tensorboard"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    logged = scalars(out / "tensorboard")
    assert [step for step, _ in logged["train/loss"]] == [1, 2]  # TRL's own names
    losses = [m["loss"] for m in metrics(out) if "loss" in m]
    assert [round(v, 4) for _, v in logged["train/loss"]] == [round(v, 4) for v in losses]
    assert "train/learning_rate" in logged
    assert not (out / "trainer").exists()  # the scratch dir TRL would have written into is gone


def test_full_sft_loop_reports_to_tensorboard(tiny_corpus, tiny_model_dir, tmp_path):
    out = tmp_path / "full"
    result = CliRunner().invoke(
        app,
        ["train", "sft", "--mode", "full", "--model", str(tiny_model_dir), "--corpus", str(tiny_corpus),
         "--out", str(out), "--max-steps", "2", "--logging-steps", "1", "--no-progress",
         "--report-to", "tensorboard"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    logged = scalars(out / "tensorboard")
    lines = [m for m in metrics(out) if "loss" in m]
    assert [s for s, _ in logged["train/loss"]] == [m["step"] for m in lines] == [1, 2]
    assert "eval/loss" in logged  # the held-out loss after training


def test_wandb_runs_offline_into_the_stage_directory(tiny_corpus, tiny_model_dir, tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_DIR", "WANDB_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))  # no account: offline by default
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "wb"
    result = CliRunner().invoke(
        app,
        ["train", "sft", "--mode", "full", "--model", str(tiny_model_dir), "--corpus", str(tiny_corpus),
         "--out", str(out), "--max-steps", "1", "--no-progress", "--report-to", "wandb"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    runs = list((out / "wandb").rglob("offline-run-*/run-*.wandb"))
    assert len(runs) == 1 and runs[0].stat().st_size > 0
    assert metrics(out)


@pytest.mark.parametrize(
    "command",
    [
        ["train", "sft"],
        ["train", "rs"],
        ["train", "teacher"],
        ["train", "kto"],
        ["train", "grpo"],
        ["train", "prm"],
        ["train", "pipeline"],
        ["train", "proof"],
    ],
)
def test_every_training_command_takes_report_to(command, tmp_path):
    # an unknown backend is refused by the option's type (exit 2) before anything runs
    result = CliRunner().invoke(app, [*command, "--out", str(tmp_path / "x"), "--report-to", "mlflow"])
    assert result.exit_code == 2 and "mlflow" in result.output
    assert not (tmp_path / "x").exists()
    assert "tensorboard" in CliRunner().invoke(app, [*command, "--help"]).output


def test_the_pipeline_hands_report_to_to_each_stage_without_retraining(tmp_path, tiny_model_dir, monkeypatch):
    def built(report_to: str):
        config = PipelineConfig(
            corpus=tmp_path / "corpus", catalog=tmp_path / "cat", problems=tmp_path / "p.jsonl",
            stages=[PipelineStage(stage="sft")], report_to=report_to,
        )  # fmt: skip
        (tmp_path / "out").mkdir(exist_ok=True)
        return stage_config(config, config.stages[0], tiny_model_dir, tmp_path / "out" / "01-sft", [])

    from shoparena.train import pipeline

    monkeypatch.setattr(pipeline, "probe_file", lambda config, out: out / "probe.jsonl")  # no corpus needed
    tensorboard, none = built("tensorboard"), built("none")
    assert tensorboard.report_to == "tensorboard" and none.report_to == "none"
    assert _fingerprint(tensorboard) == _fingerprint(none)  # reporting elsewhere retrains nothing
