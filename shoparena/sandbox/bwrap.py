"""The bubblewrap command line of one run: new user, pid, network, ipc, uts and cgroup namespaces; a
root that is an empty read-only tmpfs holding only the interpreter's mounts (`interpreter.MountPlan`),
the program's files (copied in from memory, not bound from a host directory), a private /tmp, its own
/proc and a minimal /dev; the proxy socket and the result FIFO bound at fixed paths; no environment
but the one given; no capabilities; nested user namespaces disabled; a new session (no TIOCSTI into a
terminal); killed with its parent; the program itself is the pid namespace's init.

Nothing here decides policy: `runner.run_sandboxed` chooses the uid, the limits and the files.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

from shoparena.sandbox.interpreter import MountPlan
from shoparena.sandbox.models import SandboxUnavailable

APP_DIR = "/app"
RUN_DIR = "/run/shoparena"
SOCKET_PATH = f"{RUN_DIR}/proxy.sock"
RESULT_PATH = f"{RUN_DIR}/result"
HOSTNAME = "sandbox"
INSTALL_HINT = "install it with `apt-get install -y bubblewrap` (the Makefile does when it runs as root)"


@functools.lru_cache(maxsize=1)
def find_bwrap() -> str:
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed; {INSTALL_HINT}")
    return path


@functools.lru_cache(maxsize=1)
def options() -> frozenset[str]:
    """The options this bwrap knows (older ones lack --disable-userns, --size, --perms)."""
    try:
        text = subprocess.run([find_bwrap(), "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxUnavailable(f"cannot run bwrap --help: {exc}") from None
    return frozenset(word for word in text.split() if word.startswith("--"))


REQUIRED = ("--unshare-user", "--unshare-pid", "--unshare-net", "--die-with-parent", "--ro-bind-data")


def sandbox_options(
    plan: MountPlan,
    *,
    inner_uid: int,
    inner_gid: int,
    env: dict[str, str],
    app_fds: dict[str, int],
    socket_source: Path | None,
    result_source: Path,
    tmp_bytes: int,
) -> tuple[list[str], list[str]]:
    """bwrap's options for one run, and warnings about protections this bwrap lacks. They are given
    to bwrap through a file descriptor (`command`), not its command line."""
    known = options()
    missing = [flag for flag in REQUIRED if flag not in known]
    if missing:
        raise SandboxUnavailable(f"this bwrap lacks {', '.join(missing)}; a newer bubblewrap is needed")
    warnings: list[str] = []
    args = ["--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
    args += ["--unshare-cgroup"]
    if "--disable-userns" in known:
        args += ["--disable-userns"]
    else:
        warnings.append("this bwrap cannot disable nested user namespaces (bubblewrap < 0.8)")
    args += ["--uid", str(inner_uid), "--gid", str(inner_gid), "--hostname", HOSTNAME]
    # --as-pid-1: the program is the namespace's init, so no bwrap process runs beside it in the
    # sandbox (one it could read the host paths of in /proc/1/cmdline, ptrace as the same uid, or stop
    # to stall the run); when the program exits, the kernel kills everything it left behind.
    args += ["--as-pid-1", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    for bind in plan.binds:
        args += ["--ro-bind", str(bind.source), str(bind.dest)]
    for dest, target in plan.symlinks.items():
        args += ["--symlink", target, dest]
    for mask in plan.masks:
        args += ["--tmpfs", str(mask), "--remount-ro", str(mask)]
    args += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]  # devices still work; no files
    if "--size" in known:
        args += ["--size", str(tmp_bytes)]
    else:
        warnings.append("this bwrap cannot size its /tmp (bubblewrap < 0.7); the cgroup still bounds it")
    if "--perms" in known:
        args += ["--perms", "1777"]
    args += ["--tmpfs", "/tmp", "--dir", APP_DIR]
    for name, fd in app_fds.items():
        args += ["--ro-bind-data", str(fd), f"{APP_DIR}/{name}"]
    args += ["--dir", RUN_DIR, "--ro-bind", str(result_source), RESULT_PATH]
    if socket_source is not None:
        args += ["--ro-bind", str(socket_source), SOCKET_PATH]
    args += ["--remount-ro", "/", "--chdir", APP_DIR]
    return args, warnings


def command(args_fd: int, argv: list[str]) -> list[str]:
    """`bwrap --args FD -- argv…`: the options are read from FD, because any host user can read a
    process's command line, and the environment (a session token) and host paths must stay private."""
    return [find_bwrap(), "--args", str(args_fd), "--", *argv]
