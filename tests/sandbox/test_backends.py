"""The sandbox refuses to run what it cannot confine (fail closed), says so in words that name the fix,
and runs `none` only loudly; the container backend is exercised where a daemon exists."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from shoparena.sandbox import (
    Backend,
    ContainerOptions,
    NoSandboxWarning,
    ProgramFile,
    SandboxLimits,
    SandboxPolicy,
    SandboxUnavailable,
    bwrap,
    cgroups,
    container,
    interpreter,
    run_sandboxed,
    runner,
)
from shoparena.sandbox.streams import CappedResult, HeadTail
from tests.sandbox.conftest import SMALL, attempts, run_program


@pytest.fixture
def fresh_checks():
    """Forget cached probes, so a test that breaks the machine's sandbox sees it; restore after."""
    saved = set(runner._checked)
    runner._checked.clear()
    bwrap.find_bwrap.cache_clear()
    bwrap.options.cache_clear()
    yield
    bwrap.find_bwrap.cache_clear()
    bwrap.options.cache_clear()
    runner._checked.clear()
    runner._checked.update(saved)


# -- fail closed ---------------------------------------------------------------------------------------
def test_missing_bubblewrap_refuses_to_run_and_names_the_fix(monkeypatch, fresh_checks, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match="apt-get install -y bubblewrap"):
        run_sandboxed("open('/tmp/ran', 'w')", limits=SMALL)


