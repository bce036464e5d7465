"""The container backend: docker or podman with no network, a read-only root, no capabilities, no new
privileges, a process and memory limit enforced by the engine, an unprivileged user and a private
tmpfs /tmp. The production option where a container daemon exists; `bwrap` is the embedded one.

The image supplies the interpreter, so nothing of the host's Python is shared. The program's files,
the result FIFO and the proxy socket are bound in at the same fixed paths as with bwrap, so a program
cannot tell (and need not care) which backend runs it.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

from shoparena.sandbox.bwrap import APP_DIR, HOSTNAME, RESULT_PATH, SOCKET_PATH
from shoparena.sandbox.models import ContainerOptions, SandboxLimits, SandboxUnavailable

ENGINES = ("docker", "podman")


@functools.lru_cache(maxsize=4)
def find_engine(preferred: str | None) -> str:
    """The engine binary whose daemon answers; SandboxUnavailable says which were tried and why not."""
    names = (preferred,) if preferred else ENGINES
    reasons = []
    for name in names:
        path = shutil.which(name)
        if path is None:
            reasons.append(f"{name}: not installed")
            continue
        try:
            done = subprocess.run([path, "info"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError) as exc:
            reasons.append(f"{name}: {exc}")
            continue
        if done.returncode == 0:
            return path
        said = (done.stderr or done.stdout).strip().splitlines()
        reasons.append(f"{name}: {said[-1] if said else 'no daemon'}")
    raise SandboxUnavailable("no container engine with a running daemon (" + "; ".join(reasons) + ")")


def command(
    options: ContainerOptions,
    limits: SandboxLimits,
    *,
    engine: str,
    name: str,
    env_file: Path,
    app_dir: Path,
    socket_source: Path | None,
    result_source: Path,
    program: str,
    argv: list[str],
) -> list[str]:
    """The `run` command line for one program; the container is named `name` so it can be killed."""
    cpu_hard = limits.cpu_s + 1
    args = [engine, "run", "-i", "--name", name, "--hostname", HOSTNAME]
    args += ["--network", "none", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    args += ["--ipc", "none", "--pids-limit", str(limits.pids)]
    args += ["--memory", str(limits.memory_bytes), "--memory-swap", str(limits.memory_bytes)]
    args += ["--user", options.user]
    args += ["--tmpfs", f"/tmp:rw,nosuid,nodev,size={limits.tmp_bytes},mode=1777"]
    args += ["--ulimit", f"as={limits.address_space_bytes}:{limits.address_space_bytes}"]
    args += ["--ulimit", f"cpu={limits.cpu_s}:{cpu_hard}", "--ulimit", "core=0:0"]
    args += ["--ulimit", f"fsize={limits.file_bytes}:{limits.file_bytes}"]
    args += ["--ulimit", f"nofile={limits.open_files}:{limits.open_files}"]
    args += ["--env-file", str(env_file)]  # the values stay off the engine client's command line
    args += ["--volume", f"{app_dir}:{APP_DIR}:ro", "--volume", f"{result_source}:{RESULT_PATH}"]
    if socket_source is not None:
        args += ["--volume", f"{socket_source}:{SOCKET_PATH}"]
    args += ["--workdir", APP_DIR, "--entrypoint", options.python, options.image]
    args += ["-I", f"{APP_DIR}/{program}", *argv]
    return args


def kill(engine: str, name: str) -> None:
    subprocess.run([engine, "kill", name], capture_output=True, timeout=30, check=False)


def oom_killed(engine: str, name: str) -> bool:
    done = subprocess.run(
        [engine, "inspect", "--format", "{{.State.OOMKilled}}", name],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.stdout.strip() == "true"


def remove(engine: str, name: str) -> None:
    subprocess.run([engine, "rm", "-f", name], capture_output=True, timeout=60, check=False)
