"""The miner-file agent (SPEC §5): one Python file exposing `agent_main(problem_data) -> list[step]`,
the arena's submission format, run once per problem in the sandbox (`shoparena.sandbox`, SPEC §6).

Per problem: `run_sandboxed` starts `python -I` on the runner, with the SDK and the miner's file
beside it in a read-only /app (the content hashed when the agent was made, so an edit on disk cannot
change a running agent's version); the problem on stdin; an environment of the session token and the
sandbox's own fixed variables; nothing of the host reachable but the tool server's Unix socket (its
hard link, bound at /run/shoparena/proxy.sock); and the sandbox's limits — the wall clock is the
episode's timeout, after which the whole process tree is killed. `sandbox=none` runs the same
program unconfined (the tool server on loopback TCP), only by explicit choice: it warns on stderr and
notes it in every record. A sandbox that cannot be set up is an error when the agent is made, before
any problem runs (fail closed).

Trust: the episode's verified log holds every call the miner made through the tool server; the
steps `agent_main` returns are its claim and are kept, unverified, as `AgentRun.model_outputs`.
One claim is acted on — see `replay_claimed_ending`. The miner reaches a model only through the
inference proxy mounted on the same server (`miner_sdk.chat`); a call is `llm` only when it used a
tool call of a response the proxy returned in that episode, and the proxy's log of the episode comes
back as `AgentRun.inference`. Whatever comes back from the sandbox is
bounded before it reaches a record: the steps' size and count, the error and traceback texts, and
the arguments quoted in notes (the episode bounds what it stores itself).
"""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
import tempfile
import threading
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from shoparena.agents.base import Agent, AgentRun, AgentSpecError, ProblemView, check_options
from shoparena.agents.miner.sandbox import (
    MAX_RESULT_BYTES,
    NONE_WARNING,
    RUNNER,
    SDK,
    STDERR_TAIL_CHARS,
    SUBNET_FILES,
    miner_file_name,
    sandbox_notes,
    sandbox_policy,
    waited,
)
from shoparena.agents.miner.sdk import SESSION_ENV, URL_ENV
from shoparena.harness.episode import Episode
from shoparena.harness.record_limits import clean_text
from shoparena.harness.tool_server import ToolServer
from shoparena.inference.proxy import InferenceProxy, ProxyLimits, inference_log, settle
from shoparena.sandbox import (
    Backend,
    NoSandboxWarning,
    ProgramFile,
    SandboxOutcome,
    SandboxPolicy,
    SandboxUnavailable,
    check_sandbox,
    run_sandboxed,
)
from shoparena.sandbox.models import MiB

MAX_STEPS = 1000
MAX_ERROR_CHARS = 2000
MAX_TRACEBACK_CHARS = 3000
MAX_SHOWN_CHARS = 200
"""How much of claimed arguments a note quotes."""
INFERENCE_API_KEY_ENV = "SHOPARENA_INFERENCE_API_KEY"
"""Where the proxy's upstream API key is read from (the miner's environment never has it)."""
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
        policy: SandboxPolicy,
        server: ToolServer | None,
        inference: InferenceProxy | None = None,
    ):
        super().__init__(name=path.stem, version=hashlib.sha256(source).hexdigest()[:12])
        self.path = path
        self.source = source
        self.policy = policy
        self.miner_name = miner_file_name(path.stem)
        self._server = server
        self._own_server = server is None
        self._socket_dir: Path | None = None
        self._server_lock = threading.Lock()
        self.inference = inference
        """The proxy mounted on the tool server (the caller mounts it on a server it gives)."""

    @property
    def sandboxed(self) -> bool:
        return self.policy.backend is not Backend.NONE

    @property
    def timeout_s(self) -> float:
        return self.policy.limits.wall_s

    def server(self) -> ToolServer:
        """The tool server the miner talks to: the one given, or one this agent starts and owns, with
        the inference proxy mounted — on a Unix socket only when sandboxed (mode 0666 inside a private
        0700 directory: each run links it into the sandbox, and nothing else of the host reaches it), on
        loopback TCP for `none`."""
        with self._server_lock:
            if self._server is None:
                routers = [self.inference.router] if self.inference is not None else []
                if self.sandboxed:
                    self._socket_dir = Path(tempfile.mkdtemp(prefix="shoparena-tools-"))
                    self._server = ToolServer(
                        host=None,
                        socket_path=self._socket_dir / "tools.sock",
                        socket_mode=0o666,
                        routers=routers,
                    )
                else:
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
            if self._socket_dir is not None:
                shutil.rmtree(self._socket_dir, ignore_errors=True)
                self._socket_dir = None

    def run(self, episode: Episode, view: ProblemView) -> AgentRun:
        server = self.server()
        state = self.inference.new_state() if self.inference is not None else None
        token = server.register(episode, ttl_s=self.timeout_s + 30, state=state)
        session = server.session_of(token)
        assert session is not None
        try:
            outcome = waited(lambda cancel: self._run_sandboxed(server, token, view, cancel))
        except SandboxUnavailable as exc:  # fail closed: the miner's code did not run
            return AgentRun(error=f"cannot start the miner process: the sandbox is unavailable: {exc}")
        finally:
            server.revoke(token)
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

    def _run_sandboxed(
        self, server: ToolServer, token: str, view: ProblemView, cancel: threading.Event
    ) -> SandboxOutcome:
        env = {SESSION_ENV: token}
        socket_path = None
        if not self.sandboxed and server.tcp_url is not None:
            env[URL_ENV] = server.tcp_url
        elif server.socket_path is None:
            raise SandboxUnavailable(
                "the tool server listens on no Unix socket, the only way into the sandbox; start it with "
                "ToolServer(socket_path=..., socket_mode=0o666) in a private directory"
            )
        else:
            socket_path = server.socket_path
        return run_sandboxed(
            RUNNER,
            argv=[SDK.name, self.miner_name],
            files=[SDK, *SUBNET_FILES, ProgramFile(name=self.miner_name, content=self.source)],
            stdin=view.problem_data(),
            env=env,
            socket_path=socket_path,
            policy=self.policy,
            cancel=cancel,
        )

    def _to_run(self, episode: Episode, outcome: SandboxOutcome) -> AgentRun:
        notes = sandbox_notes(outcome, self.policy.limits)
        stderr = outcome.stderr[-STDERR_TAIL_CHARS:]
        tail = f"\n--- stderr (last {STDERR_TAIL_CHARS} chars) ---\n{clean_text(stderr)}" if stderr else ""
        if outcome.timed_out:
            return AgentRun(
                error=f"timeout: agent_main did not return within {self.timeout_s:g} s; the sandbox killed "
                f"the miner and every process it started{tail}",
                notes=notes,
            )
        if outcome.result_too_large:
            return AgentRun(
                error=f"agent_main returned more than {MAX_RESULT_BYTES // MiB} MiB of steps; they were not "
                "read (the calls made through the tool server are kept)",
                notes=notes,
            )
        try:
            envelope = json.loads(outcome.result) if outcome.result else None
        except RecursionError:
            return AgentRun(error="agent_main returned steps nested too deeply to read", notes=notes)
        except ValueError:
            envelope = None
        if not isinstance(envelope, dict):
            return AgentRun(
                error=f"the miner process ended without returning a result ({outcome.describe()}){tail}",
                notes=notes,
            )
        if not envelope.get("ok"):
            error = _clip(str(envelope.get("error")), MAX_ERROR_CHARS)
            traceback = clean_text(str(envelope.get("traceback") or "")[-MAX_TRACEBACK_CHARS:])
            return AgentRun(error=f"agent_main failed: {error}\n{traceback}{tail}".rstrip(), notes=notes)
        raw = envelope.get("steps")
        outputs = raw if isinstance(raw, list) else [raw]
        try:
            steps = parse_steps(raw)
        except StepFormatError as exc:
            return AgentRun(
                error=f"agent_main returned malformed steps: {exc}", model_outputs=outputs, notes=notes
            )
        return AgentRun(model_outputs=outputs, notes=notes + replay_claimed_ending(episode, steps))


