"""`shoparena eval` when the agent cannot start or its endpoint fails: a typo stops the command with
one line in the project's words and leaves the run directory free for the corrected command; an
outage of the model endpoint is recorded, said, re-runnable with --retry-errors, and — when it took
every episode — a failed command rather than an ASR of 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from tests.agents.conftest_llm import Reply, ScriptedChatServer, completion, error_body, tool_call

runner = CliRunner()
GIVE_UP = completion(None, [tool_call("call_1", "terminate", {"status": "failure"})])
"""A model that ends the episode at once (a finished episode, no error)."""
DOWN = Reply(error_body("upstream overloaded"), 503)


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


# -- the model endpoint fails -----------------------------------------------------------------------


def test_an_outage_is_said_and_re_run_with_retry_errors(small_catalog_dir, problems_path, tmp_path):
    """The endpoint refuses the first episode's request (503, no client retries), then answers: the run
    finishes, says one episode can be re-run, resuming keeps the failure, --retry-errors re-runs it."""
    out = tmp_path / "run"
    with ScriptedChatServer(lambda index, body: DOWN if index == 0 else Reply(GIVE_UP)) as server:
        model = ("--base-url", server.base_url, "--option", "max_retries=0")
        first = eval_cli(small_catalog_dir, problems_path, out, "openai:scripted", *model)
        assert first.exit_code == 0, first.output
        assert "1 episode error(s) (endpoint 1) counted as failures" in (out / "report.md").read_text()
        assert (
            "note: 1 episode(s) failed with a model-endpoint error or a timeout and count as failures; "
            "run the same command with --retry-errors to re-run them"
        ) in text(first)

        resumed = eval_cli(small_catalog_dir, problems_path, out, "openai:scripted", *model)
        assert resumed.exit_code == 0 and "0 episode(s) run, 2 resumed" in text(resumed)
        assert "--retry-errors to re-run them" in text(resumed)

        retried = eval_cli(small_catalog_dir, problems_path, out, "openai:scripted", *model, "--retry-errors")
        assert retried.exit_code == 0, retried.output
        assert "1 episode(s) run (1 re-run after an error), 1 resumed" in text(retried)
        assert "--retry-errors to re-run them" not in text(retried)
        assert "1 errored episode(s) re-run with --retry-errors" in (out / "report.md").read_text()
        assert len(server.requests) == 3
    lines = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert len(lines) == 3 and lines[0]["outcome"]["error"].startswith(
        f"{server.base_url}/chat/completions: "
    )
    assert (
        lines[2]["problem"]["problem_id"] == lines[0]["problem"]["problem_id"]
        and not lines[2]["outcome"]["error"]
    )
    counts = json.loads((out / "metrics.json").read_text())["counts"]
    assert counts["errors"] == 0 and counts["superseded"] == 1 and counts["episodes"] == 2


def test_a_run_whose_every_episode_errored_fails(small_catalog_dir, problems_path, tmp_path):
    out = tmp_path / "run"
    with ScriptedChatServer(lambda index, body: DOWN) as server:
        model = ("--base-url", server.base_url, "--option", "max_retries=0")
        result = eval_cli(small_catalog_dir, problems_path, out, "openai:scripted", *model)
        again = eval_cli(small_catalog_dir, problems_path, out, "openai:scripted", *model)
    for outcome in (result, again):
        assert outcome.exit_code == 1, outcome.output
        message = text(outcome)
        assert (
            "error: every episode of the run (2) ended in an error (endpoint 2), so it measured nothing"
            in message
        )
        assert "upstream overloaded" in message and "--retry-errors" in message and "0.000" not in message
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 2  # recorded all the same
