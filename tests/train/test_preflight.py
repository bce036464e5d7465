"""A training stage checks every input before it loads a model (issue 25): a Hub id offline is refused
at once (no 50 s of retries), a missing --corpus is named before the model loads, and a directory that
is not a model is called that (not "You need to have sentencepiece or tiktoken installed"). Nothing is
written to --out."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.train.preflight import hub_reachable

HUB_ID = "nobody-here/no-such-model-0"
CASES = [
    (
        ["train", "sft", "--model", HUB_ID, "--data", "{rows}"],
        f"--model {HUB_ID}: no such directory, and the Hugging Face Hub cannot be reached (offline)",
    ),
    (["train", "sft", "--model", "{model}", "--corpus", "{tmp}/nope"], "--corpus {tmp}/nope: no such file"),
    (["train", "sft", "--model", HUB_ID, "--corpus", "{tmp}/nope"], "--corpus {tmp}/nope: no such file"),
    (
        ["train", "sft", "--model", "{notmodel}", "--data", "{rows}"],
        "--model {notmodel}: the directory holds no",
    ),
    (["train", "sft", "--model", "{rows}", "--data", "{rows}"], "--model {rows}: not a directory"),
    (
        ["train", "grpo", "--model", "{model}", "--catalog", "{tmp}/nocat", "--problems", "{rows}"],
        "--catalog {tmp}/nocat: no such file",
    ),
    (["train", "kto", "--model", "{notmodel}", "--trajectories", "{rows}"], "not a checkpoint"),
]


@pytest.mark.parametrize(
    ("args", "message"),
    CASES,
    ids=["hub-offline", "corpus", "corpus-before-hub", "not-a-model", "file-as-model", "grpo-catalog", "kto"],
)
def test_a_bad_input_is_refused_before_any_model_loads(args, message, tmp_path, tiny_model_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "notmodel").mkdir()
    (tmp_path / "notmodel" / "notes.txt").write_text("not a model\n")
    (tmp_path / "rows.jsonl").write_text("{}\n")
    names = {
        "tmp": tmp_path,
        "model": tiny_model_dir,
        "notmodel": tmp_path / "notmodel",
        "rows": tmp_path / "rows.jsonl",
    }
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, [*(a.format(**names) for a in args), "--out", str(out)], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 2, result.output
    assert message.format(**names) in " ".join(result.output.split())
    assert "sentencepiece" not in result.output
    assert not out.exists()


@pytest.mark.parametrize("value", ["1", "true", "YES"])
def test_offline_switches_are_honoured(value, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert hub_reachable() is False
