"""Miner files that try to break the record, run through `shoparena eval --agent file:` and `run_eval`:
every episode is written with its calls, small, and says what was refused or cut and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.eval.config import EvalConfig
from shoparena.eval.runner import run_eval
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems

MINERS = Path(__file__).resolve().parents[1] / "miners"
pytestmark = pytest.mark.usefixtures("sandbox_ready")  # miner files run in the sandbox
MAX_RECORD_BYTES = 2_000_000


@pytest.fixture(scope="module")
def problems_file(small_catalog, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "problems.jsonl"
    write_problems(path, ProblemGenerator(small_catalog, seed=8).generate(2, buckets=("product",)))
    return path


def records(out: Path) -> list[tuple[int, dict]]:
    lines = (out / "trajectories.jsonl").read_bytes().splitlines()
    return [(len(line), json.loads(line)) for line in lines]


def eval_inline(catalog_dir, problems_file, miner: str, out: Path) -> list[tuple[int, dict]]:
    run_eval(
        EvalConfig(
            catalog=catalog_dir,
            problems=problems_file,
            agent=f"file:{MINERS / miner}",
            out=out,
            timeout=60,
            executor="inline",
            similarity="lexical",
            limit=1,
            bootstrap=10,
        )
    )
    return records(out)


def test_unwritable_arguments_and_claims_keep_the_calls_and_say_why(
    small_catalog_dir, problems_file, tmp_path, capfd
):
    """Through the CLI and a worker process, where such an episode used to become 'worker crashed'."""
    out = tmp_path / "run"
    args = ["eval", "--catalog", str(small_catalog_dir), "--problems", str(problems_file)]
    args += ["--agent", f"file:{MINERS / 'unwritable_miner.py'}", "--out", str(out)]
    args += ["--executor", "process", "--similarity", "lexical", "--quiet"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    written = records(out)
    assert len(written) == 2
    for size, record in written:
        assert size < MAX_RECORD_BYTES and record["outcome"]["error"] is None
        calls = record["calls"]
        assert [c["name"] for c in calls] == ["find_product"] * 3 + ["recommend_product", "terminate"]
        assert "q holds a lone surrogate" in calls[0]["error"] and calls[0]["arguments"] == {
            "q": "black \ufffd shirt"
        }
        assert "q[0][0][0]" in calls[1]["error"] and "nested deeper than 32 levels" in calls[1]["error"]
        assert all("unusable parts replaced" in c["cut"] for c in (calls[0], calls[1], calls[4]))
        assert calls[2]["error"] is None and calls[3]["error"] is None
        assert "why[0][0]" in calls[4]["error"] and calls[4]["origin"] == "code"
        [note] = record["outcome"]["notes"]
        assert "replayed on the episode with origin 'code' (refused: terminate: arguments rejected" in note
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err + result.output


def test_calls_after_the_end_are_refused_and_stop_being_stored(small_catalog_dir, problems_file, tmp_path):
    [(size, record)] = eval_inline(small_catalog_dir, problems_file, "flooding_miner.py", tmp_path / "run")
    assert size < MAX_RECORD_BYTES
    calls = record["calls"]
    assert [c["counted"] for c in calls] == [True] + [False] * 5 and record["outcome"][
        "terminated"
    ] == "failure"
    assert all("the episode has ended" in c["error"] and c["arguments"] is None for c in calls[1:])
    assert "arguments of 900,018 bytes (over the 16,384-byte limit)" in calls[1]["cut"]
    assert "145 later call(s) after the end were refused and not recorded" in calls[-1]["cut"]
    assert len(record["messages"]) == 1 + 2 * 6


def test_a_bloated_claim_is_refused_and_quoted_short(small_catalog_dir, problems_file, tmp_path):
    [(size, record)] = eval_inline(small_catalog_dir, problems_file, "bloating_miner.py", tmp_path / "run")
    assert size < 100_000
    calls = record["calls"]
    assert [c["name"] for c in calls] == ["find_product", "recommend_product"]
    assert "arguments of 600,018 bytes exceed the limit of 16,384 bytes" in calls[1]["error"]
    assert record["outcome"]["recommended_product_ids"] is None
    [note] = record["outcome"]["notes"]
    assert "(600,019 chars)" in note and len(note) < 1000


def test_steps_over_the_size_cap_are_not_read(small_catalog_dir, problems_file, tmp_path):
    [(size, record)] = eval_inline(small_catalog_dir, problems_file, "huge_steps_miner.py", tmp_path / "run")
    assert size < 100_000 and record["calls"] == []
    assert record["outcome"]["error"].startswith("agent_main returned more than 4 MiB of steps")
