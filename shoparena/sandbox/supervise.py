"""Watching one sandboxed process tree from outside: the launcher's ready handshake, waiting without
reaping (so a process group id cannot be reused before it is killed), killing, feeding stdin, and
turning what was observed into a `SandboxOutcome`."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable

from shoparena.sandbox.cgroups import CgroupStats
from shoparena.sandbox.models import Backend, LimitHit, SandboxOutcome, SandboxUnavailable
from shoparena.sandbox.streams import CappedResult, HeadTail

READY = b"ready\n"


def feed(pipe, data: bytes) -> None:
    """Write the go line and the program's input; a program that exits without reading ends it."""
    with contextlib.suppress(BrokenPipeError, OSError, ValueError):
        pipe.write(data)
    with contextlib.suppress(BrokenPipeError, OSError, ValueError):
        pipe.close()


def await_ready(out_fd: int, err_fd: int, timeout_s: float = 30.0) -> None:
    """Read the launcher's `ready` line, which it prints once its rlimits are set."""
    got = b""
    deadline = time.monotonic() + timeout_s
    while len(got) < len(READY):
        ready, _, _ = select.select([out_fd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(out_fd, len(READY) - len(got)) if ready else b""
        if not chunk:
            os.set_blocking(err_fd, False)
            with contextlib.suppress(OSError):
                got += os.read(err_fd, 2000)
            raise SandboxUnavailable(f"the sandbox launcher failed before the program started: {got!r}")
        got += chunk
    if got != READY:
        raise SandboxUnavailable(f"the sandbox launcher said {got!r} instead of ready")


def wait_unreaped(pid: int, timeout_s: float, cancel: threading.Event | None = None) -> bool:
    """Wait for `pid` to exit without reaping it; False at the timeout or once `cancel` is set."""
    deadline = time.monotonic() + timeout_s
    delay = 0.001
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0 or (cancel is not None and cancel.is_set()):
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.02)


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def quietly(check: Callable[[], object]) -> bool:
    try:
        return bool(check())
    except (OSError, subprocess.SubprocessError):
        return False


def build_outcome(
    backend: Backend,
    returncode: int,
    *,
    timed_out: bool,
    oom: bool,
    stats: CgroupStats,
    stdout: HeadTail,
    stderr: HeadTail,
    result: CappedResult,
    wall_s: float,
    setup_s: float,
    warnings: list[str],
) -> SandboxOutcome:
    exit_code: int | None = returncode
    signum: int | None = None
    if returncode < 0:
        exit_code, signum = None, -returncode
    elif backend is not Backend.NONE and returncode > 128 and _is_signal(returncode - 128):
        exit_code, signum = None, returncode - 128  # bwrap and the engines report a signal as 128 + n
    hits: list[LimitHit] = []
    if timed_out:
        hits.append(LimitHit.WALL)
    # The program is its pid namespace's init, which ignores SIGXCPU (no handler), so the CPU limit
    # ends it with the hard limit's SIGKILL; the only other SIGKILLs are the OOM killer's and ours.
    if signum == signal.SIGXCPU or (signum == signal.SIGKILL and not oom and not timed_out):
        hits.append(LimitHit.CPU)
    if oom:
        hits.append(LimitHit.MEMORY)
    if stats.pids_refused:
        hits.append(LimitHit.PIDS)
    if stdout.truncated:
        hits.append(LimitHit.STDOUT)
    if stderr.truncated:
        hits.append(LimitHit.STDERR)
    if result.overflow:
        hits.append(LimitHit.RESULT)
    return SandboxOutcome(
        backend=backend,
        exit_code=None if timed_out else exit_code,
        signal=None if timed_out else signum,
        timed_out=timed_out,
        limits_hit=hits,
        stdout=stdout.text(),
        stdout_bytes=stdout.total,
        stderr=stderr.text(),
        stderr_bytes=stderr.total,
        result=result.value(),
        result_bytes=result.total,
        wall_s=wall_s,
        setup_s=setup_s,
        memory_peak_bytes=stats.memory_peak_bytes,
        pids_peak=stats.pids_peak,
        warnings=list(dict.fromkeys(warnings)),
    )


def _is_signal(number: int) -> bool:
    try:
        signal.Signals(number)
    except ValueError:
        return False
    return True
