"""The attacks a hostile miner file made through `shoparena eval --agent file:` before the sandbox (issue
12), each run through the eval (the CLI or `run_eval`) with a real miner file from
tests/agents/miners/hostile/. Each must fail to escape while the run goes on, and the record must show
the failure: every hostile miner's first call reports what it tried. Where an attack is safe to run
unconfined, the same miner runs with `sandbox=none` too and succeeds — so the miner is a real attack,
and it is the sandbox that stops it. (Not the forger, the token thief or the daemon: unconfined, they
would reach other tests' runs and processes.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.eval.config import EvalConfig
from shoparena.eval.runner import run_eval
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from shoparena.records.trajectory import TrajectoryRecord
from shoparena.sandbox import NoSandboxWarning
from tests.sandbox.test_limits import host_processes_with

HOSTILE = Path(__file__).resolve().parents[1] / "miners" / "hostile"
pytestmark = pytest.mark.usefixtures("sandbox_ready")


@pytest.fixture(scope="module")
def problems_file(small_catalog, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("escapes") / "problems.jsonl"
    write_problems(path, ProblemGenerator(small_catalog, seed=8).generate(2, buckets=("product",)))
    return path


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]


def report(record: dict) -> dict:
    """What the miner said it tried: its first call, `find_product(q="ESCAPE {json}")`."""
    first = record["calls"][0]
    assert first["name"] == "find_product" and first["arguments"]["q"].startswith("ESCAPE "), first
    return json.loads(first["arguments"]["q"].removeprefix("ESCAPE "))


def evaluate(catalog_dir, problems_file, miner: Path, out: Path, **kwargs) -> list[dict]:
    options = {"timeout_s": 30, **kwargs.pop("options", {})}
    kwargs.setdefault("executor", "inline")
    run_eval(
        EvalConfig(
            catalog=catalog_dir,
            problems=problems_file,
            agent=f"file:{miner}",
            out=out,
            options=options,
            similarity="lexical",
            bootstrap=10,
            **kwargs,
        )
    )
    return records(out)


def evaluate_both(catalog_dir, problems_file, miner: Path, tmp_path: Path) -> tuple[list[dict], list[dict]]:
    """The miner's first problem in the sandbox, then unconfined (the control)."""
    sandboxed = evaluate(catalog_dir, problems_file, miner, tmp_path / "bwrap", limit=1)
    with pytest.warns(NoSandboxWarning):
        unconfined = evaluate(
            catalog_dir, problems_file, miner, tmp_path / "none", limit=1, options={"sandbox": "none"}
        )
    return sandboxed, unconfined


def asr(out: Path) -> float:
    return json.loads((out / "metrics.json").read_text())["headline"]["asr"]["value"]


@pytest.fixture
def evaluator_command_line(problems_file):
    """A process whose command line is the evaluator's (`shoparena eval … --problems FILE`), as /proc
    shows it to any process on the host."""
    argv = [sys.executable, "-c", "import time; time.sleep(120)", "eval", "--problems", str(problems_file)]
    process = subprocess.Popen(argv)
    yield process.pid
    process.kill()
    process.wait()


def test_the_problems_file_on_the_evaluators_command_line_is_out_of_reach(
    small_catalog_dir, problems_file, tmp_path, evaluator_command_line
):
    sandboxed = evaluate(small_catalog_dir, problems_file, HOSTILE / "cmdline_miner.py", tmp_path / "bwrap")
    for record in sandboxed:
        assert report(record) == {"errors": [], "problem_files": [], "processes": 1, "reward_found": False}
        assert record["outcome"]["terminated"] == "failure" and not record["score"]["success"]
    assert asr(tmp_path / "bwrap") == 0.0

    # the control: unconfined, the same miner reads the rewards and scores 1.0
    with pytest.warns(NoSandboxWarning):
        unconfined = evaluate(
            small_catalog_dir,
            problems_file,
            HOSTILE / "cmdline_miner.py",
            tmp_path / "none",
            options={"sandbox": "none"},
        )
    for record in unconfined:
        assert str(problems_file) in report(record)["problem_files"] and record["score"]["success"]
        assert any(note.startswith("sandbox 'none'") for note in record["outcome"]["notes"])
    assert asr(tmp_path / "none") == 1.0


