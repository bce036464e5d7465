"""Where episodes run: in this process, in a local process pool, or as Ray actors — the same work each way.

A worker opens the catalogue and builds the agent once, then runs many episodes; loading a model or a
100k-product index per episode would dominate the run. Workers also build and serialise each
trajectory record (in parallel); the parent hands out (problem, sample) tasks, scores what comes back
and appends it (one scorer, one writer).

Timeouts are enforced twice. Inside the worker a SIGALRM deadline interrupts the agent (raising a
`BaseException`, so an agent's own `except Exception` cannot swallow it) and the partial trace is kept.
A worker stuck where signals do not reach (a blocking C call) is killed by the parent after a grace
period and replaced; its episode is recorded as a timeout all the same.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
import traceback
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from multiprocessing.connection import Connection, wait
from typing import Any

from shoparena.agents.base import (
    AGENT_KINDS,
    Agent,
    AgentRun,
    AgentSpecError,
    ProblemView,
    RunnerError,
    make_agent,
    one_line_warning,
)
from shoparena.eval.config import AgentIdentity, WorkerConfig, utc_now
from shoparena.eval.episodes import (
    TIMEOUT_ERROR,
    EpisodeOutput,
    EpisodeTask,
    episode_record,
    failed_record,
)
from shoparena.harness.episode import Episode, load_shops
from shoparena.harness.tool_specs import tool_schemas
from shoparena.records.options import EXECUTORS
from shoparena.records.trajectory import TrajectoryRecord


class EpisodeTimeout(BaseException):
    """Raised inside the agent when its episode runs past the deadline."""


def protocol_name(agent: Agent, requested: str | None) -> str:
    """The protocol an agent actually speaks, else the one requested; `direct` for agents that call
    the tools without a model protocol (miner files over HTTP, scripted code)."""
    value = getattr(agent, "protocol", None)
    if isinstance(value, str) and value:
        return value
    name = getattr(value, "name", None)
    if isinstance(name, str) and name:
        return name
    return requested or "direct"


def _can_alarm() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def deadline(seconds: float | None):
    """Raise `EpisodeTimeout` in this (main) thread after `seconds`; a no-op where signals are unavailable."""
    if not seconds or not _can_alarm():
        yield
        return

    def _expire(signum, frame):
        raise EpisodeTimeout()

    previous = signal.signal(signal.SIGALRM, _expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class EpisodeWorker:
    """One catalogue and one agent, reused for every episode this worker runs."""

    def __init__(self, config: WorkerConfig):
        from shoparena.index.catalog_dir import open_catalog

        self.config = config
        AGENT_KINDS.update(config.agent_kinds)
        self.backend = open_catalog(config.catalog_dir)
        self.shops = load_shops(config.catalog_dir)
        try:
            self.agent = make_agent(config.agent_spec, **config.agent_options)
        except BaseException:
            self.backend.close()
            raise
        self.identity = AgentIdentity(
            agent_id=self.agent.agent_id,
            kind=self.agent.kind,
            name=self.agent.name,
            version=str(self.agent.version),
            protocol=protocol_name(self.agent, config.protocol),
        )

    def _system_prompt(self, episode_tools: list[dict]) -> str | None:
        """An agent that wants its system prompt in the recorded trace exposes `system_prompt_for(tools)`."""
        hook = getattr(self.agent, "system_prompt_for", None)
        return hook(episode_tools) if callable(hook) else None

    def run(self, task: EpisodeTask) -> EpisodeOutput:
        return EpisodeOutput.of(self.run_episode(task))

    def run_episode(self, task: EpisodeTask) -> TrajectoryRecord:
        config = self.config
        problem = task.problem
        started_at = utc_now("milliseconds")
        started = time.perf_counter()
        episode = Episode.for_problem(
            problem,
            self.backend,
            profile=config.profile,
            step_cap=config.step_cap,
            shops=self.shops,
            system_prompt=self._system_prompt(tool_schemas(config.profile)),
        )
        error: str | None = None
        agent_run = AgentRun()
        try:
            with deadline(config.episode_timeout_s):
                self.agent.begin_episode(problem.problem_id or "", task.sample)
                agent_run = self.agent.run(episode, ProblemView.of(problem))
        except EpisodeTimeout:
            error = TIMEOUT_ERROR
        except Exception as exc:  # an agent that raises anyway: its episode fails, the worker goes on
            error = f"agent crashed: {type(exc).__name__}: {exc}"
            tail = traceback.format_exc(limit=3).strip().splitlines()[-1:]
            if tail and tail[0] not in error:
                error += f" ({tail[0]})"
        wall = time.perf_counter() - started
        if error is None and config.episode_timeout_s and wall > config.episode_timeout_s:
            error = TIMEOUT_ERROR  # no alarm here (not the main thread): judged after the fact
        if error is None:
            error = agent_run.error
        return episode_record(task, config, self.identity, episode, agent_run, error, started_at, wall)

    def close(self) -> None:
        try:
            self.agent.close()
        finally:
            self.backend.close()


# -- executors ------------------------------------------------------------------------------------


class Executor:
    """Runs tasks and yields results as they finish (any order). `identity` is known after `start`."""

    config: WorkerConfig
    identity: AgentIdentity | None = None

    def start(self) -> AgentIdentity:
        raise NotImplementedError

    def run(self, tasks: Iterable[EpisodeTask]) -> Iterator[EpisodeOutput]:
        raise NotImplementedError

    def close(self) -> None:
        return None

    def _failed(self, task: EpisodeTask, error: str) -> EpisodeOutput:
        """The output of an episode its worker never finished (killed at the deadline, or died)."""
        assert self.identity is not None, "start() first"
        return EpisodeOutput.of(failed_record(task, self.config, self.identity, error))

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _build_error(config: WorkerConfig, exc: BaseException) -> RunnerError:
    if isinstance(exc, AgentSpecError):  # already says which agent and what to write instead
        return RunnerError(str(exc))
    return RunnerError(f"agent {config.agent_spec!r} could not be built: {type(exc).__name__}: {exc}")


class InlineExecutor(Executor):
    """Episodes one after another in this process: for debugging, tests and one-core machines."""

    def __init__(self, config: WorkerConfig):
        self.config = config
        self.worker: EpisodeWorker | None = None

    def start(self) -> AgentIdentity:
        try:
            self.worker = EpisodeWorker(self.config)
        except Exception as exc:
            raise _build_error(self.config, exc) from exc
        self.identity = self.worker.identity
        return self.identity

    def run(self, tasks: Iterable[EpisodeTask]) -> Iterator[EpisodeOutput]:
        assert self.worker is not None, "start() first"
        for task in tasks:
            yield self.worker.run(task)

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None


def _worker_main(config: WorkerConfig, conn: Connection) -> None:
    """A pool worker: build once, then answer one task at a time until told to stop (None)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    warnings.showwarning = one_line_warning
    try:
        worker = EpisodeWorker(config)
    except BaseException as exc:
        conn.send(("init-error", str(_build_error(config, exc))))
        return
    conn.send(("ready", worker.identity))
    try:
        while True:
            try:
                task = conn.recv()
            except EOFError:
                break
            if task is None:
                break
            conn.send(("result", worker.run(task)))
    finally:
        worker.close()


