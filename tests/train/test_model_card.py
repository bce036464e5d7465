"""A trained checkpoint directory is a Hub-shaped model: its `README.md` model card has the Hub header
(library, base model, tags) and every stage from the base model to it, with its data and numbers; a
stage trained on top of another checkpoint lists both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.train.model_card import LINEAGE_FILE

pytest.importorskip("trl")
pytest.importorskip("peft")

TINY_SFT = Path(__file__).resolve().parents[2] / "configs" / "tiny" / "sft.yaml"


def _card(directory: Path) -> tuple[dict, str]:
    _, header, body = (directory / "README.md").read_text(encoding="utf-8").split("---\n", 2)
    return yaml.safe_load(header), body


def test_model_cards_follow_the_stages(tiny_corpus, tiny_model_dir, tmp_path):
    lora = tmp_path / "sft"
    args = ["train", "sft", "--config", str(TINY_SFT), "--corpus", str(tiny_corpus), "--model"]
    result = CliRunner().invoke(
        app, [*args, str(tiny_model_dir), "--out", str(lora), "--max-length", "4000", "--eval-rows", "1"]
    )
    assert result.exit_code == 0, result.output
    header, body = _card(lora / "adapter")
    assert header["library_name"] == "peft" and header["base_model"] == str(tiny_model_dir)
    assert {"shoparena", "sft", "lora"} <= set(header["tags"])
    manifest = json.loads((tiny_corpus / "manifest.json").read_text())
    stages = body.split("## Stages")[1].split("## Held-out")[0]
    assert f"| 1 | sft | `{tiny_model_dir}` | corpus: `{tiny_corpus}`" in stages
    assert manifest["manifest_sha256"][:16] in stages
    metrics = [json.loads(line) for line in (lora / "metrics.jsonl").read_text().splitlines()]
    assert f"| {max(m['step'] for m in metrics)} |" in stages  # the steps it trained
    assert "Not evaluated yet" in body  # no held-out row without an evaluation

    full = tmp_path / "full"  # a second stage on top of the adapter: both stages, the same base
    result = CliRunner().invoke(
        app,
        ["train", "sft", "--mode", "full", "--model", str(lora / "adapter"), "--corpus", str(tiny_corpus),
         "--out", str(full), "--max-steps", "1", "--eval-rows", "1", "--no-progress"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    header, body = _card(full / "model")
    assert header["library_name"] == "transformers" and header["base_model"] == str(tiny_model_dir)
    assert "| 1 | sft |" in body and f"| 2 | sft | `{lora / 'adapter'}`" in body
    lineage = json.loads((full / "model" / LINEAGE_FILE).read_text())
    assert [s["settings"].get("mode") for s in lineage["stages"]] == ["lora", "full"]
