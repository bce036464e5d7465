"""Validators end to end on one machine: the real server on loopback, real miner files run by the eval
runner, the real CLI (in-thread, and a real subprocess that is stopped mid-job)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import orjson
import pytest
from typer.testing import CliRunner

from shoparena.arena import open_arena
from shoparena.arena.auth.keys import write_key_file
from shoparena.arena.participants.client import ArenaClient
from shoparena.arena.participants.validator import JobFailed, Validator, ValidatorError, ValidatorSettings
from shoparena.cli import app
from shoparena.index.catalog_dir import build_synthetic
from shoparena.store.query import RecordFilter
from tests.arena.arena_helpers import Key, make_arena, parallel
from tests.arena.job_helpers import (
    BENIGN_AGENT,
    EVALUATION,
    LEASE_S,
    client,
    slow_agent,
    submit,
)
from tests.judge.loopback import ScriptedServer, verdict_text

runner = CliRunner()
OUTCOME_FIELDS = (
    "problem_id",
    "success",
    "rule_score",
    "judge_quality",
    "judge_gate",
    "end_reason",
    "steps_used",
)


def invoke(*args):
    return runner.invoke(app, [str(arg) for arg in args])


def validating(server, key, **settings) -> Validator:
    settings.setdefault("sandbox", "none")
    settings.setdefault("poll_s", 0.2)
    return Validator(client(server, key), ValidatorSettings(**settings))


def key_file(tmp_path, key: Key, name: str):
    path = tmp_path / name
    write_key_file(path, key.file)
    return path


def validator_process(server, key, *options) -> subprocess.Popen:
    """`shoparena validator run` as a real process in a session (and process group) of its own."""
    command = [
        sys.executable, "-c", "from shoparena.cli import main; main()", "validator", "run",
        "--arena", server.url, "--key", key, "--sandbox", "none", *options,
    ]  # fmt: skip
    return subprocess.Popen(
        [str(part) for part in command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "400"},
    )


def wait_until_running(arena, submission_id: str, process: subprocess.Popen) -> None:
    """Until the process has claimed the job, then a little into its first problems (the slow miner
    takes a second each)."""
    deadline = time.monotonic() + 120
    while arena.ledger.get(submission_id).status != "running":
        assert process.poll() is None, process.stdout.read().decode()
        assert time.monotonic() < deadline, "the validator never claimed the job"
        time.sleep(0.05)
    time.sleep(1.5)


@pytest.mark.usefixtures("sandbox_ready")
def test_miner_to_validator_round_trip_through_the_cli(tmp_path, small_catalog_dir, job_bank, server_factory):
    arena_dir, miner_key, validator_key = (
        tmp_path / "arena",
        tmp_path / "miner.json",
        tmp_path / "validator.json",
    )
    for path in (miner_key, validator_key):
        assert invoke("keys", "new", "--out", path).exit_code == 0
    miner = invoke("keys", "show", "--key", miner_key).stdout.strip()
    validator = invoke("keys", "show", "--key", validator_key).stdout.strip()
    init = invoke(
        "arena", "init", "--dir", arena_dir, "--catalog", small_catalog_dir, "--problems", job_bank,
        "--similarity", "lexical", "--lease-s", LEASE_S,
    )  # fmt: skip
    assert init.exit_code == 0, init.output
    for hotkey, role in ((miner, "miner"), (validator, "validator")):
        assert (
            invoke("arena", "register", "--dir", arena_dir, "--hotkey", hotkey, "--role", role).exit_code == 0
        )
    with open_arena(arena_dir) as arena:
        url = server_factory(arena).url
        submitted = invoke("miner", "submit", "--arena", url, "--key", miner_key, BENIGN_AGENT, "--json")
        assert submitted.exit_code == 0, submitted.output
        submission_id = orjson.loads(submitted.stdout)["submission_id"]
        run_once = (
            "validator",
            "run",
            "--once",
            "--arena",
            url,
            "--key",
            validator_key,
            "--catalog",
            small_catalog_dir,
        )
        ran = invoke(*run_once)
        assert ran.exit_code == 0, ran.output
        assert f"submission {submission_id}" in ran.stdout and "stored" in ran.stdout
        status = invoke("miner", "status", "--arena", url, "--key", miner_key, submission_id, "--json")
        assert status.exit_code == 0, status.output
        view = orjson.loads(status.stdout)
        assert view["status"] == "scored"
        assert [event["status"] for event in view["events"]] == ["queued", "running", "scored"]
        (result,) = view["results"]
        assert result["validator_hotkey"] == validator and result["problems"] == 3
        assert len(result["per_problem"]) == 3 and result["asr"] == result["successes"] / 3
        assert result["judge_quality"] is not None and result["final_score"] is not None
        records = list(arena.store.records(RecordFilter(agent=f"arena:{submission_id}")))
        assert len(records) == 3 and arena.store.count() == 3
        assert {r.record_id for r in records} == {p["record_id"] for p in result["per_problem"]}
        for record in records:
            assert (record.agent.miner_hotkey, record.validator_hotkey) == (miner, validator)
            assert record.run_id == result["job_id"] and record.scoring_mode == "strict"
        readable = invoke("miner", "status", "--arena", url, "--key", miner_key, submission_id)
        assert "final score" in readable.stdout and "ASR" in readable.stdout
        idle = invoke(*run_once)
        assert idle.exit_code == 0 and "no job waiting" in idle.stdout


def test_two_validators_reach_the_same_outcome_scores(
    tmp_path, small_catalog_dir, job_bank, server_factory, miner, validator, validator2
):
    """Two validators, each with its own copy of the catalogue, evaluate one submission at once."""
    arena = make_arena(
        tmp_path / "arena",
        small_catalog_dir,
        job_bank,
        {"miner": [miner], "validator": [validator, validator2]},
        evaluation=EVALUATION,
        jobs={"lease_s": LEASE_S, "validators_per_submission": 2},
    )
    copies = []
    for name in ("one", "two"):
        copies.append(tmp_path / name)
        shutil.copytree(small_catalog_dir, copies[-1])
    try:
        server = server_factory(arena)
        submission_id = submit(server, miner)
        keys = (validator, validator2)

        def evaluate(i: int):
            with validating(server, keys[i], catalog=copies[i]) as one:
                return one.run_once()

        reports = parallel(2, evaluate)
        view = arena.ledger.get(submission_id)
    finally:
        arena.close()
    assert [report.status for report in reports] == ["posted", "posted"]
    assert reports[0].job_id == reports[1].job_id
    first, second = view.results
    assert {first.validator_hotkey, second.validator_hotkey} == {validator.hotkey, validator2.hotkey}
    outcomes = [
        [tuple(getattr(p, name) for name in OUTCOME_FIELDS) for p in r.per_problem] for r in view.results
    ]
    assert outcomes[0] == outcomes[1]
    assert (first.asr, first.mean_rule_score, first.judge_quality, first.final_score) == (
        second.asr,
        second.mean_rule_score,
        second.judge_quality,
        second.final_score,
    )
    assert {p.record_id for p in first.per_problem}.isdisjoint(p.record_id for p in second.per_problem)


def test_a_stopped_validator_loses_nothing(
    tmp_path, small_catalog_dir, job_bank, server_factory, clock, miner
):
    """A validator stopped mid-job stops heartbeating; its lease lapses, another validator claims the job
    and finishes it, and the first one, resumed, posts nothing."""
    stopped, other = Key(), Key()
    arena = make_arena(
        tmp_path / "arena",
        small_catalog_dir,
        job_bank,
        {"miner": [miner], "validator": [stopped, other]},
        evaluation=EVALUATION,
        jobs={"lease_s": 30},
    )
    try:
        server = server_factory(arena)
        submission_id = submit(server, miner, slow_agent())
        key = key_file(tmp_path, stopped, "stopped.json")
        process = validator_process(server, key, "--once", "--catalog", small_catalog_dir)
        try:
            wait_until_running(arena, submission_id, process)
            os.killpg(process.pid, signal.SIGSTOP)  # the validator and its eval workers freeze mid-job
            clock.advance(31)  # past the 30 s lease, with no heartbeat
            with validating(server, other) as second:
                report = second.run_once()
            assert report.status == "posted" and report.created
        finally:
            os.killpg(process.pid, signal.SIGCONT)
            output = process.communicate(timeout=120)[0].decode()
        events = arena.ledger.get(submission_id).events
        records = list(arena.store.records())
    finally:
        arena.close()
    assert process.returncode == 1, output
    assert "lease was lost" in output and "Traceback" not in output
    assert [event.status for event in events] == ["queued", "running", "queued", "running", "scored"]
    assert events[1].actor == stopped.hotkey and events[-1].actor == other.hotkey
    assert len(records) == 3 and {record.validator_hotkey for record in records} == {other.hotkey}


def test_ctrl_c_gives_the_job_back(tmp_path, small_catalog_dir, job_arena, server_factory, miner, validator):
    server = server_factory(job_arena)
    submission_id = submit(server, miner, slow_agent())
    process = validator_process(server, key_file(tmp_path, validator, "v.json"))
    try:
        wait_until_running(job_arena, submission_id, process)
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C in its terminal reaches the whole group
        output = process.communicate(timeout=60)[0].decode()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 130, output
    assert "given back" in output and "Traceback" not in output
    events = job_arena.ledger.get(submission_id).events
    assert [e.status for e in events] == ["queued", "running", "queued"]
    assert "KeyboardInterrupt" in events[-1].detail and job_arena.store.count() == 0


def test_a_validator_with_another_catalogue_refuses_before_claiming(
    tmp_path, job_arena, server_factory, miner, validator
):
    other = tmp_path / "other-catalog"
    build_synthetic(other, 300, seed=1, workers=1)
    server = server_factory(job_arena)
    submission_id = submit(server, miner)
    with validating(server, validator, catalog=other) as wrong, pytest.raises(ValidatorError) as refused:
        wrong.check()
    assert "is not the arena's catalogue" in str(refused.value) and "300 products" in str(refused.value)
    ran = invoke(
        "validator", "run", "--once", "--arena", server.url, "--key", key_file(tmp_path, validator, "v.json"),
        "--catalog", other,
    )  # fmt: skip
    assert ran.exit_code == 2 and "not the arena's catalogue" in ran.output
    assert job_arena.ledger.get(submission_id).status == "queued"


class Tampering(ArenaClient):
    """A connection that alters the code on its way (one byte)."""

    def code(self, lease_id: str):
        code, sha256 = super().code(lease_id)
        return code.replace(b"search", b"seArch", 1), sha256


def test_code_that_does_not_match_its_hash_is_not_run(job_arena, server_factory, miner, validator):
    server = server_factory(job_arena)
    submission_id = submit(server, miner)
    settings = ValidatorSettings(sandbox="none")
    with (
        Validator(Tampering(server.url, validator.keypair), settings) as tampered,
        pytest.raises(JobFailed, match="hashes to"),
    ):
        tampered.run_once()
    events = job_arena.ledger.get(submission_id).events
    assert [e.status for e in events] == ["queued", "running", "queued"] and "hashes to" in events[-1].detail
    assert job_arena.store.count() == 0


def test_a_validator_loop_takes_every_waiting_job(job_arena, server_factory, miner, validator):
    server = server_factory(job_arena)
    submitted = [submit(server, miner) for _ in range(2)]
    stop, reports = threading.Event(), []

    def done(report) -> None:
        reports.append(report)
        if len(reports) == len(submitted):
            stop.set()

    with validating(server, validator) as loop:
        loop.run(stop, on_report=done)
    assert [report.submission_id for report in reports] == submitted
    assert all(job_arena.ledger.get(s).status == "scored" for s in submitted)


def test_the_llm_judge_judges_a_validators_episodes(tmp_path, job_arena, server_factory, miner, validator):
    server = server_factory(job_arena)
    submission_id = submit(server, miner)
    with ScriptedServer(lambda body, index: verdict_text(0.5, "analyses_results", [])) as judge:
        ran = invoke(
            "validator", "run", "--once", "--arena", server.url, "--key", key_file(tmp_path, validator, "v.json"),
            "--sandbox", "none", "--judge", "openai:scripted-judge", "--judge-base-url", judge.base_url,
            "--judge-api-key", "test-key", "--json",
        )  # fmt: skip
        assert ran.exit_code == 0, ran.output
        assert judge.models_called() == ["scripted-judge"] * 3
    report = orjson.loads(ran.stdout[ran.stdout.index("{") :])
    assert report["status"] == "posted" and report["result"]["judge_quality"] is not None
    records = list(job_arena.store.records(RecordFilter(agent=f"arena:{submission_id}")))
    assert {record.judge.judge_model for record in records} == {"scripted-judge"}
