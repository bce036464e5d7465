"""Hostile programs try to escape the bwrap sandbox; every attempt must fail while the run goes on and
records the failure (issue 12, "The sandbox"). The programs are in tests/sandbox/programs/."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest

from shoparena.sandbox import SandboxPolicy, run_sandboxed
from tests.sandbox.conftest import SMALL, attempts, run_program

pytestmark = pytest.mark.usefixtures("sandbox_ready")
REPO = Path(__file__).resolve().parents[2]


def host_ipv4() -> list[str]:
    return sorted(
        {a.address for addrs in psutil.net_if_addrs().values() for a in addrs if a.family == socket.AF_INET}
        - {"127.0.0.1"}
    )


def test_benign_program_uses_the_socket_and_returns_a_result(proxy):
    problem = {"query": "yoga mat"}
    outcome = run_program(
        "benign", "--flag", stdin=json.dumps(problem).encode(), env={"SESSION": "tok"}, socket_path=proxy.path
    )
    assert outcome.ok, outcome
    result = json.loads(outcome.result)
    assert result["argv"] == ["--flag"]
    assert json.loads(result["answer"]["result"]["echo"]) == {"q": "yoga mat"}
    assert proxy.requests == [
        {"path": "/v1/tools/find_product", "body": b'{"q": "yoga mat"}', "auth": "Bearer tok"}
    ]
    assert outcome.limits_hit == [] and outcome.warnings == []


def test_network_is_unreachable_except_the_socket():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("0.0.0.0", 0))
    listener.listen()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("0.0.0.0", 0))
    udp.settimeout(0.2)
    accepted: list = []

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept())
            except TimeoutError:
                continue

    stop = threading.Event()
    thread = threading.Thread(target=accept)
    thread.start()
    hosts = host_ipv4()
    abstract_name = f"shoparena-test-{secrets.token_hex(6)}"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind("\0" + abstract_name)
    abstract.listen()
    try:
        params = {
            "port": listener.getsockname()[1],
            "udp_port": udp.getsockname()[1],
            "hosts": hosts,
            "abstract": abstract_name,
        }
        outcome = run_program("network", json.dumps(params))
    finally:
        stop.set()
        thread.join()
        listener.close()
        abstract.close()
    with pytest.raises(TimeoutError):
        udp.recvfrom(100)
    udp.close()
    assert outcome.ok, outcome
    tried = attempts(outcome)
    assert len(tried) == 4 + 2 * (1 + len(hosts))
    assert "ConnectionRefusedError" in tried["abstract unix socket"]["error"]
    # a datagram to 127.0.0.1 leaves without error: into the sandbox's own empty loopback (not received
    # below); everything else fails at once
    loopback_udp = f"udp 127.0.0.1:{params['udp_port']}"
    assert all(item["blocked"] for name, item in tried.items() if name != loopback_udp), tried
    assert "ConnectionRefusedError" in tried["postgres 127.0.0.1:5432"]["error"]  # its own empty loopback
    assert accepted == []
    assert json.loads(outcome.result)["interfaces"] == ["lo"]


@pytest.fixture
def host_dir():
    """A host directory outside /tmp (the sandbox has a /tmp of its own), as a run directory would be."""
    path = Path(tempfile.mkdtemp(prefix="sandbox-test-", dir="/var/tmp"))
    os.chmod(path, 0o755)  # even a world-readable path is not in the sandbox's view
    yield path
    shutil.rmtree(path)


@pytest.mark.parametrize("where", ["tmp", "var"])
def test_host_files_are_out_of_reach_and_nothing_outside_tmp_is_writable(tmp_path, host_dir, where):
    base = tmp_path if where == "tmp" else host_dir
    token = secrets.token_hex(16)
    secret = base / "secret" / "keys.json"
    secret.parent.mkdir()
    secret.write_text(json.dumps({"secret_seed": token}))
    problems = base / "problems.jsonl"
    problems.write_text(json.dumps({"id": "p1", "reward": token}) + "\n")
    run_dir = base / "run"
    run_dir.mkdir()
    (run_dir / "trajectories.jsonl").write_text("")
    params = {"secret": str(secret), "problems": str(problems), "run_dir": str(run_dir), "repo": str(REPO)}
    outcome = run_program("files", json.dumps(params))
    assert outcome.ok, outcome
    assert token not in outcome.result.decode() and token not in outcome.stdout + outcome.stderr
    tried = attempts(outcome)
    got_through = {name for name, item in tried.items() if not item["blocked"]}
    # What may succeed: writing the private /tmp (also where a host path under /tmp lands), listing the
    # skeleton of directories that holds the interpreter, and listing the masked, empty site-packages.
    allowed = {"write /tmp", "list /root", "list site-packages"}
    if where == "tmp":
        allowed.add("create run dir")
    assert got_through <= allowed, {name: tried[name] for name in got_through - allowed}
    assert tried["list site-packages"]["value"] == []
    assert tried["list /root"]["value"] == [".pyenv"] or tried["list /root"]["blocked"]
    assert json.loads(outcome.result)["tmp_ok"]
    assert "ModuleNotFoundError" in tried["import shoparena"]["error"]
    assert "ModuleNotFoundError" in tried["import shoparena from repo"]["error"]
    assert sorted(os.listdir(run_dir)) == ["trajectories.jsonl"]
    assert (run_dir / "trajectories.jsonl").read_text() == ""
    assert not Path("/escape.txt").exists()
    root = set(json.loads(outcome.result)["root"])
    assert root <= {"app", "dev", "etc", "lib", "lib64", "proc", "root", "run", "tmp", "usr"}


def test_other_processes_cannot_be_seen_read_signalled_or_traced(monkeypatch):
    marker = secrets.token_hex(12)
    monkeypatch.setenv("SHOPARENA_TEST_SECRET", marker)
    # a host process of the very uid the sandbox runs as: the easiest victim there could be
    same_uid = {"user": 65534, "group": 65534, "extra_groups": []} if os.geteuid() == 0 else {}
    decoy = subprocess.Popen(
        ["/bin/sh", "-c", "sleep 60; :", marker], env={"SESSION_TOKEN": marker}, **same_uid
    )
    try:
        params = {"host_pid": os.getpid(), "decoy_pid": decoy.pid}
        outcome = run_program("processes", json.dumps(params))
        assert decoy.poll() is None, "the decoy was killed from inside the sandbox"
    finally:
        decoy.kill()
        decoy.wait()
    assert outcome.ok, outcome
    assert marker not in outcome.result.decode()
    report = json.loads(outcome.result)
    # the program is its pid namespace's init and sees only itself: no parent, no host process
    assert report["pid"] == 1 and report["ppid"] == 0
    assert list(report["processes"]) == ["1"]
    assert "pytest" not in report["processes"]["1"]["cmdline"]
    tried = attempts(outcome)
    for name in ("host parent", "decoy"):
        for what in ("cmdline", "environ", "mem", "ptrace", "signal"):
            key = (
                f"ptrace {name}"
                if what == "ptrace"
                else f"signal {name}"
                if what == "signal"
                else f"{name} {what}"
            )
            assert tried[key]["blocked"], tried[key]
    assert tried["signal every process"]["blocked"]


SYSTEM_PYTHON = Path("/usr/bin/python3")


@pytest.mark.skipif(not SYSTEM_PYTHON.exists(), reason="no system interpreter at /usr/bin/python3")
def test_a_system_interpreter_is_bound_directly_and_its_packages_are_hidden():
    """/usr/bin/python3 needs no staging (the sandbox uid can read it); Debian's dist-packages, which
    the /usr/lib bind would show, is masked by an empty read-only directory."""
    program = (
        "import json, os, sys\n"
        "dirs = {p: sorted(os.listdir(p)) for p in sys.path if os.path.isdir(p) and 'packages' in p}\n"
        "print(json.dumps({'exe': sys.executable, 'dirs': dirs}))\n"
        "import yaml\n"
    )
    outcome = run_sandboxed(program, policy=SandboxPolicy(python=str(SYSTEM_PYTHON), limits=SMALL))
    seen = json.loads(outcome.stdout)
    assert seen["exe"].startswith("/usr/bin/python3")
    assert seen["dirs"] and all(listing == [] for listing in seen["dirs"].values()), seen
    assert outcome.exit_code == 1 and "No module named 'yaml'" in outcome.stderr


def test_the_session_token_is_not_on_any_host_command_line():
    """Any host user can read every process's command line: the environment given to the program (a
    session token) must not be on bwrap's — bwrap reads its options from a file descriptor."""
    token = secrets.token_hex(16)
    seen: list[str] = []
    done = threading.Event()

    def scan() -> None:
        while not done.is_set():
            for entry in Path("/proc").iterdir():
                try:
                    if entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes():
                        seen.append(entry.name)
                except OSError:
                    continue
            time.sleep(0.02)

    scanner = threading.Thread(target=scan)
    scanner.start()
    try:
        program = f"import os, time\ntime.sleep(1.0)\nprint(os.environ['SESSION'] == {token!r})\n"
        outcome = run_sandboxed(program, env={"SESSION": token}, limits=SMALL)
    finally:
        done.set()
        scanner.join()
    assert outcome.ok and outcome.stdout == "True\n", outcome
    assert seen == []
