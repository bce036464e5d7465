"""sandbox stage: run an untrusted Python program with nothing of the host reachable but one Unix
socket (the tool and inference proxy), under limits the kernel enforces (SPEC §6).

It sits below `agents` (the miner-file agent runs each problem through it) and imports nothing of
shoparena above `harness` — in fact nothing of shoparena at all, so it can be reasoned about alone.
"""

from typing import TYPE_CHECKING

from shoparena.records.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from shoparena.sandbox.models import (
        Backend,
        ContainerOptions,
        LimitHit,
        ProgramFile,
        SandboxLimits,
        SandboxOutcome,
        SandboxPolicy,
        SandboxUnavailable,
    )
    from shoparena.sandbox.run import RESULT_ENV, SOCKET_ENV, NoSandboxWarning
    from shoparena.sandbox.runner import check_sandbox, run_sandboxed

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Backend": "shoparena.sandbox.models",
        "ContainerOptions": "shoparena.sandbox.models",
        "LimitHit": "shoparena.sandbox.models",
        "ProgramFile": "shoparena.sandbox.models",
        "SandboxLimits": "shoparena.sandbox.models",
        "SandboxOutcome": "shoparena.sandbox.models",
        "SandboxPolicy": "shoparena.sandbox.models",
        "SandboxUnavailable": "shoparena.sandbox.models",
        "RESULT_ENV": "shoparena.sandbox.run",
        "SOCKET_ENV": "shoparena.sandbox.run",
        "NoSandboxWarning": "shoparena.sandbox.run",
        "check_sandbox": "shoparena.sandbox.runner",
        "run_sandboxed": "shoparena.sandbox.runner",
    },
)

__all__ = [
    "RESULT_ENV",
    "SOCKET_ENV",
    "Backend",
    "ContainerOptions",
    "LimitHit",
    "NoSandboxWarning",
    "ProgramFile",
    "SandboxLimits",
    "SandboxOutcome",
    "SandboxPolicy",
    "SandboxUnavailable",
    "check_sandbox",
    "run_sandboxed",
]
