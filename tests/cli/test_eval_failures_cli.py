"""`shoparena eval` when the agent cannot start: a typo stops the command with one line in the
project's words and leaves the run directory free for the corrected command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems

runner = CliRunner()


@pytest.fixture(scope="module")
def problems_path(small_catalog, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("failures-cli") / "problems.jsonl"
    write_problems(path, ProblemGenerator(small_catalog, seed=5).generate(2, buckets=("product",)))
    return path


def eval_cli(catalog: Path, problems: Path, out: Path, agent: str, *extra: str):
    args = ["eval", "--catalog", str(catalog), "--problems", str(problems), "--agent", agent]
    args += ["--out", str(out), "--executor", "inline", "--similarity", "lexical", "--bootstrap", "0"]
    return runner.invoke(app, [*args, "--quiet", *extra])


def text(result) -> str:
    return " ".join(result.output.split())


# -- a typo in the agent ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "extra", "message"),
    [
        ("bogus:x", (), "error: agent spec 'bogus:x': unknown kind 'bogus'; use one of"),
        (
            "reference:pipeline",
            ("--option", "foo=1"),
            "error: agent reference:pipeline takes no option 'foo'; its options: protocol, seed",
        ),
        (
            "reference:agentic",
            ("--option", "foo=1", "--option", "bar=2"),
            "error: agent reference:agentic takes no options 'bar', 'foo'; its options: protocol, "
            "max_parallel_calls, seed",
        ),
        (
            "openai:gpt-x",
            ("--option", "foo=1"),
            "error: agent openai:gpt-x takes no option 'foo'; its options:",
        ),
        ("file:/no/such/miner.py", (), "error: miner file '/no/such/miner.py' does not exist"),
        (
            "hf:/no/such/dir",
            (),
            "error: hf:/no/such/dir: no such directory (hf: takes a local checkpoint or LoRA adapter directory)",
        ),
    ],
)
def test_a_typo_in_the_agent_leaves_nothing_and_the_corrected_command_runs(
    small_catalog_dir, problems_path, tmp_path, agent, extra, message
):
    out = tmp_path / "runs" / "r1"
    result = eval_cli(small_catalog_dir, problems_path, out, agent, *extra)
    assert result.exit_code == 2, result.output
    assert message in text(result) and "Traceback" not in result.output
    assert "could not be built" not in text(result)  # the message itself says what is wrong
    assert not (tmp_path / "runs").exists()  # no run.json, no run.lock, no directory
    fixed = eval_cli(small_catalog_dir, problems_path, out, "reference:pipeline")
    assert fixed.exit_code == 0, fixed.output
    assert json.loads((out / "run.json").read_text())["agent_spec"] == "reference:pipeline"


def test_a_directory_that_is_no_checkpoint_says_what_it_lacks(small_catalog_dir, problems_path, tmp_path):
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    (empty / "notes.txt").write_text("hello")
    result = eval_cli(small_catalog_dir, problems_path, tmp_path / "r", f"hf:{empty}")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert (
        f"error: hf:{empty}: the directory holds no config.json and no tokenizer "
        "(tokenizer.json or tokenizer_config.json): not a checkpoint"
    ) in text(result)
    (empty / "config.json").write_text("{}")
    result = eval_cli(small_catalog_dir, problems_path, tmp_path / "r", f"hf:{empty}")
    assert "holds no tokenizer (tokenizer.json or tokenizer_config.json)" in text(result)
    assert "config.json and" not in text(result) and not (tmp_path / "r").exists()


def episodes(out: Path) -> list[tuple]:
    """Each recorded episode's problem, calls (without their timing) and recommendation."""
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    for record in records:
        for call in record["calls"]:
            call.pop("latency_s")
    return [
        (r["problem"]["problem_id"], r["calls"], r["outcome"]["recommended_product_ids"]) for r in records
    ]


@pytest.mark.parametrize("variant", ["agentic", "pipeline"])
def test_reference_agents_take_a_seed_and_are_the_same_under_any(
    small_catalog_dir, problems_path, tmp_path, variant
):
    """One command line (`--option seed=S`) serves every agent kind; a deterministic agent ignores it."""
    for seed in ("1", "2"):
        result = eval_cli(
            small_catalog_dir,
            problems_path,
            tmp_path / seed,
            f"reference:{variant}",
            "--option",
            f"seed={seed}",
        )
        assert result.exit_code == 0, result.output
        assert json.loads((tmp_path / seed / "run.json").read_text())["agent_options"] == {"seed": int(seed)}
    assert episodes(tmp_path / "1") == episodes(tmp_path / "2")