class _Slot:
    """One pool process and the task it holds."""

    def __init__(self, process, conn: Connection):
        self.process = process
        self.conn = conn
        self.task: EpisodeTask | None = None
        self.since = 0.0


class ProcessExecutor(Executor):
    """A local pool of `workers` processes; a hung or dead worker is replaced, its episode recorded failed."""

    def __init__(self, config: WorkerConfig, workers: int = 2, start_method: str | None = None):
        if workers < 1:
            raise RunnerError(f"workers must be at least 1, got {workers}")
        self.config = config
        self.workers = workers
        method = start_method or os.environ.get("SHOPARENA_MP_START", "forkserver")
        if method not in multiprocessing.get_all_start_methods():
            method = "spawn"
        self.context = multiprocessing.get_context(method)
        self.slots: list[_Slot] = []
        self.replaced = 0

    def _spawn(self) -> _Slot:
        parent, child = self.context.Pipe()
        process = self.context.Process(target=_worker_main, args=(self.config, child), daemon=True)
        process.start()
        child.close()
        slot = _Slot(process, parent)
        died = RunnerError(
            "an eval worker died while starting (exit code {code}); try --executor inline to see why"
        )
        while not parent.poll(0.2):  # the pipe may stay open in a dead child's forkserver: watch the child
            if not process.is_alive():
                process.join(1)
                raise RunnerError(str(died).format(code=process.exitcode))
        try:
            kind, payload = parent.recv()
        except EOFError as exc:
            process.join(1)
            raise RunnerError(str(died).format(code=process.exitcode)) from exc
        if kind == "init-error":
            process.join(5)
            raise RunnerError(payload)
        self.identity = payload
        return slot

    def start(self) -> AgentIdentity:
        self.slots = [self._spawn() for _ in range(self.workers)]
        assert self.identity is not None
        return self.identity

    def _kill(self, slot: _Slot) -> None:
        slot.process.kill()
        slot.process.join(5)
        slot.conn.close()

    def _replace(self, slot: _Slot) -> _Slot:
        self._kill(slot)
        self.replaced += 1
        fresh = self._spawn()
        self.slots[self.slots.index(slot)] = fresh
        return fresh

    def run(self, tasks: Iterable[EpisodeTask]) -> Iterator[EpisodeOutput]:
        pending = iter(tasks)
        exhausted = False
        timeout = self.config.episode_timeout_s
        assert self.identity is not None, "start() first"

        def feed(slot: _Slot) -> None:
            nonlocal exhausted
            if exhausted:
                return
            task = next(pending, None)
            if task is None:
                exhausted = True
                return
            slot.task, slot.since = task, time.monotonic()
            slot.conn.send(task)

        for slot in list(self.slots):
            feed(slot)
        while any(slot.task is not None for slot in self.slots):
            busy = {slot.conn: slot for slot in self.slots if slot.task is not None}
            for conn in wait(list(busy), timeout=0.25):
                slot = busy[conn]
                task = slot.task
                assert task is not None
                try:
                    _kind, payload = conn.recv()
                except (EOFError, OSError):
                    code = slot.process.exitcode
                    slot.task = None
                    yield self._failed(task, f"worker crashed (exit code {code})")
                    feed(self._replace(slot))
                    continue
                slot.task = None
                yield payload
                feed(slot)
            if timeout:
                now = time.monotonic()
                for slot in list(self.slots):
                    if slot.task is not None and now - slot.since > timeout + self.config.kill_grace_s:
                        task, slot.task = slot.task, None
                        yield self._failed(task, TIMEOUT_ERROR)
                        feed(self._replace(slot))

    def close(self) -> None:
        for slot in self.slots:
            with suppress(OSError, BrokenPipeError):
                slot.conn.send(None)
        for slot in self.slots:
            slot.process.join(5)
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join(1)
            slot.conn.close()
        self.slots = []


