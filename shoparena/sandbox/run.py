"""One sandboxed run's host side: the private run directory (result FIFO, the socket's hard link),
the cgroup, the backend's command line, the launcher, and the supervision until every process of the
run is gone. `runner.run_sandboxed` is the public door; this module is what happens behind it."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import stat
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from shoparena.sandbox import bwrap, cgroups, container, interpreter
from shoparena.sandbox.models import (
    NOBODY,
    Backend,
    ProgramFile,
    SandboxOutcome,
    SandboxPolicy,
    SandboxUnavailable,
)
from shoparena.sandbox.streams import CappedResult, HeadTail
from shoparena.sandbox.supervise import (
    await_ready,
    build_outcome,
    feed,
    kill_group,
    quietly,
    wait_unreaped,
)

log = logging.getLogger("shoparena.sandbox")

SOCKET_ENV = "SHOPARENA_PROXY_SOCKET"
RESULT_ENV = "SHOPARENA_RESULT_PATH"


class NoSandboxWarning(UserWarning):
    """A program ran with `--sandbox none`: no isolation at all."""


@dataclass
class _Launch:
    argv: list[str]
    user: int | None = None
    group: int | None = None
    kill: Callable[[], object] | None = None  # besides killing the launcher's process group
    after: Callable[[], bool] | None = None  # after the run: True when the engine saw an OOM kill
    warnings: list[str] = field(default_factory=list)


class Run:
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

    def __enter__(self) -> Run:
        self.dir = Path(tempfile.mkdtemp(prefix="shoparena-sbx-"))
        self.stack.callback(shutil.rmtree, self.dir, True)
        os.chmod(self.dir, 0o711)  # enterable by the sandbox uid, not listable
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stack.close()

    # -- preparation -------------------------------------------------------------------------------
    def _reachable_dir(self, uid: int, gids: set[int]) -> None:
        """The sandbox's uid must reach the run directory to bind the FIFO and the socket from it."""
        if not interpreter.reachable(self.dir, uid, gids, read=False):
            raise SandboxUnavailable(
                f"the sandbox uid {uid} cannot enter the run directory {self.dir}: a directory above it "
                f"is private; point TMPDIR at a directory every user can enter (e.g. /tmp)"
            )

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
        if uid != 0 and not interpreter.allows(info, uid, gids, execute=False, read=False, write=True):
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
        if interpreter.reachable(self.socket_path.parent, uid, gids, read=False):
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
        fd = os.memfd_create(name)  # close-on-exec: only the launcher gets it, through pass_fds
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
            self._reachable_dir(self.uid, gids)
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
            self._reachable_dir(uid, {gid})
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
        self,
        app: list[ProgramFile],
        argv: list[str],
        stdin: bytes,
        env: dict[str, str],
        cancel: threading.Event | None = None,
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
            await_ready(out_r, err_r)
            self._attach(process.pid)
        except BaseException:
            kill_group(process.pid)
            process.wait()
            for fd in (keepalive, out_r, err_r):
                os.close(fd)
            raise
        stdout, stderr = HeadTail(out_r, self.limits.stdout_bytes), HeadTail(err_r, self.limits.stderr_bytes)
        setup_s = time.monotonic() - self.started
        feeder = threading.Thread(target=feed, args=(process.stdin, b"\n" + stdin), daemon=True)
        feeder.start()
        began = time.monotonic()
        try:
            timed_out = not wait_unreaped(process.pid, self.limits.wall_s, cancel)
            if timed_out and cancel is not None and cancel.is_set():
                self.warnings.append(f"cancelled by the caller after {time.monotonic() - began:.1f} s")
        finally:  # the launcher is still unreaped here, so its process group id cannot have been reused
            if launch.kill is not None:
                quietly(launch.kill)
            kill_group(process.pid)
            if self.cgroup is not None and not self.cgroup.kill():
                self.warnings.append("some processes of the run could not be killed within 5 s")
            returncode = process.wait()
        wall_s = time.monotonic() - began
        os.close(keepalive)
        for reader in (stdout, stderr, result):
            reader.join(5.0)
        feeder.join(1.0)
        stats = self.cgroup.stats() if self.cgroup is not None else cgroups.CgroupStats()
        oom_seen = stats.oom_kills > 0 or (launch.after is not None and quietly(launch.after))
        return build_outcome(
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
