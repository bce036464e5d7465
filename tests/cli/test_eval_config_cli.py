"""`shoparena eval` options come from `EvalConfig`: bad values stop the run before it starts (one
clear line naming the flag, no traceback, exit 2), and one run directory serves one eval at a time."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import orjson
import pytest
import typer
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.cli.model_options import command_from_models, model_values
from shoparena.eval.config import EvalConfig
from shoparena.eval.runner import run_eval
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from tests.eval.test_config import SandboxedConfig

runner = CliRunner()


@pytest.fixture(scope="module")
def problems_path(small_catalog, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("config-cli") / "problems.jsonl"
    write_problems(path, ProblemGenerator(small_catalog, seed=4).generate(3, buckets=("product",)))
    return path


def eval_args(catalog: Path, problems: Path, out: Path, *extra: str) -> list[str]:
    return [
        "eval", "--catalog", str(catalog), "--problems", str(problems), "--agent", "reference:pipeline",
        "--out", str(out), "--executor", "inline", "--similarity", "lexical", "--bootstrap", "0", "--quiet", *extra,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--step-cap", "0"), "--step-cap: Input should be greater than or equal to 1 (got 0)"),
        (("--step-cap", "-5"), "--step-cap: Input should be greater than or equal to 1 (got -5)"),
        (("--timeout", "nan"), "--timeout: Input should be a finite number (got nan)"),
        (("--timeout", "inf"), "--timeout: Input should be a finite number (got inf)"),
        (("--timeout", "-3"), "--timeout: Input should be greater than 0 (got -3.0)"),
        (
            ("--samples", "0", "--timeout", "nan"),
            "--samples: Input should be greater than or equal to 1 (got 0)",
        ),
        (("--option", "max_turns"), "--option: 'max_turns': expected KEY=VALUE"),
    ],
)
def test_a_bad_option_stops_the_run_at_the_start(small_catalog_dir, problems_path, tmp_path, flags, message):
    out = tmp_path / "run"
    result = runner.invoke(app, eval_args(small_catalog_dir, problems_path, out, *flags))
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split()), result.output
    assert ("Traceback" not in result.output and result.exception is None) or isinstance(
        result.exception, SystemExit
    )
    assert not out.exists()  # nothing started: no run directory, no run.json, no episode


def test_every_bad_option_is_named_at_once(small_catalog_dir, problems_path, tmp_path):
    result = runner.invoke(
        app,
        eval_args(small_catalog_dir, problems_path, tmp_path / "r", "--step-cap", "0", "--timeout", "nan"),
    )
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and "--step-cap:" in text and "--timeout:" in text


def test_a_second_eval_on_a_busy_run_directory_is_refused(small_catalog_dir, problems_path, tmp_path):
    """The first eval (here through the API, in a thread) holds the directory; the second, through the
    CLI, stops with the holder's pid and writes nothing; once the first is done the directory is free."""
    out = tmp_path / "run"
    entered, release = threading.Event(), threading.Event()

    def hold(state) -> None:
        if not entered.is_set():
            entered.set()
            release.wait(60)

    config = EvalConfig(
        catalog=small_catalog_dir, problems=problems_path, agent="reference:agentic", out=out,
        executor="inline", similarity="lexical", bootstrap=0,
    )  # fmt: skip
    first = threading.Thread(target=run_eval, args=(config,), kwargs={"progress": hold})
    first.start()
    try:
        assert entered.wait(60)
        result = runner.invoke(app, eval_args(small_catalog_dir, problems_path, out))
    finally:
        release.set()
        first.join(120)
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and f"is in use by pid {os.getpid()}" in text and "Traceback" not in text
    lines = (out / "trajectories.jsonl").read_bytes().splitlines()
    assert len(lines) == 3 and len({orjson.loads(line)["run_id"] for line in lines}) == 1
    again = runner.invoke(
        app, eval_args(small_catalog_dir, problems_path, out, "--agent", "reference:agentic")
    )
    assert again.exit_code == 0, again.output  # released: the same command resumes (nothing left to run)


def test_the_lock_holds_across_processes(small_catalog_dir, problems_path, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", (
            "import sys, time; from pathlib import Path; from shoparena.eval.run_dir import RunLock; "
            "RunLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(60)"
        ), str(out)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        result = runner.invoke(app, eval_args(small_catalog_dir, problems_path, out))
    finally:
        holder.kill()
        holder.wait(10)
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and f"is in use by pid {holder.pid}" in text
    assert not (out / "trajectories.jsonl").exists()
    after = runner.invoke(app, eval_args(small_catalog_dir, problems_path, out))
    assert after.exit_code == 0, after.output  # the kernel dropped the dead holder's lock


def test_an_option_added_to_the_config_is_a_flag_with_its_help(small_catalog_dir, problems_path, tmp_path):
    seen = {}
    sandboxed = typer.Typer()
    command_from_models(
        sandboxed, "eval", (SandboxedConfig,),
        lambda **values: seen.update(config=SandboxedConfig(**model_values(SandboxedConfig, values))), "eval",
    )  # fmt: skip
    sandboxed.command("other")(lambda: None)
    shown = runner.invoke(sandboxed, ["eval", "--help"]).output
    assert "--sandbox" in shown and "<bwrap|container|none>" in shown and "How file agents" in shown
    args = ["eval", "--catalog", str(small_catalog_dir), "--problems", str(problems_path)]
    args += ["--agent", "file:m.py", "--out", str(tmp_path / "r"), "--sandbox", "bwrap"]
    assert runner.invoke(sandboxed, args).exit_code == 0
    assert seen["config"].agent_options() == {"sandbox": "bwrap"}
