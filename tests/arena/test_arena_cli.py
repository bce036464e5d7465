"""`shoparena keys`, `arena` and `miner` from the command line, against the real server on loopback
(in-thread for most, and `arena serve` as a real subprocess once)."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time

import httpx
import orjson
import pytest
from bittensor_wallet import Wallet
from typer.testing import CliRunner

from shoparena.arena import ProblemResultIn, ResultIn
from shoparena.cli import app
from tests.arena.arena_helpers import BANNED, BENIGN, Key

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def files(tmp_path):
    benign, banned = tmp_path / "agent.py", tmp_path / "bad_agent.py"
    benign.write_bytes(BENIGN)
    banned.write_bytes(BANNED)
    return benign, banned


@pytest.fixture
def key_file(tmp_path, miner):
    """The registered miner's key as a key file."""
    from shoparena.arena.auth.keys import write_key_file

    path = tmp_path / "miner.json"
    write_key_file(path, miner.file)
    return path


def test_keys_new_and_show(tmp_path):
    path = tmp_path / "k.json"
    result = invoke("keys", "new", "--out", path, "--json")
    assert result.exit_code == 0, result.output
    address = orjson.loads(result.stdout)["ss58_address"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert orjson.loads(path.read_bytes())["ss58_address"] == address
    again = invoke("keys", "new", "--out", path)
    assert again.exit_code == 2 and "exists already" in again.output
    assert invoke("keys", "show", "--key", path).stdout.strip() == address
    neither = invoke("keys", "show")
    assert neither.exit_code == 2 and "exactly one of --key" in neither.output
    path.write_text("{}")
    broken = invoke("keys", "show", "--key", path)
    assert broken.exit_code == 2 and "not a key file" in broken.output and "Traceback" not in broken.output


def test_keys_show_wallet(tmp_path):
    wallet = Wallet(name="mywallet", hotkey="hk1", path=str(tmp_path))
    wallet.create_if_non_existent(coldkey_use_password=False, hotkey_use_password=False, suppress=True)
    result = invoke("keys", "show", "--wallet", "mywallet", "--hotkey", "hk1", "--wallet-path", tmp_path)
    assert result.exit_code == 0 and result.stdout.strip() == wallet.hotkey.ss58_address
    missing = invoke("keys", "show", "--wallet", "nope", "--wallet-path", tmp_path)
    assert missing.exit_code == 2 and "does not exist" in missing.output


def test_arena_init_register_neurons(tmp_path, small_catalog_dir, problems_file):
    arena_dir = tmp_path / "arena"
    result = invoke(
        "arena", "init", "--dir", arena_dir, "--catalog", small_catalog_dir, "--problems", problems_file
    )
    assert result.exit_code == 0, result.output
    assert "6 problems" in result.output
    config = orjson.loads((arena_dir / "arena.json").read_bytes())
    assert config["problems_count"] == 6 and config["cooldown"]["full_s"] == 43200 and config["skew_s"] == 60
    assert (arena_dir / "arena.db").exists() and (arena_dir / "code").is_dir()
    again = invoke(
        "arena", "init", "--dir", arena_dir, "--catalog", small_catalog_dir, "--problems", problems_file
    )
    assert again.exit_code == 2 and "is an arena already" in again.output

    key = Key()
    ok = invoke(
        "arena", "register", "--dir", arena_dir, "--hotkey", key.hotkey, "--role", "validator", "--stake", "5"
    )
    assert ok.exit_code == 0 and "as validator" in ok.output
    listed = orjson.loads(invoke("arena", "neurons", "--dir", arena_dir, "--json").stdout)
    assert [(n["hotkey"], n["role"], n["stake"]) for n in listed] == [(key.hotkey, "validator", 5.0)]
    for args, message in (
        (["--hotkey", "5notakey", "--role", "miner"], "not a valid SS58"),
        (["--hotkey", key.hotkey, "--role", "owner"], "--role"),
        (["--hotkey", key.hotkey], "--role miner|validator is required"),
        (["--hotkey", Key().hotkey, "--remove"], "is not registered"),
    ):
        failed = invoke("arena", "register", "--dir", arena_dir, *args)
        assert failed.exit_code == 2 and message in failed.output, failed.output
        assert "Traceback" not in failed.output
    assert invoke("arena", "register", "--dir", arena_dir, "--hotkey", key.hotkey, "--remove").exit_code == 0
    missing = invoke("arena", "neurons", "--dir", tmp_path / "nowhere")
    assert missing.exit_code == 2 and "not an arena directory" in missing.output


def test_a_failed_init_leaves_no_half_made_arena(tmp_path, small_catalog_dir, problems_file):
    for store in ("mysql://x", "postgresql://nobody@127.0.0.1:1/none"):
        arena_dir = tmp_path / "new" / "arena"
        failed = invoke("arena", "init", "--dir", arena_dir, "--catalog", small_catalog_dir,
                        "--problems", problems_file, "--store", store)  # fmt: skip
        assert failed.exit_code != 0 and "Traceback" not in failed.output, failed.output
        assert not arena_dir.exists()
    kept = tmp_path / "existing"
    (kept / "notes.txt").parent.mkdir()
    (kept / "notes.txt").write_text("mine")
    invoke("arena", "init", "--dir", kept, "--catalog", small_catalog_dir, "--problems", problems_file,
           "--store", "mysql://x")  # fmt: skip
    assert kept.is_dir() and (kept / "notes.txt").read_text() == "mine"  # a directory it did not make stays


def test_arena_init_refuses_bad_inputs(tmp_path, small_catalog_dir, problems_file):
    bad_catalog = invoke(
        "arena", "init", "--dir", tmp_path / "a", "--catalog", tmp_path, "--problems", problems_file
    )
    assert bad_catalog.exit_code == 2 and "not a catalogue directory" in bad_catalog.output
    bank = tmp_path / "bank.jsonl"
    lines = problems_file.read_bytes().splitlines()
    bank.write_bytes(b"\n".join([lines[0], b'{"query": 3}', *lines[1:]]) + b"\n")
    bad_bank = invoke(
        "arena", "init", "--dir", tmp_path / "b", "--catalog", small_catalog_dir, "--problems", bank
    )
    assert bad_bank.exit_code == 2 and "bank.jsonl:2" in bad_bank.output
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_arena_check(files):
    benign, banned = files
    assert invoke("arena", "check", benign).exit_code == 0
    rejected = invoke("arena", "check", banned)
    assert (
        rejected.exit_code == 1 and "security.banned_import" in rejected.output and "1:1" in rejected.output
    )
    as_json = invoke("arena", "check", banned, "--json")
    assert orjson.loads(as_json.stdout)["violations"][0]["kind"] == "security"


def test_miner_submit_and_status(server, key_file, files):
    benign, _banned = files
    submitted = invoke("miner", "submit", "--arena", server.url, "--key", key_file, benign, "--json")
    assert submitted.exit_code == 0, submitted.output
    submission_id = orjson.loads(submitted.stdout)["submission_id"]
    shown = invoke("miner", "status", "--arena", server.url, "--key", key_file, submission_id)
    assert shown.exit_code == 0 and "queued" in shown.output and "agent.py" in shown.output
    listed = invoke("miner", "status", "--arena", server.url, "--key", key_file)
    assert submission_id in listed.output
    blocked = invoke("miner", "submit", "--arena", server.url, "--key", key_file, benign)
    assert blocked.exit_code == 2 and "cooldown" in blocked.output
    assert "wait 12 h before submitting again" in blocked.output
    unknown = invoke("miner", "status", "--arena", server.url, "--key", key_file, "0" * 32)
    assert unknown.exit_code == 2 and "not found" in unknown.output


LOCALLY_REFUSED = [
    ("syntax", b"def agent_main(problem_data):\n    return [\n", "format.syntax", 2),
    ("banned-import", BANNED, "security.banned_import", 1),
    ("no-agent-main", b"ANSWER = 1\n", "format.agent_main", 1),
    ("eval", b"def agent_main(problem_data):\n    return eval('[]')\n", "security.banned_call", 2),
]


@pytest.mark.parametrize(
    "code,rule,line", [case[1:] for case in LOCALLY_REFUSED], ids=[c[0] for c in LOCALLY_REFUSED]
)
def test_miner_submit_refuses_locally_what_admission_rejects(
    server, key_file, miner, files, tmp_path, code, rule, line
):
    """Admission's check runs before anything is sent: the rule and the line, nothing reaches the
    arena (no request audited, no submission, no cooldown), so the fixed file goes through at once."""
    agent = tmp_path / "typo.py"
    agent.write_bytes(code)
    refused = invoke("miner", "submit", "--arena", server.url, "--key", key_file, agent)
    assert refused.exit_code == 1, refused.output
    flat = " ".join(refused.output.split())
    assert f"{agent}:{line}:" in flat and rule in flat and "nothing was sent, no cooldown was spent" in flat
    as_json = invoke("miner", "submit", "--arena", server.url, "--key", key_file, agent, "--json")
    assert as_json.exit_code == 1 and orjson.loads(as_json.stdout)["violations"][0]["rule"] == rule
    assert server.arena.audit.entries(limit=10) == [] and server.arena.ledger.list_for(miner.hotkey) == []
    benign, _banned = files
    assert invoke("miner", "submit", "--arena", server.url, "--key", key_file, benign).exit_code == 0


def test_miner_submit_shows_the_arenas_rejection(arena, server_factory, key_file, files):
    """A file the local check admits but the arena's admission rejects (a newer arena's rules): the
    arena's verdict and its cooldown are shown."""
    from shoparena.admission import Violation

    stricter = [Violation(rule="security.new_rule", kind="security", line=3, message="a newer rule")]
    server = server_factory(arena, check=lambda _code: stricter)
    benign, _banned = files
    rejected = invoke("miner", "submit", "--arena", server.url, "--key", key_file, benign)
    assert rejected.exit_code == 1
    assert "security.new_rule" in rejected.output and "next submission allowed" in rejected.output


def test_miner_status_shows_scores(server, key_file, miner, validator):
    submission_id = server.signed(
        "POST", "/v1/miner/submit", miner, orjson.dumps({"name": "a", "code": BENIGN.decode()})
    ).json()["submission_id"]
    server.arena.ledger.add_result(
        ResultIn(
            submission_id=submission_id,
            job_id="job-7",
            validator_hotkey=validator.hotkey,
            scoring_pipeline_version="prod-strict-1",
            problems=[
                ProblemResultIn(problem_id="p-one", success=True, rule_score=1.0, judge_quality=0.9),
                ProblemResultIn(
                    problem_id="p-two", success=False, rule_score=0.0, judge_quality=0.3, error="timeout"
                ),
            ],
        )
    )
    shown = invoke("miner", "status", "--arena", server.url, "--key", key_file, submission_id)
    assert shown.exit_code == 0, shown.output
    assert "scored" in shown.output and "p-one" in shown.output and "timeout" in shown.output
    assert (
        "ASR 0.500 (1/2)" in shown.output
        and "judge q 0.600, coefficient 0.825, final score 0.41" in shown.output
    )


def test_miner_refusals_are_explained(server, tmp_path, files, validator):
    benign, _ = files
    stranger = tmp_path / "stranger.json"
    invoke("keys", "new", "--out", stranger)
    unknown = invoke("miner", "submit", "--arena", server.url, "--key", stranger, benign)
    assert (
        unknown.exit_code == 2 and "unknown_hotkey" in unknown.output and "arena register" in unknown.output
    )
    from shoparena.arena.auth.keys import write_key_file

    validator_file = tmp_path / "validator.json"
    write_key_file(validator_file, validator.file)
    wrong = invoke("miner", "submit", "--arena", server.url, "--key", validator_file, benign)
    flat = " ".join(wrong.output.split())
    assert wrong.exit_code == 2 and "wrong_role" in flat and "miners submit with a miner hotkey" in flat
    assert "--role miner" in flat and "validator hotkey" not in flat
    server.clock.advance(300)
    skewed = invoke("miner", "status", "--arena", server.url, "--key", validator_file)
    assert skewed.exit_code == 2 and "skew" in skewed.output and "sync the clock" in skewed.output


def test_validator_refusals_fit_the_validator_side(server, tmp_path, key_file):
    """A validator run with a miner's key (or an unknown one) is told what a validator needs."""
    wrong = invoke(
        "validator", "run", "--once", "--arena", server.url, "--key", key_file, "--sandbox", "none"
    )
    flat = " ".join(wrong.output.split())
    assert wrong.exit_code == 2 and "wrong_role" in flat, wrong.output
    assert (
        "validators evaluate with a validator hotkey" in flat
        and "shoparena keys new --out validator.json" in flat
    )
    assert '--hotkey "$(shoparena keys show --key validator.json)" --role validator --stake STAKE' in flat
    assert "miners submit" not in flat and "--role miner" not in flat
    stranger = tmp_path / "stranger.json"
    invoke("keys", "new", "--out", stranger)
    unknown = invoke(
        "validator", "run", "--once", "--arena", server.url, "--key", stranger, "--sandbox", "none"
    )
    flat = " ".join(unknown.output.split())
    assert unknown.exit_code == 2 and "unknown_hotkey" in flat
    assert "--role validator --stake STAKE" in flat and "--role miner" not in flat


@pytest.mark.parametrize(
    ("cooldown_s", "wait"),
    [
        (7500, "wait 2 h 5 min before"),
        (3540, "wait 59 min before"),
        (45, " s before"),
    ],
)
def test_a_cooldown_says_how_long_to_wait_as_a_person_would(
    tmp_path, small_catalog_dir, problems_file, server_factory, miner, files, cooldown_s, wait
):
    from tests.arena.arena_helpers import make_arena

    arena = make_arena(
        tmp_path / "arena",
        small_catalog_dir,
        problems_file,
        {"miner": [miner]},
        cooldown={"full_s": cooldown_s, "security_s": 60, "format_s": 60},
    )
    try:
        server = server_factory(arena)
        key = tmp_path / "miner.json"
        from shoparena.arena.auth.keys import write_key_file

        write_key_file(key, miner.file)
        benign, _ = files
        assert invoke("miner", "submit", "--arena", server.url, "--key", key, benign).exit_code == 0
        again = invoke("miner", "submit", "--arena", server.url, "--key", key, benign)
        flat = " ".join(again.output.split())
        assert again.exit_code == 2 and "refused (cooldown)" in flat and wait in flat, again.output
        assert " 0 h" not in flat and " 0 min" not in flat
        if cooldown_s < 60:
            assert re.search(r"wait \d+ s before", flat), flat
    finally:
        arena.close()


def test_miner_submit_local_checks(tmp_path, key_file):
    not_text = tmp_path / "binary.py"
    not_text.write_bytes(b"\xff\xfe\x00")
    result = invoke("miner", "submit", "--key", key_file, "--arena", "http://127.0.0.1:9", not_text)
    assert result.exit_code == 2 and "not UTF-8" in result.output
    big = tmp_path / "big.py"
    big.write_bytes(b"#" * (1024 * 1024 + 1))
    result = invoke("miner", "submit", "--key", key_file, "--arena", "http://127.0.0.1:9", big)
    assert result.exit_code == 2 and "at most 1 MiB" in result.output
    ok = tmp_path / "ok.py"
    ok.write_bytes(BENIGN)
    result = invoke("miner", "submit", "--key", key_file, "--arena", "http://127.0.0.1:9", ok)
    assert result.exit_code == 2 and "cannot reach the arena" in result.output
    result = invoke("miner", "submit", "--key", key_file, "--arena", "ftp://x", ok)
    assert result.exit_code == 2 and "http(s) URL" in result.output


def test_miner_signs_with_a_wallet(server, tmp_path, files):
    wallet = Wallet(name="w", hotkey="h", path=str(tmp_path))
    wallet.create_if_non_existent(coldkey_use_password=False, hotkey_use_password=False, suppress=True)
    server.arena.metagraph.register(wallet.hotkey.ss58_address, "miner")
    benign, _ = files
    args = ["--wallet", "w", "--hotkey", "h", "--wallet-path", tmp_path]
    result = invoke("miner", "submit", "--arena", server.url, *args, benign)
    assert result.exit_code == 0, result.output
    assert "admitted" in result.output


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_arena_serve_subprocess(tmp_path, small_catalog_dir, problems_file, files):
    arena_dir, key = tmp_path / "arena", tmp_path / "k.json"
    assert (
        invoke(
            "arena", "init", "--dir", arena_dir, "--catalog", small_catalog_dir, "--problems", problems_file
        ).exit_code
        == 0
    )
    invoke("keys", "new", "--out", key)
    hotkey = invoke("keys", "show", "--key", key).stdout.strip()
    assert (
        invoke("arena", "register", "--dir", arena_dir, "--hotkey", hotkey, "--role", "miner").exit_code == 0
    )
    port = free_port()
    command = [
        sys.executable,
        "-c",
        "from shoparena.cli import main; main()",
        "arena",
        "serve",
        "--dir",
        str(arena_dir),
        "--port",
        str(port),
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "NO_COLOR": "1"}
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert process.poll() is None, process.stdout.read().decode()
            assert time.monotonic() < deadline, "arena serve did not come up"
            time.sleep(0.2)
        submitted = invoke("miner", "submit", "--arena", url, "--key", key, files[0])
        assert submitted.exit_code == 0 and "admitted" in submitted.output
    finally:
        process.send_signal(signal.SIGINT)
        output = process.communicate(timeout=30)[0].decode()
    assert process.returncode in (0, 130), output  # uvicorn re-raises the SIGINT after a clean shutdown
    assert "Shutting down" in output and "Traceback" not in output
    assert f"on http://127.0.0.1:{port}" in output


def test_arena_serve_log_file_keeps_the_log_out_of_the_terminal(tmp_path, small_catalog_dir, problems_file):
    arena_dir, log = tmp_path / "arena", tmp_path / "logs" / "arena.log"
    init = ("arena", "init", "--dir", arena_dir, "--catalog", small_catalog_dir, "--problems", problems_file)
    assert invoke(*init).exit_code == 0
    port = free_port()
    command = [sys.executable, "-c", "from shoparena.cli import main; main()", "arena", "serve"]
    command += ["--dir", str(arena_dir), "--port", str(port), "--log-file", str(log)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "NO_COLOR": "1"}
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert process.poll() is None, process.stdout.read().decode()
            assert time.monotonic() < deadline, "arena serve did not come up"
            time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGINT)
        terminal = process.communicate(timeout=30)[0].decode()
    assert f"log in {log}" in " ".join(terminal.split()) and "GET /v1/health" not in terminal
    assert "GET /v1/health" in log.read_text() and "Shutting down" in log.read_text()


