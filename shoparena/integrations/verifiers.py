"""shoparena as a `verifiers` environment (PrimeIntellect's `verifiers` ≥ 0.4, its `verifiers.v1` API).

`load_environment(catalog=..., problems=...)` returns a verifiers `Env` that `vf-eval`, prime-rl and
anything else speaking verifiers can run against an OpenAI-compatible endpoint:

- **tasks** (`ShopTaskset`): one per problem of the problems file (ShoppingBench or arena format, read
  as `shoparena eval` reads it; `limit` keeps the first N). A task's data carries the problem and the
  episode's settings (catalogue directory, tool profile, step cap, scoring mode), so a task runs the
  same wherever verifiers ships it.
- **the tool loop** (`ShopHarness`): verifiers' harness contract lets a harness run its loop in-process
  as long as every model call goes through the rollout's interception endpoint. This one runs the
  episode exactly as `shoparena eval --agent openai:MODEL` does — the same `EpisodeWorker`, the same
  `Episode` (the per-rollout state: tool schemas, observations, error observations, step cap,
  grounding), the same chat loop — with the OpenAI agent's base URL set to the interception endpoint.
  Verifiers records every model call in its trace; the episode's `TrajectoryRecord` (every model
  call's tool calls with origin `llm`) rides on the trace's `info["shoparena"]`.
- **the rubric** (`ShopTask`): the rule scorer over that record, as the eval's runner scores it.
  Rewards: `outcome` (the rule score, weight 1), `tool_match` (the per-step match against a teacher
  trajectory of the same problem, `train.rewards.tool_match`; weight `tool_weight`, 0 by default) and
  `judge_quality` (the reasoning judge's quality; weight `judge_weight`, 0 by default, run only when
  a judge is configured). Metrics (recorded, never summed): success, the rule, each axis the problem
  asks about, format, steps, grounding, hallucinated ids.

`to_trajectory(trace)` turns a finished rollout (a live `vf.Trace`, or a `traces.jsonl` line of
`vf-eval`) back into our pydantic `TrajectoryRecord`, score and verdict included, ready for the store
(`shoparena store ingest`) and the corpus.

Why the module is reached as `shoparena_verifiers` from the command line: verifiers resolves a taskset
id to a module by name and cannot import a dotted one, so the top-level package `shoparena_verifiers`
re-exports this module's plugin classes (`vf-eval shoparena-verifiers ...`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

try:
    import verifiers.v1 as vf
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        "shoparena.integrations.verifiers needs the `verifiers` package: pip install 'shoparena[verifiers]'"
    ) from exc
from pydantic import Field, field_validator

from shoparena.agents.chat_loop import DEFAULT_SYSTEM_PROMPT
from shoparena.eval.config import WorkerConfig
from shoparena.eval.episodes import RETRYABLE_ERRORS, EpisodeDigest, EpisodeTask, error_kind
from shoparena.eval.executors import EpisodeWorker
from shoparena.eval.runner import check_unique, load_suite, score_summary
from shoparena.problems.models import Problem
from shoparena.records.options import Profile, SimilarityName
from shoparena.records.trajectory import TrajectoryRecord
from shoparena.scoring.rules import RuleScorer, ScoringMode
from shoparena.scoring.similarity import make_similarity
from shoparena.train.rewards import hallucinated_ids, load_teachers, model_steps, tool_match

TASKSET_ID = "shoparena-verifiers"
"""What verifiers calls this environment (`vf-eval shoparena-verifiers`, `--env.taskset.id`)."""
RECORD_KEY = "shoparena"
"""Where a trace carries its episode's `TrajectoryRecord` (`trace.info[RECORD_KEY]`, JSON)."""
AXES = ("title", "price", "service", "sku_attr", "knowledge")

__all__ = [
    "RECORD_KEY",
    "TASKSET_ID",
    "ShopData",
    "ShopEnv",
    "ShopEnvConfig",
    "ShopHarness",
    "ShopHarnessConfig",
    "ShopTask",
    "ShopTaskConfig",
    "ShopTaskset",
    "ShopTasksetConfig",
    "episode_traces",
    "evaluate",
    "load_environment",
    "to_trajectory",
]


# -- data and configuration ------------------------------------------------------------------------


class ShopData(vf.TaskData):
    """One problem and the settings its episode runs under (the task's wire form)."""

    problem: Problem
    index: int
    """The problem's 0-based position in the problems file (the record's `problem.index`)."""
    catalog: str
    profile: Profile = "oro7"
    step_cap: int | None = None
    mode: ScoringMode = "strict"