class _RayWorker:
    """The Ray actor body: the same `EpisodeWorker`, one per actor."""

    def __init__(self, config: WorkerConfig):
        self.worker = EpisodeWorker(config)

    def identity(self) -> AgentIdentity:
        return self.worker.identity

    def run(self, task: EpisodeTask) -> EpisodeOutput:
        return self.worker.run(task)


def import_ray():
    try:
        import ray
    except ImportError as exc:
        raise RunnerError(
            "--executor ray needs Ray: pip install 'shoparena[scale]' (or pip install ray); "
            "or use --executor process"
        ) from exc
    return ray


class RayExecutor(Executor):
    """`workers` Ray actors (on the cluster at RAY_ADDRESS, or a local one) running the same episodes.

    The catalogue directory must be readable at the same path on every node (a shared volume).
    """

    def __init__(self, config: WorkerConfig, workers: int = 2, address: str | None = None):
        self.ray = import_ray()
        self.config = config
        self.workers = workers
        self.address = address or os.environ.get("RAY_ADDRESS")
        self.actors: list[Any] = []
        self.replaced = 0
        self._started_ray = False

    def _actor(self):
        actor = self._remote.remote(self.config)
        try:
            self.identity = self.ray.get(actor.identity.remote())
        except Exception as exc:
            raise RunnerError(f"agent {self.config.agent_spec!r} could not be built on Ray: {exc}") from exc
        return actor

    def start(self) -> AgentIdentity:
        ray = self.ray
        if not ray.is_initialized():
            ray.init(address=self.address, ignore_reinit_error=True, log_to_driver=False)
            self._started_ray = True
        self._remote = ray.remote(num_cpus=1, max_restarts=0)(_RayWorker)
        self.actors = [self._actor() for _ in range(self.workers)]
        assert self.identity is not None
        return self.identity

    def run(self, tasks: Iterable[EpisodeTask]) -> Iterator[EpisodeOutput]:
        ray = self.ray
        pending = iter(tasks)
        timeout = self.config.episode_timeout_s
        in_flight: dict[Any, tuple[int, EpisodeTask, float]] = {}

        def feed(position: int) -> None:
            task = next(pending, None)
            if task is not None:
                ref = self.actors[position].run.remote(task)
                in_flight[ref] = (position, task, time.monotonic())

        for position in range(len(self.actors)):
            feed(position)
        while in_flight:
            done, _ = ray.wait(list(in_flight), num_returns=1, timeout=0.25)
            for ref in done:
                position, task, _since = in_flight.pop(ref)
                try:
                    yield ray.get(ref)
                except Exception as exc:  # the actor died: replace it, the episode fails
                    yield self._failed(task, f"worker crashed: {exc}")
                    self.actors[position] = self._actor()
                    self.replaced += 1
                feed(position)
            if timeout:
                now = time.monotonic()
                for ref, (position, task, since) in list(in_flight.items()):
                    if now - since > timeout + self.config.kill_grace_s:
                        in_flight.pop(ref)
                        ray.kill(self.actors[position])
                        self.actors[position] = self._actor()
                        self.replaced += 1
                        yield self._failed(task, TIMEOUT_ERROR)
                        feed(position)

    def close(self) -> None:
        for actor in self.actors:
            with suppress(Exception):
                self.ray.kill(actor)
        self.actors = []
        if self._started_ray:
            self.ray.shutdown()


def make_executor(kind: str, config: WorkerConfig, workers: int = 1) -> Executor:
    if kind == "inline":
        return InlineExecutor(config)
    if kind == "process":
        return ProcessExecutor(config, workers)
    if kind == "ray":
        return RayExecutor(config, workers)
    raise RunnerError(f"unknown executor {kind!r}; use one of {', '.join(EXECUTORS)}")