@pytest.fixture
def busy_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


BACKGROUND_REFUSALS = [
    ("port-0", lambda arena, busy: ("--dir", arena, "--port", "0"), "needs a fixed --port"),
    ("not-an-arena", lambda arena, busy: ("--dir", arena.parent, "--port", "1"), "not an arena directory"),
    ("port-in-use", lambda arena, busy: ("--dir", arena, "--port", str(busy)), "already serving there?"),
]


@pytest.mark.parametrize(
    "options,message", [c[1:] for c in BACKGROUND_REFUSALS], ids=[c[0] for c in BACKGROUND_REFUSALS]
)
def test_arena_serve_background_refusals(
    tmp_path, small_catalog_dir, problems_file, busy_port, options, message
):
    arena_dir = tmp_path / "arena"
    init = ("arena", "init", "--dir", arena_dir, "--catalog", small_catalog_dir, "--problems", problems_file)
    assert invoke(*init).exit_code == 0
    refused = invoke("arena", "serve", "--background", *options(arena_dir, busy_port))
    assert refused.exit_code == 2 and message in " ".join(refused.output.split()), refused.output
    assert not (arena_dir / "serve.log").exists()  # nothing was started


def test_arena_serve_background_reports_a_server_that_dies(tmp_path, small_catalog_dir, problems_file):
    """A server that exits before it answers (two workers on SQLite) is reported with its log's end."""
    arena_dir = tmp_path / "arena"
    init = ("arena", "init", "--dir", arena_dir, "--catalog", small_catalog_dir, "--problems", problems_file)
    assert invoke(*init).exit_code == 0
    port = str(free_port())
    died = invoke("arena", "serve", "--dir", arena_dir, "--background", "--port", port, "--workers", "2")
    flat = " ".join(died.output.split())
    assert died.exit_code == 2 and "exited (2) before it answered" in flat, died.output
    assert (
        "needs the arena's state on PostgreSQL" in flat
        and "needs the arena's state" in (arena_dir / "serve.log").read_text()
    )