def _check_source(path: Path, source: bytes) -> None:
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        where = f"line {exc.lineno}: " if exc.lineno else ""
        raise AgentSpecError(f"miner file {path}: {where}{exc.msg}") from None
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
    sandbox: str = "bwrap",
    timeout_s: float = 300.0,
    memory_mb: int = 4096,
    address_space_mb: int = 4096,
    cpu_s: int | None = None,
    pids: int = 256,
    open_files: int = 256,
    file_mb: int = 64,
    python: str | None = None,
    server: ToolServer | None = None,
    inference: InferenceProxy | None = None,
    inference_models: str | Mapping[str, str] | None = None,
    inference_default: str | None = None,
    inference_limits: Mapping[str, Any] | None = None,
    inference_api_key_env: str | None = INFERENCE_API_KEY_ENV,
    **options: Any,
) -> FileAgent:
    """A miner-file agent for `target` (a .py file), run in the `sandbox` (bwrap, container, or none).

    `timeout_s` is the wall clock of each problem, `memory_mb` the memory of its whole process tree,
    `address_space_mb` each process's, `cpu_s` (default: the timeout plus 5 s) each process's CPU
    seconds, `pids` the processes and threads of the tree; `python` the interpreter (default: the base
    of this one; only its standard library is visible inside). Pass `server` (listening on a Unix
    socket, mode 0666 in a private directory) to share one tool server across agents; otherwise the
    agent starts its own on first use and stops it in `close()`. The sandbox is checked here, so one
    that cannot run raises AgentSpecError before any problem does.

    Inference: the agent's own server mounts an inference proxy allowing `inference_models`
    (`NAME=UPSTREAM,…` or a mapping; default: the offline reference models), with `inference_limits`
    (`ProxyLimits` fields) and the upstream API key read from `inference_api_key_env`. With a given
    `server`, pass the `inference` proxy mounted on it (else the miner has no model to call)."""
    check_options(f"file:{target}", make_file_agent, options, skip=1)
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
    policy = sandbox_policy(
        sandbox,
        timeout_s=timeout_s,
        memory_mb=memory_mb,
        address_space_mb=address_space_mb,
        cpu_s=cpu_s,
        pids=pids,
        open_files=open_files,
        file_mb=file_mb,
        python=python,
    )
    if policy.backend is Backend.NONE:
        warnings.warn(NONE_WARNING, NoSandboxWarning, stacklevel=2)
    else:
        if server is not None and server.socket_path is None:
            raise AgentSpecError(
                "file agent: a sandboxed miner reaches its tool server only through a Unix socket; "
                "give a ToolServer with socket_path (mode 0666 in a private directory)"
            )
        try:
            check_sandbox(policy)
        except SandboxUnavailable as exc:
            raise AgentSpecError(
                f"file agent: the {policy.backend.value} sandbox cannot run here: {exc}. Fix that, or run "
                "with --sandbox none (no isolation; only for code you trust)"
            ) from None
    return FileAgent(path, source, policy=policy, server=server, inference=inference)


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
