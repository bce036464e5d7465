"""`run_sandboxed`: run one untrusted Python program to completion under a backend and limits, and
return what it produced. It fails closed: whatever cannot be set up raises `SandboxUnavailable` before
a line of the program runs.

How a run goes, whichever backend (the machinery is in `run`):
1. a private host directory (mode 0711, random name) holds the result FIFO and a hard link to the
   proxy socket, so the sandbox's uid reaches exactly those two host objects;
2. a launcher shell (`/bin/sh`, running as the sandbox's host uid) lowers its own rlimits, says
   `ready` and blocks on its first line of stdin; meanwhile the supervisor moves it into the run's
   cgroup, so the backend and the program inherit both before anything of theirs runs (no
   `preexec_fn`, which is unsafe in a threaded parent such as a tool server);
3. the go line is written, the launcher execs the backend, and stdin carries the program's input;
4. stdout, stderr and the result are drained by threads with caps; at the wall-clock timeout, and
   after every run, every process of the run is killed (the program is its pid namespace's init, so
   the namespace dies with it; the cgroup is killed to the last process), so a setsid double-fork
   cannot outlive its run.

Running as root, the bwrap backend drops to an unprivileged host uid (65534 by default): uid 0 is
exempt from RLIMIT_NPROC and owns the host's files, and the sandbox must own nothing.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from shoparena.sandbox.models import (
    Backend,
    ProgramFile,
    SandboxLimits,
    SandboxOutcome,
    SandboxPolicy,
    SandboxUnavailable,
)
from shoparena.sandbox.run import RESULT_ENV, SOCKET_ENV, Run

RESERVED_ENV = frozenset({"HOME", "TMPDIR", "PATH", "LANG", SOCKET_ENV, RESULT_ENV})
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
DEFAULT_PROGRAM_NAME = "main.py"


def run_sandboxed(
    program: Path | str | ProgramFile,
    *,
    argv: Sequence[str] = (),
    files: Iterable[ProgramFile] = (),
    stdin: bytes = b"",
    env: Mapping[str, str] | None = None,
    socket_path: Path | str | None = None,
    limits: SandboxLimits | None = None,
    backend: Backend | str | None = None,
    policy: SandboxPolicy | None = None,
    cancel: threading.Event | None = None,
) -> SandboxOutcome:
    """Run `program` (a .py file on the host, Python source text, or a named ProgramFile) as
    `python -I /app/<name> argv…`
    with `files` beside it in a read-only /app, `stdin` as its input and nothing of the host reachable
    but `socket_path`, which appears at $SHOPARENA_PROXY_SOCKET (/run/shoparena/proxy.sock).

    The program returns a result by writing it to $SHOPARENA_RESULT_PATH (a FIFO); up to
    `limits.result_bytes` are kept, more refuses the result (`LimitHit.RESULT`). `env` adds variables
    to the program's otherwise fixed environment (HOME=TMPDIR=/tmp, a locale, the two paths above).
    `limits` and `backend` override the `policy`'s. Setting `cancel` (from another thread) ends the
    run as the wall clock would: the whole tree is killed and the outcome is `timed_out`, with a
    warning that says it was cancelled. Raises SandboxUnavailable when the sandbox cannot be set up —
    the program has then not run.
    """
    policy = policy or SandboxPolicy()
    updates: dict = {}
    if limits is not None:
        updates["limits"] = limits
    if backend is not None:
        updates["backend"] = Backend(backend)
    policy = policy.model_copy(update=updates)
    name, source = _program(program)
    app = [ProgramFile(name=name, content=source), *files]
    names = [f.name for f in app]
    if len(set(names)) != len(names):
        raise ValueError(f"two program files share a name: {sorted(n for n in names if names.count(n) > 1)}")
    extra_env = _checked_env(env or {})
    if policy.backend is Backend.BWRAP:
        check_sandbox(policy)
    with Run(policy, socket_path) as run:
        return run.execute(app, [str(a) for a in argv], stdin, extra_env, cancel)


# The canary: what a program inside must find (alone in its pid namespace, only a loopback interface)
# before any real program is run; a bwrap that starts but does not isolate —
# or does not start — makes the sandbox unavailable rather than a program's failure.
_CANARY = """
import json, os, socket
print(json.dumps({"pid": os.getpid(), "procs": sorted(p for p in os.listdir("/proc") if p.isdigit()),
                  "interfaces": [name for _, name in socket.if_nameindex()], "root": sorted(os.listdir("/"))}))
"""
_checked: set[tuple] = set()
_checked_lock = threading.Lock()


def check_sandbox(policy: SandboxPolicy | None = None) -> str:
    """Run the canary once per interpreter and uid under `policy`'s backend (bwrap: the first run of a
    process pays ~0.1 s for it); return what was verified, or raise SandboxUnavailable with bwrap's
    own words. run_sandboxed calls it for every bwrap run, so a broken sandbox fails closed."""
    policy = policy or SandboxPolicy()
    key = (policy.backend, policy.python, policy.host_uid, policy.host_gid, os.geteuid())
    with _checked_lock:
        if key in _checked:
            return "verified earlier in this process"
    canary = policy.model_copy(
        update={"limits": SandboxLimits(wall_s=30.0, require_cgroup=policy.limits.require_cgroup)}
    )
    with Run(canary, None) as run:
        outcome = run.execute([ProgramFile(name=DEFAULT_PROGRAM_NAME, content=_CANARY.encode())], [], b"", {})
    problems = []
    try:
        seen = json.loads(outcome.stdout) if outcome.exit_code == 0 else None
    except ValueError:
        seen = None
    if seen is None:
        raise SandboxUnavailable(
            f"{policy.backend.value} could not start a sandboxed program ({outcome.describe()}): "
            f"{outcome.stderr.strip()[-600:] or 'no error output'}"
        )
    if policy.backend is Backend.BWRAP:
        if seen["pid"] != 1 or seen["procs"] != ["1"]:
            problems.append(
                f"the program is not alone in a pid namespace (pid {seen['pid']}, /proc {seen['procs']})"
            )
        if seen["interfaces"] != ["lo"]:
            problems.append(f"the network is not isolated (interfaces {seen['interfaces']})")
    if problems:
        raise SandboxUnavailable("the sandbox does not isolate: " + "; ".join(problems))
    with _checked_lock:
        _checked.add(key)
    return f"{policy.backend.value}: pid namespace, loopback-only network, root {seen['root']}"


def _program(program: Path | str | ProgramFile) -> tuple[str, bytes]:
    if isinstance(program, ProgramFile):
        return program.name, program.content
    if isinstance(program, Path):
        return ProgramFile.from_path(program).name, program.read_bytes()
    return DEFAULT_PROGRAM_NAME, program.encode()


def _checked_env(env: Mapping[str, str]) -> dict[str, str]:
    checked = {}
    for key, value in env.items():
        if not ENV_NAME.match(key) or key.startswith(("LD_", "PYTHON")) or key in RESERVED_ENV:
            raise ValueError(f"environment variable {key!r} may not be passed into the sandbox")
        if "\0" in value:
            raise ValueError(f"environment variable {key!r} contains a NUL byte")
        checked[key] = value
    return checked
