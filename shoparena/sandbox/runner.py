"""`run_sandboxed`: run one untrusted Python program to completion under a backend and limits, and
return what it produced. It fails closed: whatever cannot be set up raises `SandboxUnavailable` before
a line of the program runs.

How a run goes, whichever backend:
1. a private host directory (mode 0711, random name) holds the result FIFO and a hard link to the
   proxy socket, so the sandbox's uid reaches exactly those two host objects;
2. a launcher shell (`/bin/sh`, running as the sandbox's host uid) is started and blocks on its first
   line of stdin; meanwhile the supervisor moves it into the run's cgroup and sets its rlimits, so
   the backend and the program inherit both before anything of theirs runs (no `preexec_fn`, which is
   unsafe in a threaded parent such as a tool server);
3. the go line is written, the launcher execs the backend, and stdin carries the program's input;
4. stdout, stderr and the result are drained by threads with caps; at the wall-clock timeout, and
   after every run, every process of the run is killed (the pid namespace dies with bwrap, the
   cgroup is killed to the last process), so a setsid double-fork cannot outlive its run.

Running as root, the bwrap backend drops to an unprivileged host uid (65534 by default): uid 0 is
exempt from RLIMIT_NPROC and owns the host's files, and the sandbox must own nothing.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import select
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from shoparena.sandbox import bwrap, cgroups, container, interpreter
from shoparena.sandbox.models import (
    Backend,
    ContainerOptions,
    LimitHit,
    ProgramFile,
    SandboxLimits,
    SandboxOutcome,
    SandboxUnavailable,
)
from shoparena.sandbox.streams import CappedResult, HeadTail

log = logging.getLogger(__name__)

SOCKET_ENV = "SHOPARENA_PROXY_SOCKET"
RESULT_ENV = "SHOPARENA_RESULT_PATH"
NOBODY = 65534
READY = b"ready\n"
RESERVED_ENV = frozenset({"HOME", "TMPDIR", "PATH", "LANG", SOCKET_ENV, RESULT_ENV})
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
DEFAULT_PROGRAM_NAME = "main.py"


class NoSandboxWarning(UserWarning):
    """A program ran with `--sandbox none`: no isolation at all."""


class SandboxPolicy(BaseModel):
    """Which backend runs a program, under which limits, with which interpreter and host uid."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Backend = Backend.BWRAP
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    python: str | None = Field(None, description="host interpreter for bwrap/none; default: this one's base")
    host_uid: int = Field(NOBODY, ge=1, description="host uid of the sandbox when the supervisor is root")
    host_gid: int = Field(NOBODY, ge=1)
    container: ContainerOptions = Field(default_factory=ContainerOptions)