def test_a_bwrap_that_cannot_set_up_refuses_to_run(monkeypatch, fresh_checks, tmp_path):
    """A bwrap that fails (here: a stand-in that fails the way bwrap does without user namespaces)
    makes the sandbox unavailable, with bwrap's message — not a program that 'exited 1'."""
    fake_dir = Path(os.environ.get("TMPDIR", "/tmp")) / f"fake-bwrap-{os.getpid()}"
    fake_dir.mkdir(mode=0o755, exist_ok=True)
    fake = fake_dir / "bwrap"
    options = " ".join(bwrap.REQUIRED)
    fake.write_text(
        f'#!/bin/sh\nif [ "$1" = --help ]; then echo "{options}"; exit 0; fi\n'
        'echo "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_dir}:{os.environ['PATH']}")
    try:
        with pytest.raises(SandboxUnavailable, match="setting up uid map: Permission denied"):
            run_sandboxed("print('never')", limits=SMALL)
    finally:
        fake.unlink()
        fake_dir.rmdir()


def test_no_cgroup_refuses_unless_per_process_limits_are_accepted(monkeypatch, sandbox_ready):
    def unavailable(**_):
        raise cgroups.CgroupUnavailable(
            "no cgroup hierarchy offers both the pids and memory controllers here"
        )

    monkeypatch.setattr(cgroups, "create", unavailable)
    with pytest.raises(SandboxUnavailable, match="require_cgroup=False"):
        run_sandboxed("print('never')", limits=SMALL)
    relaxed = SMALL.model_copy(update={"require_cgroup": False, "pids": 48})
    program = "import resource; print(resource.getrlimit(resource.RLIMIT_NPROC))"
    outcome = run_sandboxed(program, limits=relaxed)
    assert outcome.ok and outcome.stdout == "(48, 48)\n"
    assert any("no cgroup" in w for w in outcome.warnings)


def test_a_missing_or_wrong_socket_refuses_to_run(tmp_path, sandbox_ready):
    with pytest.raises(SandboxUnavailable, match="cannot be used"):
        run_sandboxed("pass", socket_path=tmp_path / "absent.sock", limits=SMALL)
    regular = tmp_path / "file.sock"
    regular.write_text("")
    with pytest.raises(SandboxUnavailable, match="is not a Unix socket"):
        run_sandboxed("pass", socket_path=regular, limits=SMALL)


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox runs as this user when not root")
def test_a_socket_the_sandbox_uid_may_not_connect_to_refuses_to_run(tmp_path, sandbox_ready):
    path = tmp_path / "private.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o600)
    try:
        with pytest.raises(SandboxUnavailable, match="mode 0666"):
            run_sandboxed("pass", socket_path=path, limits=SMALL)
    finally:
        server.close()


def test_an_interpreter_that_does_not_exist_refuses_to_run(sandbox_ready):
    policy = SandboxPolicy(python="/nonexistent/python3", limits=SMALL)
    with pytest.raises(SandboxUnavailable, match="/nonexistent/python3"):
        run_sandboxed("pass", policy=policy)


# -- inputs the caller gets wrong ------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["LD_PRELOAD", "PYTHONPATH", "HOME", "SHOPARENA_PROXY_SOCKET", "bad-name"])
def test_environment_that_could_subvert_the_interpreter_is_refused(name):
    with pytest.raises(ValueError, match="may not be passed"):
        run_sandboxed("pass", env={name: "x"}, limits=SMALL)


def test_a_named_program_file_keeps_its_name(sandbox_ready):
    runner_file = ProgramFile(name="_shoparena_runner.py", content=b"import sys; print(sys.argv)")
    outcome = run_sandboxed(runner_file, argv=["miner.py"], limits=SMALL)
    assert outcome.stdout == "['/app/_shoparena_runner.py', 'miner.py']\n", outcome


def test_program_files_with_one_name_are_refused():
    with pytest.raises(ValueError, match="share a name"):
        run_sandboxed("pass", files=[ProgramFile(name="main.py", content=b"")], limits=SMALL)


def test_limits_are_validated():
    with pytest.raises(ValidationError):
        SandboxLimits(pids=0)
    with pytest.raises(ValidationError):
        SandboxLimits(wall_s=-1)
    with pytest.raises(ValidationError):
        SandboxLimits(memory_gb=4)  # a typo is an error, not a silently ignored field
    with pytest.raises(ValidationError):
        ProgramFile(name="../escape.py", content=b"")
    assert SandboxLimits().address_space_bytes == 4 << 30 and SandboxLimits().wall_s == 300


# -- none: explicit and loud -------------------------------------------------------------------------------
def test_none_backend_runs_unconfined_and_says_so_loudly(tmp_path, proxy):
    secret = tmp_path / "visible.txt"
    secret.write_text("host file")
    program = (
        "import os, sys\n"
        f"data = open({str(secret)!r}).read()\n"
        "open(os.environ['SHOPARENA_RESULT_PATH'], 'w').write(data + '|' + os.environ['SHOPARENA_PROXY_SOCKET'])\n"
    )
    with pytest.warns(NoSandboxWarning, match="no isolation|trust"):
        outcome = run_sandboxed(program, backend="none", socket_path=proxy.path, limits=SMALL)
    assert outcome.ok, outcome
    assert outcome.result == f"host file|{proxy.path}".encode()  # no isolation at all: the host is visible
    assert outcome.backend is Backend.NONE and any("sandbox 'none'" in w for w in outcome.warnings)


def test_none_backend_still_bounds_time(sandbox_ready):
    with pytest.warns(NoSandboxWarning):
        outcome = run_program(
            "spin", "sleep", backend="none", limits=SMALL.model_copy(update={"wall_s": 1.0})
        )
    assert outcome.timed_out


# -- container ---------------------------------------------------------------------------------------------
def engine_or_reason() -> tuple[str | None, str]:
    try:
        return container.find_engine(None), ""
    except SandboxUnavailable as exc:
        return None, str(exc)


ENGINE, NO_ENGINE = engine_or_reason()
needs_engine = pytest.mark.skipif(ENGINE is None, reason=f"container backend not testable here: {NO_ENGINE}")


@pytest.mark.skipif(ENGINE is not None, reason="a container engine is running here")
def test_container_backend_without_a_daemon_refuses_to_run():
    with pytest.raises(SandboxUnavailable, match="no container engine"):
        run_sandboxed("pass", backend="container", limits=SMALL)


def test_container_command_line_carries_every_confinement(tmp_path):
    args = container.command(
        ContainerOptions(),
        SandboxLimits(),
        engine="docker",
        name="shoparena-sbx-test",
        env_file=tmp_path / "env",
        app_dir=tmp_path,
        socket_source=tmp_path / "proxy.sock",
        result_source=tmp_path / "result",
        program="main.py",
        argv=["a"],
    )
    line = " ".join(args)
    for flag in (
        "--network none",
        "--read-only",
        "--cap-drop ALL",
        "--security-opt no-new-privileges",
        "--pids-limit 256",
        f"--memory {4 << 30}",
        f"--memory-swap {4 << 30}",
        "--user 1000:1000",
        "--tmpfs /tmp:",
        f"--ulimit as={4 << 30}:{4 << 30}",
    ):
        assert flag in line, flag
    assert args[-3:] == ["-I", "/app/main.py", "a"]
    assert f"{tmp_path}:/app:ro" in args and f"{tmp_path / 'proxy.sock'}:/run/shoparena/proxy.sock" in args


@needs_engine
def test_container_backend_runs_the_benign_program_and_blocks_the_network(proxy):
    outcome = run_program(
        "benign",
        stdin=json.dumps({"query": "mat"}).encode(),
        env={"SESSION": "t"},
        socket_path=proxy.path,
        backend="container",
    )
    assert outcome.ok, outcome
    outcome = run_program("network", json.dumps({"port": 9, "udp_port": 9, "hosts": []}), backend="container")
    assert all(item["blocked"] for name, item in attempts(outcome).items() if not name.startswith("udp 127"))


# -- the capped pipes ----------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(chunks=st.lists(st.binary(min_size=0, max_size=3000), max_size=30), cap=st.integers(0, 5000))
def test_head_tail_keeps_at_most_its_cap_and_counts_everything(chunks, cap):
    read_fd, write_fd = os.pipe()
    reader = HeadTail(read_fd, cap)
    for chunk in chunks:
        os.write(write_fd, chunk)
    os.close(write_fd)
    reader.join(5)
    data = b"".join(chunks)
    assert reader.total == len(data)
    if len(data) <= cap:
        assert reader.text() == data.decode("utf-8", "replace")
    else:
        assert reader.truncated and f"{len(data) - cap} bytes dropped" in reader.text()


@settings(max_examples=25, deadline=None)
@given(size=st.integers(0, 300_000), cap=st.integers(1, 200_000))
def test_capped_result_is_whole_or_absent(size, cap):
    read_fd, write_fd = os.pipe()
    reader = CappedResult(read_fd, cap)
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    with contextlib.suppress(BrokenPipeError):  # past the cap the reader closes the channel
        _write_all(write_fd, data)
    os.close(write_fd)
    reader.join(5)
    assert reader.value() == (data if size <= cap else None)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def test_the_staged_interpreter_cache_is_readable_by_the_sandbox_uid(sandbox_ready):
    root = interpreter.cache_root()
    if not root.exists():
        pytest.skip("the interpreter is reachable by the sandbox uid without staging")
    for entry in root.iterdir():
        if entry.name.startswith("py-"):
            assert entry.stat().st_mode & stat.S_IROTH and entry.stat().st_mode & stat.S_IXOTH
