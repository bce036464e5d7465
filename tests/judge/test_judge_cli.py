"""`shoparena judge` end to end on a real trajectories file, offline and through a loopback endpoint."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.judge import OfflineJudge, judge_file
from shoparena.records.score import ScoreSummary
from shoparena.records.trajectory import TrajectoryRecord
from tests.judge.conftest import build_trace
from tests.judge.loopback import ScriptedServer, verdict_text

QUALITIES = [0.1, 0.3, 0.5, 0.7, 0.9]


@pytest.fixture(scope="module")
def trajectories(judge_catalog, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("traj") / "trajectories.jsonl"
    lines = []
    for i, quality in enumerate(QUALITIES):
        record = build_trace(judge_catalog, quality)
        record = record.model_copy(
            update={"record_id": f"r{i}", "sample": i, "score": ScoreSummary(success=quality >= 0.5)}
        )
        lines.append(orjson.dumps(record.model_dump(mode="json")))
        if i == 1:
            lines.append(b'{"not": "a record"}')
            lines.append(b"{truncated")
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def read_out(path: Path) -> list[TrajectoryRecord]:
    return [TrajectoryRecord.model_validate_json(line) for line in path.read_text().splitlines()]


def test_offline_cli_judges_each_record_and_reports(trajectories, tmp_path):
    out = tmp_path / "judged.jsonl"
    rejects = tmp_path / "rejects.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "judge",
            "--input",
            str(trajectories),
            "--judge",
            "offline",
            "--out",
            str(out),
            "--rejects",
            str(rejects),
        ],
    )
    assert result.exit_code == 1, result.output  # every record judged and written; two lines were not records
    records = read_out(out)
    assert [r.judge.quality for r in records] == QUALITIES
    assert "skipped line 3" in result.output and "skipped line 4" in result.output
    assert f"2 line(s) of {trajectories} were not trajectory records; kept in {rejects}" in result.output
    kept = [orjson.loads(line) for line in rejects.read_bytes().splitlines()]
    assert [(r["line"], r["file"]) for r in kept] == [(3, str(trajectories)), (4, str(trajectories))]
    assert all(r["reason"] for r in kept)
    assert "q = 0.500" in result.output and "coeff = 0.737" in result.output
    assert "final = success rate × coeff = 0.442" in result.output  # 3/5 succeeded


def test_json_report(trajectories, tmp_path):
    out = tmp_path / "judged.jsonl"
    result = CliRunner().invoke(app, ["judge", "-i", str(trajectories), "-o", str(out), "--json"])
    assert result.exit_code == 1, result.output  # lines 3 and 4 are not records
    report = json.loads(result.stdout[: result.stdout.rindex("}") + 1])
    assert report["summary"]["gate_distribution"] == {
        "reasoned": 1,
        "analyses_results": 1,
        "cites_datum": 1,
        "compares_candidates": 1,
        "passed": 1,
    }
    assert [r["line"] for r in report["rejects"]] == [3, 4] and not report["failed"]


def test_llm_cli_with_fallback_and_breaker(trajectories, tmp_path):
    def script(body, i):
        if body["model"] == "primary":
            return "<think>hmm</think> no json today"
        return verdict_text(0.3, "analyses_results", [])

    out = tmp_path / "llm.jsonl"
    with ScriptedServer(script) as srv:
        args = ["judge", "-i", str(trajectories), "-o", str(out), "--judge", "openai:primary"]
        result = CliRunner().invoke(app, [*args, "--base-url", srv.base_url, "--fallback", "backup"])
        assert srv.models_called().count("primary") == 1
    assert result.exit_code == 1 and "were not trajectory records" in result.output, result.output
    qualities = [r.judge.quality for r in read_out(out)]
    assert qualities == [0.1, 0.3, 0.3, 0.3, 0.3]  # verification: claimed 0.3, but record 1 is code-only
    assert {r.judge.judge_model for r in read_out(out)} == {"backup"}

    with ScriptedServer(lambda body, i: (500, "{}")) as srv:
        down = tmp_path / "down.jsonl"
        args = ["judge", "-i", str(trajectories), "-o", str(down), "--judge", "openai:m"]
        result = CliRunner().invoke(app, [*args, "--base-url", srv.base_url, "--max-retries", "0"])
        assert len(srv.requests) == 3  # the breaker stops the run after three failed problems
    assert result.exit_code == 1 and "circuit breaker" in result.output
    records = read_out(down)
    assert len(records) == 5 and all(r.judge is None for r in records)  # nothing lost, nothing judged


def test_cli_errors(trajectories, tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["judge", "-i", str(tmp_path / "none.jsonl"), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2 and "no such trajectories file" in result.output
    result = runner.invoke(
        app, ["judge", "-i", str(trajectories), "-o", str(tmp_path / "o"), "--judge", "gpt"]
    )
    assert result.exit_code == 2 and "openai:MODEL" in result.output
    with pytest.raises(ValueError, match="new file"):
        judge_file(trajectories, trajectories, OfflineJudge())


def test_agents_never_import_the_judge():
    """Layering: agents, inference, eval < judge; the runner takes a judge callable."""
    package = Path(__file__).resolve().parents[2] / "shoparena"
    for path in (p for stage in ("agents", "inference", "eval") for p in (package / stage).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            assert not any(n.startswith("shoparena.judge") for n in names), path