class ShopTaskConfig(vf.TaskConfig):
    """How rollouts are scored (`--env.taskset.task.*`)."""

    similarity: SimilarityName = "minilm"
    """Title similarity of the rule scorer, as `shoparena eval --similarity`."""
    teacher: str | None = None
    """JSONL of teacher trajectories (trajectory records or corpus rows) for the `tool_match` reward."""
    judge: str | None = None
    """A judge spec (`offline`, `openai:MODEL`, `panel:…`) for the `judge_quality` reward; None: no judge."""
    judge_options: dict[str, Any] = Field(default_factory=dict)
    """Options of `make_judge` (base_url, fallback, timeout_s, …). Not the API key: verifiers saves this
    config with its run, so the judge reads its key from OPENAI_API_KEY."""

    @field_validator("judge_options")
    @classmethod
    def _no_secrets(cls, options: dict[str, Any]) -> dict[str, Any]:
        if "api_key" in options:
            raise ValueError(
                "judge_options: no api_key here (verifiers writes its config into the run directory); "
                "the judge reads OPENAI_API_KEY"
            )
        return options


class ShopTasksetConfig(vf.TasksetConfig):
    """Which problems load, from which catalogue (`--env.taskset.*`)."""

    catalog: str = ""
    problems: str = ""
    profile: Profile = "oro7"
    mode: ScoringMode = "strict"
    step_cap: int | None = Field(None, ge=1)
    limit: int | None = Field(None, ge=1)
    task: ShopTaskConfig = ShopTaskConfig()


class ShopHarnessConfig(vf.HarnessConfig):
    """The OpenAI agent's options (`--env.agent.harness.*`); unset ones are `shoparena eval`'s defaults."""

    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT
    temperature: float | None = None
    max_tokens: int | None = None
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(4, ge=0)


# -- the scorer's per-process state ----------------------------------------------------------------

_lock = threading.Lock()


@functools.cache
def _scorer(catalog: str, mode: str, similarity: str) -> RuleScorer:
    from shoparena.index.catalog_dir import open_catalog

    return RuleScorer(open_catalog(catalog), make_similarity(similarity), mode)  # type: ignore[arg-type]


@functools.cache
def _teachers(path: str):
    return load_teachers(path).by_problem


@functools.cache
def _judge(spec: str, options: str):
    from shoparena.judge import make_judge

    return make_judge(spec, **json.loads(options))


def scored(record: TrajectoryRecord, data: ShopData, similarity: str) -> TrajectoryRecord:
    """The record with its `score`, as `shoparena eval`'s runner scores an episode."""
    with _lock:
        scorer = _scorer(data.catalog, data.mode, similarity)
        digest = EpisodeDigest.of(record)
        score = score_summary(
            scorer, data.problem, digest.answer, answered=not digest.error, grounded=digest.grounded
        )
    return record.model_copy(update={"score": score})


# -- the harness: one episode through the interception endpoint ------------------------------------


def _data(data: vf.TaskData) -> ShopData:
    """The task's data as ours (an env server hands the harness the wire form)."""
    return data if isinstance(data, ShopData) else ShopData.model_validate(data.model_dump())


def run_rollout(
    data: ShopData, config: ShopHarnessConfig, model: str, base_url: str, api_key: str, run_id: str
) -> TrajectoryRecord:
    """One episode, run as `shoparena eval --agent openai:MODEL --base-url BASE_URL` runs it."""
    options: dict[str, Any] = {
        "base_url": base_url,
        "api_key": api_key,
        # the task's own system prompt when verifiers gave it one (`--env.taskset.system-prompt FILE`,
        # what `vf-gepa` optimises), else the harness's
        "system_prompt": data.system_prompt if data.system_prompt is not None else config.system_prompt,
        "timeout_s": config.timeout_s,
        "max_retries": config.max_retries,
    }
    if config.temperature is not None:
        options["temperature"] = config.temperature
    if config.max_tokens is not None:
        options["max_tokens"] = config.max_tokens
    worker = EpisodeWorker(
        WorkerConfig(
            catalog_dir=data.catalog,
            agent_spec=f"openai:{model}",
            agent_options=options,
            profile=data.profile,
            step_cap=data.step_cap,
            run_id=run_id,
            scoring_mode=data.mode,
        )
    )
    try:
        return worker.run_episode(EpisodeTask(index=data.index, sample=0, problem=data.problem))
    finally:
        worker.close()