def test_the_hosts_postgresql_is_out_of_reach(small_catalog_dir, problems_file, tmp_path):
    sandboxed, unconfined = evaluate_both(
        small_catalog_dir, problems_file, HOSTILE / "postgres_miner.py", tmp_path
    )
    [record] = sandboxed
    assert report(record) == {"error": "ConnectionRefusedError: [Errno 111] Connection refused"}
    assert record["outcome"]["error"] is None and record["outcome"]["terminated"] == "failure"
    assert "postgres" in report(unconfined[0])["databases"]  # loopback reaches the real server


def test_the_parents_memory_is_out_of_reach(small_catalog_dir, problems_file, tmp_path):
    sandboxed, unconfined = evaluate_both(
        small_catalog_dir, problems_file, HOSTILE / "procmem_miner.py", tmp_path
    )
    [record] = sandboxed
    seen = report(record)
    # alone in its pid namespace: no parent to open, no other process to see
    assert (seen["self"], seen["parent"], seen["others"]) == (1, 0, [])
    assert seen["parent mem"]["error"].startswith("FileNotFoundError")
    assert seen["parent environ"]["error"].startswith("FileNotFoundError")
    assert record["outcome"]["error"] is None
    control = report(unconfined[0])  # unconfined: the evaluator's environment, and as root its heap
    assert control["parent environ"]["ok"] > 0
    assert control["parent mem"] == {"ok": 4096} or os.geteuid() != 0


def test_forged_records_never_reach_the_run_the_resume_or_the_store(
    small_catalog_dir, problems_file, tmp_path
):
    out = tmp_path / "forgery-target" / "run"  # the only place the miner would write (test hygiene)
    written = evaluate(small_catalog_dir, problems_file, HOSTILE / "forging_miner.py", out)
    assert len(written) == 2
    for record in written:
        seen = report(record)
        assert seen["import"] == "ModuleNotFoundError: No module named 'shoparena'"
        assert seen["found"] == [] and seen["forged"] == []
        assert record["record_id"] == TrajectoryRecord.make_id(
            record["run_id"], record["problem"]["problem_id"], 0
        )
    genuine = (out / "trajectories.jsonl").read_bytes()
    assert b"FORGED" not in genuine and b"forged-" not in genuine

    resumed = run_eval(
        EvalConfig(
            catalog=small_catalog_dir,
            problems=problems_file,
            agent=f"file:{HOSTILE / 'forging_miner.py'}",
            out=out,
            options={"timeout_s": 30},
            executor="inline",
            similarity="lexical",
            bootstrap=10,
        )
    )
    assert (resumed.episodes_run, resumed.episodes_resumed) == (0, 2)
    assert (out / "trajectories.jsonl").read_bytes() == genuine
    store = f"sqlite:///{tmp_path / 'store.db'}"
    result = CliRunner().invoke(app, ["store", "ingest", str(out), "--store", store, "--json"])
    assert result.exit_code == 0, result.output
    ingested = json.loads(result.stdout[result.stdout.index("{") :])
    assert (ingested["seen"], ingested["inserted"], ingested["rejected"]) == (2, 2, 0)


def test_another_miners_session_is_out_of_reach(small_catalog_dir, problems_file, tmp_path):
    """Two workers, so two copies run at once, each looking for the other's token in /proc."""
    written = evaluate(
        small_catalog_dir,
        problems_file,
        HOSTILE / "token_miner.py",
        tmp_path / "run",
        executor="process",
        workers=2,
    )
    assert len(written) == 2
    spans = sorted(
        (
            start := datetime.fromisoformat(r["timings"]["started_at"]).timestamp(),
            start + r["timings"]["wall_s"],
        )
        for r in written
    )
    assert spans[1][0] < spans[0][1], spans  # the two copies really ran at the same time
    for record in written:
        assert report(record) == {"foreign_sessions": 0, "hijacked": [], "processes": 1}
        assert [c["name"] for c in record["calls"]] == ["find_product", "terminate"]
        assert record["outcome"]["terminated"] == "success" and record["outcome"]["error"] is None


