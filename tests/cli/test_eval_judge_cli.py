"""`shoparena eval --judge offline`: every episode judged as it finishes; q, coeff and gates reported."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems

runner = CliRunner()


def eval_judged(catalog, catalog_dir, tmp_path, agent: str, seed: int, n: int, buckets) -> dict:
    """Generate n problems, run `shoparena eval --judge offline` on them, return metrics.json's judge part."""
    problems_path = tmp_path / "problems.jsonl"
    write_problems(problems_path, ProblemGenerator(catalog, seed=seed).generate(n, buckets=buckets))
    out = tmp_path / "run"
    args = [
        "eval",
        "--catalog",
        str(catalog_dir),
        "--problems",
        str(problems_path),
        "--agent",
        agent,
        "--out",
        str(out),
        "--similarity",
        "lexical",
        "--executor",
        "inline",
        "--judge",
        "offline",
        "--quiet",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads((out / "metrics.json").read_text())["judge"]


def test_eval_judges_offline_and_reports_the_gate_distribution(small_catalog, small_catalog_dir, tmp_path):
    judge = eval_judged(
        small_catalog, small_catalog_dir, tmp_path, "reference:agentic", 5, 6, ("product", "shop", "voucher")
    )
    out = tmp_path / "run"
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert len(records) == 6 and all(r["judge"] is not None for r in records)
    qualities = [r["judge"]["quality"] for r in records]
    assert judge["judged"] == 6 and abs(judge["q"] - sum(qualities) / 6) < 1e-9
    assert sum(judge["quality_distribution"].values()) == 6
    assert sum(judge["gate_distribution"].values()) == 6
    assert "deciding gate" in (out / "report.md").read_text()
    assert "deciding gate" in (out / "report.html").read_text()
    # `shoparena judge` over the same records reports the very same summary (one function, one rounding)
    judged = runner.invoke(
        app,
        ["judge", "--input", str(out / "trajectories.jsonl"), "--out", str(tmp_path / "j.jsonl"), "--json"],
    )
    assert judged.exit_code == 0, judged.output
    assert json.loads(judged.stdout)["summary"] == judge


def test_pipeline_agent_is_judged_as_not_reasoning(small_catalog, small_catalog_dir, tmp_path):
    judge = eval_judged(small_catalog, small_catalog_dir, tmp_path, "reference:pipeline", 6, 3, ("product",))
    assert judge["quality_distribution"]["0.1"] == 3  # code emitted every call: no model reasoning
    assert judge["coeff"] < 0.5


def test_unknown_judge_spec_is_a_clear_error(small_catalog_dir, tmp_path):
    problems_path = tmp_path / "p.jsonl"
    problems_path.write_text('{"query": "a lamp", "reward": {"product_id": "1", "title": ["lamp"]}}\n')
    result = runner.invoke(
        app,
        [
            "eval",
            "--catalog",
            str(small_catalog_dir),
            "--problems",
            str(problems_path),
            "--agent",
            "reference:agentic",
            "--out",
            str(tmp_path / "r"),
            "--judge",
            "oracle",
        ],
    )
    assert result.exit_code == 2 and "judge" in result.output.lower()