class ShopHarness(vf.Harness[ShopHarnessConfig]):
    """shoparena's own tool loop, in-process: every model call goes to the rollout's interception."""

    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data) -> vf.ProgramResult:
        model = ctx.model or "model"
        record = await asyncio.to_thread(
            run_rollout, _data(data), self.config, model, endpoint, secret, trace.id[:12]
        )
        error = record.outcome.error
        if error and error_kind(error) in RETRYABLE_ERRORS:
            # The endpoint failed, not the policy: an errored rollout (verifiers retries it, trainers
            # leave it out) rather than a reward of 0. verifiers scores no errored rollout, so its
            # record is scored here (it answered nothing: no title is compared, any similarity will do).
            record = scored(record, _data(data), "lexical")
            trace.info[RECORD_KEY] = record.model_dump(mode="json")
            raise vf.ProviderError(f"shoparena episode: {error}")
        trace.info[RECORD_KEY] = record.model_dump(mode="json")
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")


# -- the task: the rule scorer as the rubric -------------------------------------------------------


class ShopTask(vf.Task[ShopData, vf.State, ShopTaskConfig]):
    @property
    def key(self) -> str:
        return self.data.problem.problem_id or self.hash

    def _record(self, trace: vf.Trace) -> TrajectoryRecord | None:
        """The rollout's record, scored as the eval's runner scores it (once; kept on the trace)."""
        raw = trace.info.get(RECORD_KEY)
        if raw is None:
            return None
        record = TrajectoryRecord.model_validate(raw)
        if record.score.rule is None:
            record = scored(record, self.data, self.config.similarity)
            trace.info[RECORD_KEY] = record.model_dump(mode="json")
        return record

    @vf.metric
    async def rule_parts(self, trace: vf.Trace) -> dict[str, float]:
        """success, rule, each axis the problem asks about, format, steps, grounding, hallucinated ids."""
        record = self._record(trace)
        if record is None:
            return {"success": 0.0}
        score = record.score
        parts = {"success": float(bool(score.success)), "rule": float(score.rule or 0.0)}
        parts |= {axis: float(getattr(score, axis)) for axis in AXES if getattr(score, axis) is not None}
        parts["format_ok"] = float(score.format_ok is not False)
        parts["steps"] = float(record.outcome.steps_used)
        if score.grounded is not None:
            parts["grounded"] = float(score.grounded)
        parts["hallucinated_ids"] = float(len(hallucinated_ids(record.calls)))
        return parts

    @vf.reward(weight=1.0)
    async def outcome(self, trace: vf.Trace) -> float:
        """The rule score (strict mode: the arena's), what GRPO's `outcome` term is."""
        record = self._record(trace)
        return float(record.score.rule or 0.0) if record is not None else 0.0

    @vf.reward(weight=0.0)
    async def tool_match(self, trace: vf.Trace) -> float:
        """Per-step tool-match against the problem's teacher trajectory (0 without one)."""
        record = self._record(trace)
        if record is None or not self.config.teacher:
            return 0.0
        teacher = _teachers(self.config.teacher).get(record.problem.problem_id)
        return tool_match(model_steps(record.calls), teacher.steps) if teacher is not None else 0.0

    @vf.reward(weight=0.0)
    async def judge_quality(self, trace: vf.Trace) -> float:
        """The reasoning judge's quality (0 without a judge, or when the judge fails)."""
        record = self._record(trace)
        if record is None or not self.config.judge:
            return 0.0
        judge = _judge(self.config.judge, json.dumps(self.config.judge_options, sort_keys=True))
        try:
            verdict = await asyncio.to_thread(judge, record, self.data.problem)
        except Exception:
            return 0.0
        trace.info[RECORD_KEY] = record.model_copy(update={"judge": verdict}).model_dump(mode="json")
        return float(verdict.quality)


class ShopTaskset(vf.Taskset[ShopTask, ShopTasksetConfig]):
    def load(self) -> list[ShopTask]:
        config = self.config
        if not config.catalog or not config.problems:
            raise ValueError(f"{TASKSET_ID}: set the catalogue and the problems (catalog=..., problems=...)")
        problems = load_suite(Path(config.problems)).problems
        problems = problems[: config.limit] if config.limit else problems
        check_unique(problems)
        catalog = str(Path(config.catalog).resolve())
        return [
            ShopTask(
                ShopData(
                    id=problem.problem_id,
                    prompt=problem.query,
                    problem=problem,
                    index=index,
                    catalog=catalog,
                    profile=config.profile,
                    step_cap=config.step_cap,
                    mode=config.mode,
                ),
                config.task,
            )
            for index, problem in enumerate(problems)
        ]