def run_sandboxed(
    program: Path | str,
    *,
    argv: Sequence[str] = (),
    files: Iterable[ProgramFile] = (),
    stdin: bytes = b"",
    env: Mapping[str, str] | None = None,
    socket_path: Path | str | None = None,
    limits: SandboxLimits | None = None,
    backend: Backend | str | None = None,
    policy: SandboxPolicy | None = None,
) -> SandboxOutcome:
    """Run `program` (a .py file on the host, or Python source text) as `python -I /app/<name> argv…`
    with `files` beside it in a read-only /app, `stdin` as its input and nothing of the host reachable
    but `socket_path`, which appears at $SHOPARENA_PROXY_SOCKET (/run/shoparena/proxy.sock).

    The program returns a result by writing it to $SHOPARENA_RESULT_PATH (a FIFO); up to
    `limits.result_bytes` are kept, more refuses the result (`LimitHit.RESULT`). `env` adds variables
    to the program's otherwise fixed environment (HOME=TMPDIR=/tmp, a locale, the two paths above).
    `limits` and `backend` override the `policy`'s. Raises SandboxUnavailable when the sandbox cannot
    be set up — the program has then not run.
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
    with _Run(policy, socket_path) as run:
        return run.execute(app, [str(a) for a in argv], stdin, extra_env)


# The canary: what a program inside must find (alone in its pid namespace, only a loopback interface,
# not root on the host) before any real program is run; a bwrap that starts but does not isolate —
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
    with _Run(canary, None) as run:
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


def _program(program: Path | str) -> tuple[str, bytes]:
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


@dataclass
class _Launch:
    argv: list[str]
    user: int | None = None
    group: int | None = None
    kill: Callable[[], object] | None = None  # besides killing the launcher's process group
    after: Callable[[], bool] | None = None  # after the run: True when the engine saw an OOM kill
    warnings: list[str] = field(default_factory=list)


class _Run:
    """One run's host resources; everything is released on exit, whatever happened."""

    def __init__(self, policy: SandboxPolicy, socket_path: Path | str | None):
        self.policy = policy
        self.limits = policy.limits
        self.socket_path = Path(socket_path) if socket_path is not None else None
        self.stack = contextlib.ExitStack()
        self.started = time.monotonic()
        self.cgroup: cgroups.RunCgroup | None = None
        self.warnings: list[str] = []
        if policy.backend is Backend.BWRAP and os.geteuid() == 0:
            self.uid, self.gid = policy.host_uid, policy.host_gid
        else:
            self.uid, self.gid = os.getuid(), os.getgid()

    def __enter__(self) -> _Run:
        self.dir = Path(tempfile.mkdtemp(prefix="shoparena-sbx-"))
        self.stack.callback(shutil.rmtree, self.dir, True)
        os.chmod(self.dir, 0o711)  # enterable by the sandbox uid, not listable
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stack.close()

    # -- preparation -------------------------------------------------------------------------------
    def _fifo(self, owner_uid: int, owner_gid: int) -> Path:
        path = self.dir / "result"
        os.mkfifo(path, 0o600)
        if os.geteuid() == 0:
            os.chown(path, owner_uid, owner_gid)
        elif owner_uid != os.getuid():
            os.chmod(path, 0o622)
        return path

    def _socket(self, uid: int, gids: set[int]) -> Path | None:
        """The proxy socket as the sandbox uid will reach it: a hard link in the run directory (so a
        private directory around the real socket stays private), else the socket itself."""
        if self.socket_path is None:
            return None
        try:
            info = os.stat(self.socket_path)
        except OSError as exc:
            raise SandboxUnavailable(f"the proxy socket {self.socket_path} cannot be used: {exc}") from None
        if not stat.S_ISSOCK(info.st_mode):
            raise SandboxUnavailable(f"{self.socket_path} is not a Unix socket")
        if uid != 0 and not _may_write(info, uid, gids):
            raise SandboxUnavailable(
                f"the sandbox uid {uid} may not connect to {self.socket_path} (mode "
                f"{stat.S_IMODE(info.st_mode):o}, owner {info.st_uid}); create the socket with mode 0666 "
                "inside a private (0700) directory: the run links it into the sandbox"
            )
        link = self.dir / "proxy.sock"
        try:
            os.link(self.socket_path, link)
            return link
        except OSError:
            pass
        if interpreter.reachable(self.socket_path.parent, uid, gids):
            return self.socket_path
        raise SandboxUnavailable(
            f"the sandbox uid {uid} cannot reach {self.socket_path}, and it cannot be linked into "
            f"{self.dir} (another file system?); put the socket under {tempfile.gettempdir()}"
        )

    def _cgroup(self) -> None:
        try:
            self.cgroup = cgroups.create(memory_bytes=self.limits.memory_bytes, pids=self.limits.pids)
        except cgroups.CgroupUnavailable as exc:
            if self.limits.require_cgroup and self.policy.backend is not Backend.NONE:
                raise SandboxUnavailable(
                    f"{exc}; without a cgroup neither the tree's memory nor its process count can be bounded "
                    "(SandboxLimits(require_cgroup=False) accepts per-process rlimits instead)"
                ) from None
            self.warnings.append(f"no cgroup: {exc}; memory and processes are bounded per process only")
            return
        self.stack.callback(self.cgroup.remove)

    def _memfd(self, name: str, content: bytes) -> int:
        """An in-memory file for bwrap to read (program files, its own options); closed after the run."""
        fd = os.memfd_create(name, 0)
        self.stack.callback(os.close, fd)
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
        return fd

    def _memfds(self, app: list[ProgramFile]) -> dict[str, int]:
        return {item.name: self._memfd(f"sandbox-{item.name}", item.content) for item in app}

    def _app_dir(self, app: list[ProgramFile], mode: int) -> Path:
        directory = self.dir / "app"
        directory.mkdir()
        for item in app:
            (directory / item.name).write_bytes(item.content)
            os.chmod(directory / item.name, mode & 0o644)
        os.chmod(directory, mode)
        return directory

    def _launch(
        self, app: list[ProgramFile], argv: list[str], env: dict[str, str]
    ) -> tuple[_Launch, list[int]]:
        backend = self.policy.backend
        gids = {self.gid}
        program = app[0].name
        if backend is Backend.BWRAP:
            bwrap.find_bwrap()
            plan = interpreter.plan(self.policy.python or interpreter.default_python(), self.uid, gids)
            fifo = self._fifo(self.uid, self.gid)
            socket = self._socket(self.uid, gids)
            self._cgroup()
            fds = self._memfds(app)
            full_env = _fixed_env(bwrap.SOCKET_PATH if socket else None, bwrap.RESULT_PATH) | env
            python_argv = [str(plan.executable), "-I", f"{bwrap.APP_DIR}/{program}", *argv]
            options, notes = bwrap.sandbox_options(
                plan,
                inner_uid=NOBODY,
                inner_gid=NOBODY,
                env=full_env,
                app_fds=fds,
                socket_source=socket,
                result_source=fifo,
                tmp_bytes=self.limits.tmp_bytes,
            )
            args_fd = self._memfd("bwrap-args", b"".join(a.encode() + b"\0" for a in options))
            command = bwrap.command(args_fd, python_argv)
            drop = os.geteuid() == 0
            launch = _Launch(command, self.uid if drop else None, self.gid if drop else None, warnings=notes)
            return launch, [*fds.values(), args_fd]
        if backend is Backend.CONTAINER:
            engine = container.find_engine(self.policy.container.engine)
            user = self.policy.container.user.split(":")
            uid, gid = int(user[0]), int(user[1] if len(user) > 1 else user[0])
            fifo = self._fifo(uid, gid)
            socket = self._socket(uid, {gid})
            app_dir = self._app_dir(app, 0o755)
            name = f"shoparena-sbx-{secrets.token_hex(8)}"
            full_env = _fixed_env(bwrap.SOCKET_PATH if socket else None, bwrap.RESULT_PATH) | env
            env_file = self.dir / "env"  # not --env: a command line is readable by every host user
            env_file.touch(mode=0o600)
            env_file.write_text(
                "".join(f"{key}={_one_line(key, value)}\n" for key, value in full_env.items())
            )
            command = container.command(
                self.policy.container,
                self.limits,
                engine=engine,
                name=name,
                env_file=env_file,
                app_dir=app_dir,
                socket_source=socket,
                result_source=fifo,
                program=program,
                argv=argv,
            )
            self.stack.callback(container.remove, engine, name)
            launch = _Launch(
                command,
                kill=lambda: container.kill(engine, name),
                after=lambda: container.oom_killed(engine, name),
            )
            return launch, []
        # Backend.NONE: a plain subprocess of this user, in a private directory; no isolation at all.
        message = (
            "sandbox 'none': the program runs as this user with the host's file system and network; "
            "use it only for code you trust"
        )
        warnings.warn(message, NoSandboxWarning, stacklevel=4)
        log.warning(message)
        self.warnings.append(message)
        fifo = self._fifo(os.getuid(), os.getgid())
        app_dir = self._app_dir(app, 0o700)
        self._cgroup()
        full_env = _fixed_env(str(self.socket_path) if self.socket_path else None, str(fifo)) | env
        python = self.policy.python or interpreter.default_python()
        command = [
            "env",
            "-i",
            *[f"{k}={v}" for k, v in full_env.items()],
            "sh",
            "-c",
            'cd "$0" && exec "$@"',
        ]
        command += [str(app_dir), python, "-I", str(app_dir / program), *argv]
        return _Launch(command), []

    # -- the run -----------------------------------------------------------------------------------
    def execute(
        self, app: list[ProgramFile], argv: list[str], stdin: bytes, env: dict[str, str]
    ) -> SandboxOutcome:
        launch, pass_fds = self._launch(app, argv, env)
        self.warnings.extend(launch.warnings)
        fifo = self.dir / "result"
        result_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        keepalive = os.open(fifo, os.O_WRONLY)  # no EOF until the run is over, however it writes
        os.set_blocking(result_fd, True)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            process = subprocess.Popen(
                ["/bin/sh", "-c", self._launcher(), "shoparena-sandbox", *launch.argv],
                stdin=subprocess.PIPE,
                stdout=out_w,
                stderr=err_w,
                pass_fds=pass_fds,
                cwd="/",
                env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
                user=launch.user,
                group=launch.group,
                extra_groups=[] if launch.user is not None else None,
                start_new_session=True,
            )
        except OSError as exc:
            for fd in (result_fd, keepalive, out_r, out_w, err_r, err_w):
                os.close(fd)
            raise SandboxUnavailable(f"cannot start the sandbox launcher: {exc}") from None
        os.close(out_w)
        os.close(err_w)
        result = CappedResult(result_fd, self.limits.result_bytes)
        try:
            _await_ready(out_r, err_r)
            self._attach(process.pid)
        except BaseException:
            _kill_group(process.pid)
            process.wait()
            for fd in (keepalive, out_r, err_r):
                os.close(fd)
            raise
        stdout, stderr = HeadTail(out_r, self.limits.stdout_bytes), HeadTail(err_r, self.limits.stderr_bytes)
        setup_s = time.monotonic() - self.started
        feeder = threading.Thread(target=_feed, args=(process.stdin, b"\n" + stdin), daemon=True)
        feeder.start()
        began = time.monotonic()
        try:
            timed_out = not _wait_unreaped(process.pid, self.limits.wall_s)
        finally:  # the launcher is still unreaped here, so its process group id cannot have been reused
            if launch.kill is not None:
                _safe(launch.kill)
            _kill_group(process.pid)
            if self.cgroup is not None and not self.cgroup.kill():
                self.warnings.append("some processes of the run could not be killed within 5 s")
            returncode = process.wait()
        wall_s = time.monotonic() - began
        os.close(keepalive)
        for reader in (stdout, stderr, result):
            reader.join(5.0)
        feeder.join(1.0)
        stats = self.cgroup.stats() if self.cgroup is not None else cgroups.CgroupStats()
        oom_seen = stats.oom_kills > 0 or (launch.after is not None and _safe(launch.after))
        return _outcome(
            self.policy.backend,
            returncode,
            timed_out=timed_out,
            oom=oom_seen,
            stats=stats,
            stdout=stdout,
            stderr=stderr,
            result=result,
            wall_s=wall_s,
            setup_s=setup_s,
            warnings=self.warnings,
        )

    def _attach(self, pid: int) -> None:
        """Put the blocked launcher into the run's cgroup; everything it starts inherits it."""
        if self.cgroup is not None:
            try:
                self.cgroup.attach(pid)
            except OSError as exc:
                raise SandboxUnavailable(f"cannot move the sandbox into its cgroup: {exc}") from None

    def _launcher(self) -> str:
        """The launcher script: lower its own rlimits (lowering needs no privilege, unlike setting a
        child's), say `ready`, wait for the go line, exec the backend."""
        limits = self.limits
        steps = [":"]
        if self.policy.backend is not Backend.CONTAINER:  # the engine applies them in the container
            steps = [
                "ulimit -c 0",
                f"ulimit -S -t {limits.cpu_s}",
                f"ulimit -H -t {limits.cpu_s + 1}",
                f"ulimit -v {limits.address_space_bytes // 1024}",
                f"ulimit -f {max(1, limits.file_bytes // 512)}",
                f"ulimit -n {limits.open_files}",
            ]
            if self.cgroup is None:
                # bash and busybox spell RLIMIT_NPROC -u, dash spells it -p (bash's -p is read-only)
                steps.append(f"{{ ulimit -u {limits.pids} 2>/dev/null || ulimit -p {limits.pids}; }}")
        return " && ".join(steps) + ' || exit 125; echo ready || exit 125; read -r _ || exit 125; exec "$@"'


