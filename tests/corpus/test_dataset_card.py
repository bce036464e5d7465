"""A built corpus is a Hugging Face dataset directory: `datasets.load_dataset(DIR)` reads the splits the
corpus names (train, eval — not `test`, and never axis_b/rejects) row for row, through the dataset card
`README.md`, whose YAML header names the files and whose body states the filter, the counts per reject
reason and the leak guard."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import yaml
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.corpus.export import read_parquet_rows
from shoparena.corpus.models import ALL_REASONS
from tests.corpus.conftest import DISTINCT_QUERIES, openai_row, write_jsonl
from tests.jsonl import read_jsonl

datasets = pytest.importorskip("datasets")


def _build(tmp_path: Path, *args: str) -> Path:
    rows = [
        openai_row(query=q, problem_id=f"p{i}", bucket=["product", "shop"][i % 2])
        for i, q in enumerate(DISTINCT_QUERIES)
    ]
    rows.append(openai_row(query=DISTINCT_QUERIES[1], problem_id="p1", quality=0.1))  # below the gate
    rows.append(openai_row(query=DISTINCT_QUERIES[2], problem_id="p2", recommend=None))  # no recommendation
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "corpus"
    result = CliRunner().invoke(app, ["corpus", "build", "-i", str(source), "-o", str(out), *args])
    assert result.exit_code == 0, result.output
    return out


def _card(out: Path) -> tuple[dict, str]:
    text = (out / "README.md").read_text(encoding="utf-8")
    _, header, body = text.split("---\n", 2)
    return yaml.safe_load(header), body


def test_load_dataset_reads_the_named_splits_row_for_row(tmp_path):
    out = _build(tmp_path, "--eval-size", "2")
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    loaded = datasets.load_dataset(str(out))
    assert set(loaded) == {"train", "eval"}
    for split in ("train", "eval"):
        expected = read_jsonl(out / f"{split}.jsonl")
        assert loaded[split].num_rows == len(expected) == manifest["counts"][split] > 0
        assert loaded[split]["messages"] == [row["messages"] for row in expected]
        assert loaded[split]["tools"] == [row["tools"] for row in expected]
        assert [m["problem_id"] for m in loaded[split]["metadata"]] == [
            row["metadata"]["problem_id"] for row in expected
        ]
    files = {split: str(out / f"{split}.parquet") for split in ("train", "eval")}
    parquet = datasets.load_dataset("parquet", data_files=files)  # as the card says
    assert parquet["train"].num_rows == len(read_parquet_rows(out / "train.parquet"))
    assert "README.md" in manifest["report_files"]


def test_the_card_states_the_filter_the_reasons_and_the_leak_guard(tmp_path):
    out = _build(tmp_path, "--eval-size", "2", "--min-quality", "0.3")
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    header, body = _card(out)
    [default] = header["configs"]
    assert default["data_files"] == [
        {"split": "train", "path": "train.jsonl"},
        {"split": "eval", "path": "eval.jsonl"},
    ]
    assert "text-generation" in header["task_categories"]
    assert "judge quality ≥ 0.3" in body
    for reason in ALL_REASONS:  # every reason with its count, as the manifest has it
        assert f"| `{reason}` | {manifest['reasons'].get(reason, 0):,} |" in body
    assert manifest["reasons"]["judge_below_threshold"] >= 1 and manifest["reasons"]["recommend_count"] >= 1
    assert "Leak guard" in body and manifest["eval_problems_sha256"] in body
    assert f"| train | {manifest['counts']['train']:,} |" in body


def test_an_empty_eval_split_is_left_out_of_the_card(tmp_path):
    out = _build(tmp_path, "--eval-size", "0", "--no-parquet")
    header, _ = _card(out)
    assert [c["config_name"] for c in header["configs"]] == ["default"]
    assert set(datasets.load_dataset(str(out))) == {"train"}
