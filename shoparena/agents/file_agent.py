"""The miner-file agent (SPEC §5): one Python file exposing `agent_main(problem_data) -> list[step]`,
the arena's submission format, run once per problem in its own process.

Isolation, per problem: a fresh private working directory holding a copy of the file (the content
hashed when the agent was made, so an edit on disk cannot change a running agent's version), and
beside it a `_shoparena/` directory with the tool client and the runner — the only directory put on
the miner's path, so no miner file name (`miner_sdk.py` included) can shadow or overwrite them; `python -I` (no user site, no PYTHON* variables, no script
directory on the path); an environment reduced to PATH, HOME/TMPDIR (the private directory), a locale, and
SHOPARENA_TOOL_URL/SHOPARENA_SESSION; resource limits (address space, CPU seconds, no core files,
file size, open files); a new session, so the whole process group is killed at the wall-clock
timeout and after every run. This is process isolation, not a security sandbox: the file system
and the network are still reachable; the arena's container sandbox (SPEC §6) is the layer for that.

Trust: the episode's verified log holds every call the miner made through the tool server; the
steps `agent_main` returns are its claim and are kept, unverified, as `AgentRun.model_outputs`.
One claim is acted on — see `replay_claimed_ending`. The miner reaches a model only through the
inference proxy mounted on the same server (`miner_sdk.chat`); a call is `llm` only when it used a
tool call of a response the proxy returned in that episode, and the proxy's log of the episode comes
back as `AgentRun.inference`. Whatever comes back from the miner process is
bounded before it reaches a record: the steps' size and count, the error and traceback texts, and
the arguments quoted in notes (the episode bounds what it stores itself).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from shoparena.agents.base import Agent, AgentRun, AgentSpecError, ProblemView
from shoparena.agents.inference_proxy import InferenceProxy, ProxyLimits, inference_log, settle
from shoparena.harness.episode import Episode
from shoparena.harness.record_limits import clean_text
from shoparena.harness.tool_server import ToolServer

_HERE = Path(__file__).resolve().parent
RUNNER_SOURCE = _HERE / "miner_runner.py"
SDK_SOURCE = _HERE / "miner_sdk.py"
HARNESS_DIR = "_shoparena"
"""Inside the working directory: the runner and the SDK, the one directory on the miner's path."""
RUNNER_NAME = "runner.py"
SDK_NAME = "miner_sdk.py"
STDERR_TAIL_BYTES = 4096
MAX_RESULT_BYTES = 4 << 20
"""The claimed steps `agent_main` may return; a real agent's steps are tens of KB."""
MAX_STEPS = 1000
MAX_ERROR_CHARS = 2000
MAX_TRACEBACK_CHARS = 3000
MAX_SHOWN_CHARS = 200
INFERENCE_API_KEY_ENV = "SHOPARENA_INFERENCE_API_KEY"
"""Where the proxy's upstream API key is read from (the miner's environment never has it)."""
"""How much of claimed arguments a note quotes."""
ENDING_TOOLS = ("recommend_product", "terminate")
SETTLE_S = 2.0
"""How long a finished run waits for an inference request still in flight to be logged."""