def test_a_daemon_does_not_outlive_the_timeout(small_catalog_dir, problems_file, tmp_path):
    marker = f"shoparena-daemon-{uuid.uuid4().hex}"
    host_file = tmp_path / "daemon-was-here"
    miner = tmp_path / "daemon_miner.py"
    source = (HOSTILE / "daemon_miner.py").read_text()
    miner.write_text(source.replace("@MARKER@", marker).replace("@HOST_FILE@", str(host_file)))
    started = time.monotonic()
    [record] = evaluate(
        small_catalog_dir,
        problems_file,
        miner,
        tmp_path / "run",
        limit=1,
        timeout=2.0,
        options={"timeout_s": 2.0},
    )
    assert time.monotonic() - started < 8
    assert record["outcome"]["error"] == "timeout" and record["timings"]["wall_s"] < 3.5
    daemon_calls = [c for c in record["calls"] if c["arguments"]["q"] == f"DAEMON alive {marker}"]
    assert len(daemon_calls) == 1  # the daemon really ran, and reached the only channel out
    assert host_processes_with(marker) == []
    time.sleep(0.3)
    assert host_processes_with(marker) == [] and not host_file.exists()


def test_memory_held_across_children_is_stopped_by_the_trees_limit(
    small_catalog_dir, problems_file, tmp_path
):
    options = {"memory_mb": 256, "address_space_mb": 1024}
    [record] = evaluate(
        small_catalog_dir,
        problems_file,
        HOSTILE / "memory_miner.py",
        tmp_path / "run",
        limit=1,
        options=options,
    )
    ended = report(record)
    assert ended.get("signal 9", 0) >= 1 and sum(ended.values()) == 23  # the OOM killer took children
    [note] = [n for n in record["outcome"]["notes"] if "memory limit" in n]
    assert note.startswith("sandbox: the miner reached the memory limit of its whole process tree (256 MiB")
    peak = float(note.split("peak ")[1].split(" MiB")[0])
    assert peak <= 256


def test_the_episodes_timeout_cancels_a_longer_sandbox_clock(small_catalog_dir, problems_file, tmp_path):
    """An episode timeout shorter than the agent's own: the worker's alarm cancels the sandboxed run, which
    kills the whole tree before the episode is written (the miner's child carries the problem id)."""
    problems = [json.loads(line) for line in problems_file.read_text().splitlines()]
    started = time.monotonic()
    [record] = evaluate(
        small_catalog_dir,
        problems_file,
        Path(__file__).resolve().parents[1] / "miners" / "sleeping_miner.py",
        tmp_path / "run",
        limit=1,
        timeout=1.5,
        options={"timeout_s": 120},
    )
    assert time.monotonic() - started < 8
    assert record["outcome"]["error"] == "timeout" and record["timings"]["wall_s"] < 3.5
    assert host_processes_with(problems[0]["problem_id"]) == []


def test_a_miner_past_its_own_time_limit_is_reported_as_a_timeout(small_catalog_dir, problems_file, tmp_path):
    """The file agent's own clock (`--option timeout_s`, no episode `--timeout`) kills a miner that never
    returns: the run counts it as a timeout (with the limit), not as the agent's error, and the viewer
    says so too."""
    out = tmp_path / "run"
    miner = Path(__file__).resolve().parents[1] / "miners" / "sleeping_miner.py"
    args = ["eval", "--catalog", str(small_catalog_dir), "--problems", str(problems_file)]
    args += ["--agent", f"file:{miner}", "--out", str(out), "--limit", "1", "--executor", "inline"]
    args += ["--option", "timeout_s=1.5", "--similarity", "lexical", "--bootstrap", "10"]
    result = CliRunner().invoke(app, args)
    assert "(1 timeouts)" in result.output and "(timeout 1)" in result.output, result.output
    assert "agent error" not in result.output
    [record] = records(out)
    assert record["outcome"]["error"].startswith("timeout: agent_main did not return within 1.5 s")
    assert record["outcome"]["end_reason"].startswith("timeout: agent_main did not return within 1.5 s")
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["counts"]["errors_by_kind"] == {"timeout": 1}
    viewed = CliRunner().invoke(app, ["view", str(out), "--json"])
    [row] = json.loads(viewed.output)["episodes"]
    assert row["error_kind"] == "timeout" and "within 1.5 s" in row["error"]