def test_no_miner_is_ever_registered_on_the_burn_uid(tmp_path, small_catalog_dir, problems_file):
    """Issue 23: a miner crowned on the burn uid could only be paid into the burn (and stalled every race)."""
    arena_dir = tmp_path / "arena"
    assert (
        invoke(
            "arena", "init", "--dir", arena_dir, "--catalog", small_catalog_dir, "--problems", problems_file
        ).exit_code
        == 0
    )
    miner, owner = Key(), Key()
    refused = invoke(
        "arena", "register", "--dir", arena_dir, "--hotkey", miner.hotkey, "--role", "miner", "--uid", "0"
    )
    assert refused.exit_code == 2 and "burn uid" in refused.output and "Traceback" not in refused.output
    listed = orjson.loads(invoke("arena", "neurons", "--dir", arena_dir, "--json").stdout)
    assert listed == []
    ok = invoke(
        "arena", "register", "--dir", arena_dir, "--hotkey", owner.hotkey, "--role", "validator", "--uid", "0"
    )
    assert ok.exit_code == 0, ok.output  # the subnet owner's validator on uid 0 is fine


def test_arena_init_chooses_the_weight_rule(tmp_path, small_catalog_dir, problems_file):
    made = invoke(
        "arena",
        "init",
        "--dir",
        tmp_path / "a",
        "--catalog",
        small_catalog_dir,
        "--problems",
        problems_file,
        "--weights",
        "subnet",
    )
    assert made.exit_code == 0, made.output
    assert orjson.loads((tmp_path / "a" / "arena.json").read_bytes())["competition"]["weights"] == "subnet"
    bad = invoke(
        "arena",
        "init",
        "--dir",
        tmp_path / "b",
        "--catalog",
        small_catalog_dir,
        "--problems",
        problems_file,
        "--weights",
        "chain",
    )
    assert bad.exit_code == 2 and "--weights" in bad.output and not (tmp_path / "b" / "arena.json").exists()
