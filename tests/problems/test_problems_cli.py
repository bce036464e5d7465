from __future__ import annotations

import json

import orjson
import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.index.catalog_dir import build_synthetic

runner = CliRunner()


@pytest.fixture(scope="module")
def catalog_dir(tmp_path_factory):
    """A catalogue of its own: the session one is held open, and LMDB allows one open per process."""
    out = tmp_path_factory.mktemp("problems-cli") / "cat"
    build_synthetic(out, 1500, seed=13, workers=1)
    return out


def _generate(catalog_dir, out, *extra):
    args = [
        "problems",
        "generate",
        "--catalog",
        str(catalog_dir),
        "--n",
        "12",
        "--seed",
        "3",
        "--out",
        str(out),
    ]
    return runner.invoke(app, [*args, *extra])


def test_generate_writes_a_file_and_prints_bucket_counts(catalog_dir, tmp_path):
    out = tmp_path / "tasks.jsonl"
    result = _generate(catalog_dir, out, "--variants", "2")
    assert result.exit_code == 0, result.output
    assert "wrote 24 problems" in result.stdout
    assert "product" in result.stdout and "voucher" in result.stdout
    lines = out.read_bytes().splitlines()
    assert len(lines) == 24 and all(json.loads(line)["leak_cluster_id"] for line in lines)
    again = tmp_path / "again.jsonl"
    assert _generate(catalog_dir, again, "--variants", "2").exit_code == 0
    assert again.read_bytes() == out.read_bytes()


def test_generate_refuses_web_and_unknown_buckets(catalog_dir, tmp_path):
    result = _generate(catalog_dir, tmp_path / "x.jsonl", "--buckets", "product,web")
    assert result.exit_code != 0 and "knowledge source" in result.output
    result = _generate(catalog_dir, tmp_path / "x.jsonl", "--buckets", "gadgets")
    assert result.exit_code != 0 and "unknown bucket" in result.output
    result = _generate(tmp_path, tmp_path / "x.jsonl")
    assert result.exit_code != 0 and "not a catalogue directory" in result.output


def test_validate_upstream_files_pass(upstream_dir):
    files = sorted(str(p) for p in upstream_dir.iterdir() if p.suffix in (".jsonl", ".json"))
    result = runner.invoke(app, ["problems", "validate", *files])
    assert result.exit_code == 0, result.output
    assert result.stdout.count(": ok:") == 5


def test_validate_reports_located_errors_and_fails(tmp_path):
    bad = tmp_path / "bad.jsonl"
    good = b'{"query": "Show me socks.", "reward": {"product_id": "9", "title": ["Socks"]}}'
    bad.write_bytes(good + b"\n{oops\n" + b'{"reward": {"product_id": "9", "title": ["Socks"]}}\n')
    result = runner.invoke(app, ["problems", "validate", str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:2: (line): invalid JSON" in result.output
    assert f"{bad}:3: query: required field is missing" in result.output
    assert "2 error(s): 1 valid problem(s)" in result.output


def test_suite_generation_then_tamper_fails_validation(catalog_dir, tmp_path):
    out = tmp_path / "v1.json"
    result = _generate(catalog_dir, out, "--suite", "formal", "--version", "v1")
    assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["problems", "validate", str(out)]).exit_code == 0
    clash = _generate(catalog_dir, out, "--suite", "formal", "--version", "v1", "--n", "6")
    assert clash.exit_code != 0 and "new file" in clash.output
    data = orjson.loads(out.read_bytes())
    data["problems"][0]["voucher"] = None
    out.write_bytes(orjson.dumps(data))
    result = runner.invoke(app, ["problems", "validate", str(out)])
    assert result.exit_code == 1 and "modified after it was frozen" in result.output


def test_stats_table_and_json(upstream_dir):
    path = upstream_dir / "oro_problem_suite_v3.json"
    table = runner.invoke(app, ["problems", "stats", str(path)])
    assert table.exit_code == 0 and "constraints" in table.stdout and "difficulty" in table.stdout
    data = json.loads(runner.invoke(app, ["problems", "stats", str(path), "--json"]).stdout)
    assert data["n_problems"] == 30 and data["buckets"] == {"product": 10, "shop": 10, "voucher": 10}
    assert data["difficulty"] == {"easy": 21, "medium": 9}
    assert data["constraints"]["title"] == sum(int(k) * v for k, v in data["items_per_problem"].items())


def test_help_has_examples():
    for command in ("generate", "validate", "stats"):
        result = runner.invoke(app, ["problems", command, "--help"])
        assert result.exit_code == 0 and "Examples" in result.stdout
