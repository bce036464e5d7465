"""Hostile programs that attack resources rather than the host's data: each is stopped by a limit the
kernel or the supervisor enforces, the run still returns an outcome that says which limit, and nothing
of the run survives it."""

from __future__ import annotations

import json
import secrets
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import pytest

from shoparena.sandbox import LimitHit, SandboxUnavailable
from shoparena.sandbox.models import MiB
from tests.sandbox.conftest import SMALL, attempts, run_program

pytestmark = pytest.mark.usefixtures("sandbox_ready")


def host_processes_with(marker: str) -> list[int]:
    """Host pids whose command line carries `marker` (the programs take it as an argument)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_fork_bomb_is_stopped_by_the_pids_limit():
    marker = secrets.token_hex(8)
    limits = SMALL.model_copy(update={"pids": 32, "wall_s": 3.0})
    started = time.monotonic()
    outcome = run_program("fork_bomb", "{}", marker, limits=limits)
    assert time.monotonic() - started < 10
    assert outcome.timed_out  # it bombs for ever after reporting; the wall clock ends it
    assert LimitHit.PIDS in outcome.limits_hit and LimitHit.WALL in outcome.limits_hit
    report = json.loads(outcome.result)
    assert report["refused"].startswith("BlockingIOError") and report["forked"] < 32
    assert outcome.pids_peak is None or outcome.pids_peak <= 32
    assert host_processes_with(marker) == []


def test_memory_bomb_across_children_is_bounded_by_the_tree_limit():
    limits = SMALL.model_copy(update={"memory_bytes": 256 * MiB, "address_space_bytes": 512 * MiB})
    # 4 children x 120 MiB = 480 MiB: each far under its 512 MiB address space, together over 256 MiB
    params = {"huge_bytes": 1024 * MiB, "children": 4, "child_bytes": 120 * MiB, "hold_s": 1.5}
    outcome = run_program("memory_bomb", json.dumps(params), limits=limits)
    assert outcome.exit_code == 0, outcome
    assert "MemoryError" in attempts(outcome)["one huge allocation"]["error"]  # RLIMIT_AS
    children = json.loads(outcome.result)["children"]
    killed = [c for c in children.values() if c.get("signal") == signal.SIGKILL]
    assert killed, children  # the OOM killer took some of them
    assert LimitHit.MEMORY in outcome.limits_hit
    assert outcome.memory_peak_bytes is not None and outcome.memory_peak_bytes <= 256 * MiB


def test_endless_loop_is_stopped_by_the_cpu_limit():
    limits = SMALL.model_copy(update={"cpu_s": 1, "wall_s": 10.0})
    outcome = run_program("spin", limits=limits)
    # the program is its namespace's init, which ignores SIGXCPU: the hard limit's SIGKILL ends it
    assert outcome.signal in (signal.SIGXCPU, signal.SIGKILL), outcome
    assert outcome.limits_hit == [LimitHit.CPU] and not outcome.timed_out


def test_endless_sleep_is_stopped_by_the_wall_clock():
    limits = SMALL.model_copy(update={"wall_s": 1.5})
    outcome = run_program("spin", "sleep", limits=limits)
    assert outcome.timed_out and outcome.limits_hit == [LimitHit.WALL]
    assert outcome.exit_code is None and not outcome.ok
    assert 1.5 <= outcome.wall_s < 3


@pytest.mark.parametrize("mode", ["return", "linger"])
def test_setsid_double_fork_does_not_outlive_the_run(proxy, mode):
    marker = secrets.token_hex(8)
    limits = SMALL.model_copy(update={"wall_s": 2.0})
    outcome = run_program("daemon", mode, marker, socket_path=proxy.path, limits=limits)
    assert json.loads(outcome.result) == {"attempts": [], "daemonised": True}
    assert outcome.timed_out == (mode == "linger")
    beats = proxy.count("/heartbeat")
    assert beats > 0  # the daemon really ran and reached the only channel out
    time.sleep(0.5)
    assert proxy.count("/heartbeat") == beats  # …and stopped when the run ended
    assert host_processes_with(marker) == []


def test_a_cancelled_run_is_killed_at_once():
    marker = secrets.token_hex(8)
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    outcome = run_program(
        "spin", "sleep", marker, limits=SMALL.model_copy(update={"wall_s": 60.0}), cancel=cancel
    )
    assert time.monotonic() - started < 5
    assert outcome.timed_out and outcome.wall_s < 5
    assert any(w.startswith("cancelled by the caller after") for w in outcome.warnings)
    assert host_processes_with(marker) == []


def test_output_flood_is_capped_and_the_run_completes():
    outcome = run_program("flood", json.dumps({"mib": 8}))
    assert outcome.ok, outcome
    assert json.loads(outcome.result)["done"] is True
    assert outcome.stdout_bytes == outcome.stderr_bytes == 8 * MiB
    assert LimitHit.STDOUT in outcome.limits_hit and LimitHit.STDERR in outcome.limits_hit
    assert len(outcome.stdout) < SMALL.stdout_bytes + 100 and "bytes dropped by the sandbox" in outcome.stdout


def test_result_of_a_gigabyte_is_refused_quickly():
    started = time.monotonic()
    outcome = run_program("huge_result")
    assert time.monotonic() - started < 10
    assert outcome.result is None and outcome.result_too_large
    assert SMALL.result_bytes < outcome.result_bytes <= SMALL.result_bytes + MiB
    assert "refused after" in outcome.stderr  # the writer saw the channel close (EPIPE) and went on
    assert outcome.exit_code == 0 and not outcome.ok


@pytest.fixture
def own_tempdir(monkeypatch):
    """A temp directory of this test's own (the runs make theirs inside it), enterable by every user."""
    private = Path(tempfile.mkdtemp(prefix="sandbox-tmp-", dir="/tmp"))
    private.chmod(0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    yield private
    shutil.rmtree(private)


def test_nothing_of_a_run_is_left_on_the_host(own_tempdir):
    outcome = run_program("spin", "sleep", limits=SMALL.model_copy(update={"wall_s": 0.5}))
    assert outcome.timed_out
    assert list(own_tempdir.iterdir()) == []


def test_a_run_directory_the_sandbox_cannot_enter_refuses_to_run(own_tempdir):
    own_tempdir.chmod(0o700)
    with pytest.raises(SandboxUnavailable, match="cannot enter the run directory"):
        run_program("spin", "sleep")
    assert list(own_tempdir.iterdir()) == []