# -- the environment -------------------------------------------------------------------------------


class ShopEnvConfig(vf.SingleAgentEnvConfig):
    """The single agent seat, on the local subprocess runtime by default (the loop runs in-process and
    needs no sandbox of verifiers' own: the harness's tools are the catalogue's)."""

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class ShopEnv(vf.Env[ShopEnvConfig]):
    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        await agents.agent.run(task)


def load_environment(
    catalog: str | Path,
    problems: str | Path,
    profile: Profile = "oro7",
    mode: ScoringMode = "strict",
    *,
    step_cap: int | None = None,
    limit: int | None = None,
    similarity: SimilarityName = "minilm",
    teacher: str | Path | None = None,
    tool_weight: float = 0.0,
    judge: str | None = None,
    judge_weight: float = 0.0,
    judge_options: Mapping[str, Any] | None = None,
    harness: Mapping[str, Any] | None = None,
    system_prompt_file: str | Path | None = None,
) -> vf.Env:
    """The verifiers environment of PROBLEMS in CATALOG: our tools, our step cap, our rule scorer.

    reward = outcome + tool_weight × tool_match + judge_weight × judge_quality. `harness` sets
    `ShopHarnessConfig` fields (system prompt, temperature, max tokens, timeouts);
    `system_prompt_file` is verifiers' own override of every task's system prompt (`vf-gepa`'s output)."""
    if tool_weight and teacher is None:
        raise ValueError("tool_weight needs teacher trajectories (teacher=PATH)")
    if judge_weight and judge is None:
        raise ValueError("judge_weight needs a judge (judge='offline' or 'openai:MODEL')")
    rewards = {"tool_match": {"weight": tool_weight}, "judge_quality": {"weight": judge_weight}}
    task = {
        "similarity": similarity,
        "teacher": str(teacher) if teacher is not None else None,
        "judge": judge,
        "judge_options": dict(judge_options or {}),
        "rewards": rewards,
    }
    config = {
        "taskset": {
            "id": TASKSET_ID,
            "catalog": str(catalog),
            "problems": str(problems),
            "profile": profile,
            "mode": mode,
            "step_cap": step_cap,
            "limit": limit,
            "task": task,
            "system_prompt": str(system_prompt_file) if system_prompt_file is not None else None,
        },
        "agent": {"harness": {"id": TASKSET_ID, **dict(harness or {})}},
    }
    return vf.load_environment(vf.resolve_env_config(config))


# -- running it and reading its rollouts -----------------------------------------------------------


def evaluate(
    env: vf.Env,
    *,
    model: str,
    base_url: str,
    api_key_var: str = "OPENAI_API_KEY",
    rollouts: int = 1,
    max_concurrent: int | None = None,
) -> list[vf.Episode]:
    """Run every task of `env` `rollouts` times against the endpoint (what `vf-eval` does, in-process)."""

    async def main() -> list[vf.Episode]:
        ctx = vf.ModelContext(
            client=vf.EvalClientConfig(base_url=base_url, api_key_var=api_key_var), model=model
        )
        gate = asyncio.Semaphore(max_concurrent) if max_concurrent else None
        async with env.serving():
            slots = [slot for task in env.taskset for slot in env.slots(task, rollouts)]
            return list(await asyncio.gather(*(env.run_slot(slot, ctx, gate) for slot in slots)))

    return asyncio.run(main())


def to_trajectory(trace: vf.Trace | Mapping[str, Any]) -> TrajectoryRecord:
    """A rollout's `TrajectoryRecord` (scored, and judged when a judge ran), validated by our model.

    `trace` is a live `vf.Trace` or a trace's JSON (a `traces.jsonl` episode's `traces[i]`)."""
    info = trace.info if isinstance(trace, vf.Trace) else trace.get("info") or {}
    raw = info.get(RECORD_KEY)
    if raw is None:
        raise ValueError(f"not a {TASKSET_ID} rollout: its trace carries no info[{RECORD_KEY!r}]")
    return TrajectoryRecord.model_validate(raw)


def episode_traces(episodes: Sequence[vf.Episode]) -> list[vf.Trace]:
    """Every trace of `episodes`, in order."""
    return [trace for episode in episodes for trace in episode.traces]
