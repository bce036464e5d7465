"""The sandbox's typed boundary: what a run may use (`SandboxLimits`), which isolation runs it
(`Backend`), and what came back (`SandboxOutcome`).

Defaults are the arena's production numbers (SPEC §6, issue 12); tests pass small ones. Every limit is
enforced by the kernel (rlimits, a cgroup, namespaces) or by the supervising process reading a pipe —
never by code inside the sandbox, which is the code we do not trust.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

NOBODY = 65534
"""The host uid (and gid) a sandbox runs as when its supervisor is root: it owns no file."""
GiB = 1 << 30
MiB = 1 << 20
KiB = 1 << 10


class Backend(StrEnum):
    """`bwrap`: bubblewrap namespaces on this machine (the embedded default). `container`: docker or
    podman (the production option where a daemon exists). `none`: a plain subprocess, no isolation —
    only by explicit choice, and every run says so."""

    BWRAP = "bwrap"
    CONTAINER = "container"
    NONE = "none"


class LimitHit(StrEnum):
    """A limit the run reached, as the kernel or the supervisor observed it."""

    WALL = "wall"  # the wall-clock timeout: the whole tree was killed
    CPU = "cpu"  # RLIMIT_CPU: a process got SIGXCPU/SIGKILL
    MEMORY = "memory"  # the cgroup's memory limit: the OOM killer ran inside the tree
    PIDS = "pids"  # the cgroup's process limit refused a fork
    STDOUT = "stdout"  # more output than kept; the rest was read and dropped
    STDERR = "stderr"
    RESULT = "result"  # the result channel exceeded its cap and was closed; no result is kept


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be set up here, so nothing was run (fail closed). The message says why and
    what would fix it."""


class SandboxLimits(BaseModel):
    """Per-run limits. rlimits bound each process; `memory_bytes` and `pids` bound the whole tree
    through a cgroup; `wall_s` bounds the run, after which every process of it is killed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    address_space_bytes: int = Field(4 * GiB, gt=0, description="RLIMIT_AS of each process")
    cpu_s: int = Field(310, gt=0, description="RLIMIT_CPU (seconds of CPU) of each process")
    file_bytes: int = Field(64 * MiB, gt=0, description="RLIMIT_FSIZE: the largest file a process writes")
    open_files: int = Field(256, ge=16, description="RLIMIT_NOFILE")
    pids: int = Field(256, ge=8, description="processes and threads of the whole tree (cgroup pids.max)")
    memory_bytes: int = Field(4 * GiB, ge=32 * MiB, description="memory of the whole tree (cgroup)")
    tmp_bytes: int = Field(256 * MiB, gt=0, description="size of the private /tmp (also charged to memory)")
    wall_s: float = Field(300.0, gt=0, description="wall-clock timeout; then the whole tree is killed")
    stdout_bytes: int = Field(64 * KiB, ge=0, description="stdout kept (head and tail); the rest dropped")
    stderr_bytes: int = Field(64 * KiB, ge=0, description="stderr kept (head and tail); the rest dropped")
    result_bytes: int = Field(32 * MiB, gt=0, description="largest result accepted; more is refused")
    require_cgroup: bool = Field(
        True,
        description="refuse to run when no cgroup can bound memory and processes of the tree; False "
        "falls back to per-process rlimits (RLIMIT_NPROC counts the whole uid, not the tree)",
    )


class ContainerOptions(BaseModel):
    """How the container backend starts its container: which engine and image. The image must have
    the interpreter at `python` (run as `python -I`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: str | None = Field(None, description="docker or podman; None: the first found on PATH")
    image: str = "python:3.11-slim"
    python: str = "python3"
    user: str = "1000:1000"


class SandboxOutcome(BaseModel):
    """What one sandboxed run produced. Everything in it came out of the sandbox through a capped pipe
    (stdout, stderr, the result channel) or was observed by the supervisor (exit status, limits hit,
    peaks); the program cannot write to anything else the caller reads."""

    model_config = ConfigDict(extra="forbid")

    backend: Backend
    exit_code: int | None = Field(None, description="the program's exit status; None when killed by a signal")
    signal: int | None = Field(None, description="the signal that ended the program, when one did")
    timed_out: bool = False
    limits_hit: list[LimitHit] = Field(default_factory=list)
    stdout: str = ""
    stdout_bytes: int = Field(0, description="bytes the program wrote to stdout, kept or not")
    stderr: str = ""
    stderr_bytes: int = 0
    result: bytes | None = Field(
        None, description="the bytes written to the result channel, when within the cap"
    )
    result_bytes: int = Field(
        0, description="bytes written to the result channel (counted up to the cap + 1)"
    )
    wall_s: float = 0.0
    setup_s: float = Field(0.0, description="time spent preparing the sandbox before the program started")
    memory_peak_bytes: int | None = None
    pids_peak: int | None = None
    warnings: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The program exited 0 on its own, within every limit that ends a run."""
        ending = {LimitHit.WALL, LimitHit.CPU, LimitHit.MEMORY, LimitHit.RESULT}
        return self.exit_code == 0 and not self.timed_out and not ending.intersection(self.limits_hit)

    @property
    def result_too_large(self) -> bool:
        return LimitHit.RESULT in self.limits_hit

    def describe(self) -> str:
        """One line for an error message: how the run ended and which limits it reached."""
        if self.timed_out:
            how = f"killed at the {self.wall_s:.1f} s wall-clock timeout"
        elif self.signal is not None:
            how = f"killed by signal {self.signal}"
        else:
            how = f"exit status {self.exit_code}"
        hits = ", ".join(hit.value for hit in self.limits_hit)
        return how + (f"; limits reached: {hits}" if hits else "")


class ProgramFile(BaseModel):
    """A file placed read-only beside the program in the sandbox's /app (the miner file, the SDK)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
    content: bytes

    @classmethod
    def from_path(cls, path: Path, name: str | None = None) -> ProgramFile:
        return cls(name=name or path.name, content=path.read_bytes())


class SandboxPolicy(BaseModel):
    """Which backend runs a program, under which limits, with which interpreter and host uid."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Backend = Backend.BWRAP
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    python: str | None = Field(None, description="host interpreter for bwrap/none; default: this one's base")
    host_uid: int = Field(NOBODY, ge=1, description="host uid of the sandbox when the supervisor is root")
    host_gid: int = Field(NOBODY, ge=1)
    container: ContainerOptions = Field(default_factory=ContainerOptions)