def shown(value: Any) -> str:
    """Claimed arguments as a note quotes them: JSON (ASCII, so always writable), cut short."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = "<not JSON>"
    return text if len(text) <= MAX_SHOWN_CHARS else f"{text[: MAX_SHOWN_CHARS - 3]}... ({len(text):,} chars)"


def _clip(text: str, limit: int) -> str:
    text = clean_text(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} chars, cut)"


# -- the step format miners return (lenient on shape details, strict on what is acted on) --------------
class ClaimedToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    tool_call_id: str | None = None
    result: Any = None

    @field_validator("parameters", mode="before")
    @classmethod
    def _parameters(cls, value: Any) -> Any:
        if value is None:
            return {}
        if isinstance(value, str):  # some miners keep the JSON text of the arguments
            try:
                return json.loads(value) if value.strip() else {}
            except (ValueError, RecursionError):
                raise ValueError(f"parameters is a string but not JSON: {value[:80]!r}") from None
        return value


class StepMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    think: str | None = None
    tool_call: list[ClaimedToolCall] = Field(default_factory=list)
    response: str | None = None

    @field_validator("tool_call", mode="before")
    @classmethod
    def _tool_call(cls, value: Any) -> Any:
        if value is None:
            return []
        return [value] if isinstance(value, dict) else value


class StepCompletion(BaseModel):
    model_config = ConfigDict(extra="allow")

    message: StepMessage
    content: str | None = None
    reasoning_content: str | None = None


class MinerStep(BaseModel):
    """One step of the arena format: `completion.message.{think, tool_call, response}` and `extra_info`."""

    model_config = ConfigDict(extra="allow")

    completion: StepCompletion
    extra_info: dict[str, Any] | None = None


_STEPS = TypeAdapter(list[MinerStep])


class StepFormatError(ValueError):
    pass


def parse_steps(value: Any) -> list[MinerStep]:
    """Validate what agent_main returned; the error names the step and the field that is wrong."""
    if not isinstance(value, list):
        raise StepFormatError(
            f"agent_main must return a list of steps, got {type(value).__name__}"
            + (_clip(f" {value!r}", 120) if not isinstance(value, dict | list) else "")
        )
    if len(value) > MAX_STEPS:
        raise StepFormatError(f"agent_main returned {len(value):,} steps; at most {MAX_STEPS:,} are read")
    try:
        return _STEPS.validate_python(value)
    except ValidationError as exc:
        problems = []
        for error in exc.errors()[:5]:
            loc = list(error["loc"])
            where = f"step {loc[0]}" + (": " + ".".join(map(str, loc[1:])) if len(loc) > 1 else "")
            problems.append(_clip(f"{where}: {error['msg']}", 300))
        more = f" (+{exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
        raise StepFormatError("; ".join(problems) + more) from None


def replay_claimed_ending(episode: Episode, steps: list[MinerStep]) -> list[str]:
    """Act on a claimed recommendation the server never saw, through the harness, never around it.

    Rule: for `recommend_product` and then `terminate`, if the verified log has no successful call of
    that tool, the first such call in the returned steps is executed on the episode now with origin
    `code` (our code made it, on the miner's word). The harness then treats it like any call — it is
    refused if the episode already ended, and the scorer checks the ids against the catalogue — and
    the log shows it as a late code call, not as something the miner did in time. A claim that
    differs from what the server recorded changes nothing and is noted.
    """
    notes: list[str] = []
    claimed = [call for step in steps for call in step.completion.message.tool_call]
    for tool in ENDING_TOOLS:
        claim = next((call for call in claimed if call.name == tool), None)
        if claim is None:
            continue
        logged = [record for record in episode.calls if record.name == tool and record.error is None]
        if logged:
            if logged[0].arguments != claim.parameters:
                notes.append(
                    f"claimed {tool}({shown(claim.parameters)}) differs from the call the server "
                    f"recorded ({shown(logged[0].arguments)}); the recorded call stands"
                )
            continue
        observation = episode.call(tool, claim.parameters, origin="code", call_id=claim.tool_call_id)
        outcome = "accepted" if observation.ok else f"refused: {_clip(observation.error or '', 500)}"
        notes.append(
            f"the miner returned {tool}({shown(claim.parameters)}) without calling it through the "
            f"tool server; replayed on the episode with origin 'code' ({outcome})"
        )
    return notes


# -- the agent -------------------------------------------------------------------------------------
class FileAgent(Agent):
    kind = "file"

    def __init__(
        self,
        path: Path,
        source: bytes,
        *,
        timeout_s: float,
        memory_mb: int | None,
        cpu_s: int | None,
        python: str,
        server: ToolServer | None,
        open_files: int = 256,
        file_mb: int = 64,
        inference: InferenceProxy | None = None,
    ):
        super().__init__(name=path.stem, version=hashlib.sha256(source).hexdigest()[:12])
        self.path = path
        self.source = source
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.cpu_s = cpu_s if cpu_s is not None else int(timeout_s) + 5
        self.python = python
        self.open_files = open_files
        self.file_mb = file_mb
        self._server = server
        self._own_server = server is None
        self._server_lock = threading.Lock()
        self.inference = inference
        """The proxy mounted on the tool server (the caller mounts it on a server it gives)."""

    def server(self) -> ToolServer:
        """The tool server the miner talks to: the one given, or one this agent starts and owns
        (with the inference proxy mounted)."""
        with self._server_lock:
            if self._server is None:
                routers = [self.inference.router] if self.inference is not None else []
                self._server = ToolServer(routers=routers)
            if not self._server.running:
                self._server.start()
            return self._server

    def close(self) -> None:
        with self._server_lock:
            if self._own_server and self._server is not None:
                self._server.stop()
                self._server = None
            if self._own_server and self.inference is not None:
                self.inference.close()

    def run(self, episode: Episode, view: ProblemView) -> AgentRun:
        server = self.server()
        workdir = Path(tempfile.mkdtemp(prefix="shoparena-miner-"))
        try:
            state = self.inference.new_state() if self.inference is not None else None
            token = server.register(episode, ttl_s=self.timeout_s + 30, state=state)
            session = server.session_of(token)
            assert session is not None
            try:
                outcome = self._run_process(workdir, server.url, token, view)
            finally:
                server.revoke(token)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        run = self._to_run(episode, outcome)
        if not settle(session, SETTLE_S):
            run.notes.append(
                "an inference request was still in flight when the run ended; it is not in the log"
            )
        run.inference = inference_log(session, self.inference.limits if self.inference else None)
        if run.inference.unverified_llm_claims:
            run.notes.append(
                f"{run.inference.unverified_llm_claims} tool call(s) claimed as emitted by the model "
                "matched no tool call of an inference response and were recorded as code"
            )
        return run

    # -- process -------------------------------------------------------------------------------
    def _run_process(self, workdir: Path, url: str, token: str, view: ProblemView) -> _ProcessOutcome:
        os.chmod(workdir, 0o700)
        miner_name = f"{self.name}.py" if self.name.isidentifier() else "miner.py"
        (workdir / miner_name).write_bytes(self.source)
        harness = workdir / HARNESS_DIR
        harness.mkdir()
        shutil.copyfile(RUNNER_SOURCE, harness / RUNNER_NAME)
        shutil.copyfile(SDK_SOURCE, harness / SDK_NAME)
        limits = {
            "memory_bytes": self.memory_mb << 20 if self.memory_mb else None,
            "cpu_s": self.cpu_s,
            "file_bytes": self.file_mb << 20,
            "open_files": self.open_files,
        }
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(workdir),
            "TMPDIR": str(workdir),
            "LANG": "C.UTF-8",
            "SHOPARENA_TOOL_URL": url,
            "SHOPARENA_SESSION": token,
        }
        with tempfile.TemporaryFile() as result_file:
            fd = result_file.fileno()
            runner = f"{HARNESS_DIR}/{RUNNER_NAME}"
            command = [self.python, "-I", runner, miner_name, str(fd), json.dumps(limits)]
            started = time.monotonic()
            try:
                process = subprocess.Popen(
                    command,
                    cwd=workdir,
                    env=env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    pass_fds=(fd,),
                    start_new_session=True,
                )
            except OSError as exc:
                return _ProcessOutcome(launch_error=f"{self.python}: {exc}")
            stderr_tail: deque[bytes] = deque()
            reader = threading.Thread(target=_keep_tail, args=(process.stderr, stderr_tail), daemon=True)
            reader.start()
            try:
                process.stdin.write(view.model_dump_json().encode())
                process.stdin.close()
            except (BrokenPipeError, OSError):
                pass  # it died before reading; the exit status says why
            timed_out = not _wait_unreaped(process.pid, self.timeout_s)
            _kill_group(process.pid)  # the leader is still a zombie here, so its group id is not reused
            returncode = process.wait()
            reader.join(timeout=2)
            wall_s = time.monotonic() - started
            result_file.seek(0)
            data = result_file.read(MAX_RESULT_BYTES + 1)
        return _ProcessOutcome(
            timed_out=timed_out,
            returncode=returncode,
            wall_s=wall_s,
            result=data,
            stderr=b"".join(stderr_tail)[-STDERR_TAIL_BYTES:].decode("utf-8", "replace"),
        )

    def _to_run(self, episode: Episode, outcome: _ProcessOutcome) -> AgentRun:
        tail = (
            f"\n--- stderr (last {STDERR_TAIL_BYTES} bytes) ---\n{outcome.stderr}" if outcome.stderr else ""
        )
        if outcome.launch_error:
            return AgentRun(error=f"cannot start the miner process: {outcome.launch_error}")
        if outcome.timed_out:
            return AgentRun(
                error=f"timeout: agent_main did not return within {self.timeout_s:g} s; the miner's "
                f"process group was killed{tail}"
            )
        if len(outcome.result) > MAX_RESULT_BYTES:
            return AgentRun(
                error=f"agent_main returned more than {MAX_RESULT_BYTES >> 20} MiB of steps; they were not "
                "read (the calls made through the tool server are kept)"
            )
        try:
            envelope = json.loads(outcome.result) if outcome.result else None
        except RecursionError:
            return AgentRun(error="agent_main returned steps nested too deeply to read")
        except ValueError:
            envelope = None
        if not isinstance(envelope, dict):
            return AgentRun(
                error=f"the miner process ended without returning a result ({_exit_text(outcome.returncode)})"
                f"{tail}"
            )
        if not envelope.get("ok"):
            error = _clip(str(envelope.get("error")), MAX_ERROR_CHARS)
            traceback = clean_text(str(envelope.get("traceback") or "")[-MAX_TRACEBACK_CHARS:])
            return AgentRun(error=f"agent_main failed: {error}\n{traceback}{tail}".rstrip())
        raw = envelope.get("steps")
        outputs = raw if isinstance(raw, list) else [raw]
        try:
            steps = parse_steps(raw)
        except StepFormatError as exc:
            return AgentRun(error=f"agent_main returned malformed steps: {exc}", model_outputs=outputs)
        return AgentRun(model_outputs=outputs, notes=replay_claimed_ending(episode, steps))


class _ProcessOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    timed_out: bool = False
    returncode: int = 0
    wall_s: float = 0.0
    result: bytes = b""
    stderr: str = ""
    launch_error: str | None = None


def _keep_tail(stream: Any, tail: deque[bytes]) -> None:
    """Drain a pipe, keeping only its last bytes: a miner printing without end must not block or bloat."""
    kept = 0
    for chunk in iter(lambda: stream.read1(65536), b""):
        tail.append(chunk)
        kept += len(chunk)
        while kept - len(tail[0]) >= STDERR_TAIL_BYTES:
            kept -= len(tail.popleft())
    stream.close()


def _wait_unreaped(pid: int, timeout_s: float) -> bool:
    """Wait for the process to exit without reaping it; False on timeout."""
    deadline = time.monotonic() + timeout_s
    delay = 0.002
    while True:
        try:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        if info is not None:
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.05)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _exit_text(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def _check_source(path: Path, source: bytes) -> None:
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise AgentSpecError(f"miner file {path}: line {exc.lineno}: {exc.msg}") from None
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            bound.add(node.name)
        elif isinstance(node, ast.Assign):
            bound.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    if "agent_main" not in bound:
        raise AgentSpecError(f"miner file {path}: defines no top-level agent_main(problem_data)")


def make_file_agent(
    target: str,
    *,
    timeout_s: float = 300.0,
    memory_mb: int | None = 2048,
    cpu_s: int | None = None,
    python: str = sys.executable,
    server: ToolServer | None = None,
    inference: InferenceProxy | None = None,
    inference_models: str | Mapping[str, str] | None = None,
    inference_default: str | None = None,
    inference_limits: Mapping[str, Any] | None = None,
    inference_api_key_env: str | None = INFERENCE_API_KEY_ENV,
    **options: Any,
) -> FileAgent:
    """A miner-file agent for `target` (a .py file). Pass `server` to share one tool server across
    agents (the arena's); otherwise the agent starts its own on first use and stops it in `close()`.
    `cpu_s` defaults to the timeout plus 5 s; `memory_mb=None` leaves the address space unlimited.

    Inference: the agent's own server mounts an inference proxy allowing `inference_models`
    (`NAME=UPSTREAM,…` or a mapping; default: the offline reference models), with `inference_limits`
    (`ProxyLimits` fields) and the upstream API key read from `inference_api_key_env`. With a given
    `server`, pass the `inference` proxy mounted on it (else the miner has no model to call)."""
    if options:
        raise AgentSpecError(f"file agent: unknown option(s) {', '.join(sorted(options))}")
    if inference is None and server is None:
        inference = _make_proxy(inference_models, inference_default, inference_limits, inference_api_key_env)
    elif inference_models is not None or inference_limits is not None or inference_default is not None:
        raise AgentSpecError(
            "file agent: inference_models/inference_limits/inference_default configure the agent's own "
            "server; with a given server, pass the InferenceProxy mounted on it as inference="
        )
    path = Path(target).expanduser().resolve()
    if not path.is_file():
        raise AgentSpecError(f"miner file {target!r} does not exist (file:PATH names a .py file)")
    if timeout_s <= 0:
        raise AgentSpecError(f"file agent: timeout_s must be positive, got {timeout_s}")
    source = path.read_bytes()
    _check_source(path, source)
    return FileAgent(
        path,
        source,
        timeout_s=timeout_s,
        memory_mb=memory_mb,
        cpu_s=cpu_s,
        python=python,
        server=server,
        inference=inference,
    )


def parse_models(value: str | Mapping[str, str]) -> dict[str, str]:
    """`NAME=UPSTREAM,NAME=UPSTREAM` (or a mapping) → the proxy's allowlist."""
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    models: dict[str, str] = {}
    for item in value.split(","):
        name, sep, upstream = item.strip().partition("=")
        if not sep or not name.strip() or not upstream.strip():
            raise AgentSpecError(
                f"file agent: inference_models item {item.strip()!r}: expected NAME=UPSTREAM, e.g. "
                "reference-agentic=offline:reference-agentic or qwen=http://127.0.0.1:8000/v1#Qwen/Qwen3-4B"
            )
        models[name.strip()] = upstream.strip()
    return models


def _make_proxy(
    models: str | Mapping[str, str] | None,
    default: str | None,
    limits: Mapping[str, Any] | None,
    api_key_env: str | None,
) -> InferenceProxy:
    try:
        return InferenceProxy(
            parse_models(models) if models is not None else None,
            limits=ProxyLimits.model_validate(dict(limits or {})),
            default_model=default,
            api_key_env=api_key_env,
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise AgentSpecError(f"file agent: inference_limits: {where}: {first['msg']}") from None
    except ValueError as exc:
        raise AgentSpecError(f"file agent: {exc}") from None