def _fixed_env(socket: str | None, result: str) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        RESULT_ENV: result,
    }
    if socket is not None:
        env[SOCKET_ENV] = socket
    return env


def _one_line(key: str, value: str) -> str:
    if "\n" in value or "\r" in value:
        raise ValueError(f"environment variable {key!r}: the container backend cannot pass a line break")
    return value


def _may_write(info: os.stat_result, uid: int, gids: set[int]) -> bool:
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IWUSR)
    if info.st_gid in gids:
        return bool(info.st_mode & stat.S_IWGRP)
    return bool(info.st_mode & stat.S_IWOTH)


def _feed(pipe, data: bytes) -> None:
    """Write the go line and the program's input; a program that exits without reading ends it."""
    with contextlib.suppress(BrokenPipeError, OSError, ValueError):
        pipe.write(data)
    with contextlib.suppress(BrokenPipeError, OSError, ValueError):
        pipe.close()


def _await_ready(out_fd: int, err_fd: int, timeout_s: float = 30.0) -> None:
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


def _wait_unreaped(pid: int, timeout_s: float) -> bool:
    """Wait for `pid` to exit without reaping it; False at the timeout."""
    deadline = time.monotonic() + timeout_s
    delay = 0.001
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.02)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _safe(check: Callable[[], object]) -> bool:
    try:
        return bool(check())
    except (OSError, subprocess.SubprocessError):
        return False


def _outcome(
    backend: Backend,
    returncode: int,
    *,
    timed_out: bool,
    oom: bool,
    stats: cgroups.CgroupStats,
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
