"""Where a miner file's run meets the sandbox: the programs placed beside it in /app, the sandbox
policy made from the file agent's options, waiting for a run that an episode's alarm may interrupt,
and the notes a run's limits leave in the record. `file_agent` is the agent; this is its plumbing."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from shoparena.agents.base import AgentSpecError
from shoparena.sandbox import Backend, LimitHit, ProgramFile, SandboxLimits, SandboxOutcome, SandboxPolicy
from shoparena.sandbox.models import MiB

_HERE = Path(__file__).resolve().parent
RUNNER = ProgramFile(name="_shoparena_runner.py", content=(_HERE / "runner.py").read_bytes())
SDK = ProgramFile(name="_shoparena_sdk.py", content=(_HERE / "sdk.py").read_bytes())
"""Beside the miner's file in the sandbox's /app, which is not on the path: the runner loads both by path."""
SUBNET_FILES = tuple(
    ProgramFile(
        name=f"_shoparena_subnet_{module}.py", content=(_HERE / "subnet_compat" / f"{module}.py").read_bytes()
    )
    for module in ("agent_interface", "proxy_client")
)
"""SN15's `src.agent.agent_interface` and `src.agent.proxy_client` (`subnet_compat`), which the runner
maps those names onto: subnet miner files run unchanged (issue 23)."""
FALLBACK_MINER_NAME = "miner.py"
"""The miner's file name in /app when its own is not a plain module name or is taken by the harness."""
MAX_RESULT_BYTES = 4 * MiB
"""The claimed steps `agent_main` may return; a real agent's steps are tens of KB."""
STDERR_TAIL_CHARS = 4096
MAX_NOTE_CHARS = 2000
T = TypeVar("T")
BACKENDS = ", ".join(b.value for b in Backend)
NONE_WARNING = (
    "file agent: sandbox 'none': miner files run unconfined, as this user, with the host's files and "
    "network; use it only for code you trust"
)
NOTED_LIMITS = {
    LimitHit.CPU: "its CPU-seconds limit",
    LimitHit.MEMORY: "the memory limit of its whole process tree",
    LimitHit.PIDS: "the process-count limit of its process tree (a fork was refused)",
}


def miner_file_name(stem: str) -> str:
    """The miner's file name in /app: its own when that is a plain module name the harness does not use."""
    name = f"{stem}.py"
    plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,100}", stem) is not None
    taken = (RUNNER.name, SDK.name, *(f.name for f in SUBNET_FILES))
    return name if plain and name not in taken else FALLBACK_MINER_NAME


def sandbox_notes(outcome: SandboxOutcome, limits: SandboxLimits) -> list[str]:
    """What the sandbox did to the run that its error does not already say: a limit that stopped part
    of the miner (it may still have returned), and the sandbox's own warnings (`none`: no isolation)."""
    notes = [(w if w.startswith("sandbox") else f"sandbox: {w}")[:MAX_NOTE_CHARS] for w in outcome.warnings]
    for hit in outcome.limits_hit:
        if hit not in NOTED_LIMITS:
            continue
        note = f"sandbox: the miner reached {NOTED_LIMITS[hit]}"
        if hit is LimitHit.MEMORY:
            peak = f", peak {outcome.memory_peak_bytes / MiB:.0f} MiB" if outcome.memory_peak_bytes else ""
            note += f" ({limits.memory_bytes / MiB:.0f} MiB{peak}); the kernel killed processes of it"
        elif hit is LimitHit.PIDS:
            note += f" ({limits.pids})"
        elif hit is LimitHit.CPU:
            note += f" ({limits.cpu_s} s) and was killed"
        notes.append(note)
    return notes


def waited(call: Callable[[threading.Event], T]) -> T:
    """Run `call(cancel)` in a thread of its own and wait for it, whatever interrupts the wait.

    The caller may be an eval worker whose episode alarm raises in this very thread. Interrupted in the
    middle, a sandboxed run would skip its own clean-up; instead the interruption cancels the run (the
    whole tree is killed, as at its wall clock), waits for it to finish, and is raised once every
    process of the run is gone."""
    box: dict[str, Any] = {}
    cancel = threading.Event()

    def target() -> None:
        try:
            box["value"] = call(cancel)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, name="sandboxed-miner", daemon=True)
    thread.start()
    interrupted: BaseException | None = None
    while thread.is_alive():
        try:
            thread.join()
        except BaseException as exc:
            cancel.set()
            interrupted = interrupted or exc
    if interrupted is not None:
        raise interrupted
    if "error" in box:
        raise box["error"]
    return box["value"]


def sandbox_policy(
    sandbox: str,
    *,
    timeout_s: float,
    memory_mb: int,
    address_space_mb: int,
    cpu_s: int | None,
    pids: int,
    open_files: int,
    file_mb: int,
    python: str | None,
) -> SandboxPolicy:
    """The sandbox a miner file runs in, from the agent's options; the error names the bad option."""
    try:
        backend = Backend(sandbox)
    except ValueError:
        raise AgentSpecError(f"file agent: sandbox must be one of {BACKENDS}, got {sandbox!r}") from None
    try:
        limits = SandboxLimits(
            wall_s=timeout_s,
            cpu_s=cpu_s if cpu_s is not None else int(timeout_s) + 5,
            memory_bytes=memory_mb * MiB,
            address_space_bytes=address_space_mb * MiB,
            pids=pids,
            open_files=open_files,
            file_bytes=file_mb * MiB,
            stdout_bytes=0,  # never read: the result has its own channel
            stderr_bytes=2 * STDERR_TAIL_CHARS,
            result_bytes=MAX_RESULT_BYTES,
        )
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise AgentSpecError(f"file agent: bad limits: {problems}") from None
    return SandboxPolicy(backend=backend, limits=limits, python=python)
