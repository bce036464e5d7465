"""The one agent protocol (SPEC §5): an agent gets a problem with the reward stripped and a harness
episode (its tool client), drives the episode, and reports what it cost.

The episode, not the agent, records the trace and the verified call log, so no agent can misreport
which tools it called, what they returned, or who emitted them.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shoparena.harness.episode import Episode
from shoparena.problems.models import Problem
from shoparena.records.inference import InferenceLog
from shoparena.records.trajectory import TokenUsage
from shoparena.records.user_warning import one_line_warning  # noqa: F401 (re-exported for the pool workers)


class AgentSpecError(ValueError):
    """An agent spec that cannot be turned into an agent; the message says what to write instead."""


class RunnerError(RuntimeError):
    """A run that cannot start or go on (bad agent spec, unusable run directory, missing engine)."""


class ProblemView(BaseModel):
    """What an agent may know about a problem: never the reward (the miner `problem_data`).

    The task's own fields, as SN15's sandbox passes them (every task field but `reward`: `query`,
    `category`, `difficulty`, `title`, `voucher`, `Knowledge_Attribute`), plus ours (`problem_id`,
    `bucket`). One departure: `reward_title_embeddings` is left out — its keys are the gold titles."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    problem_id: str
    query: str
    bucket: str
    voucher: dict[str, Any] | None = None
    category: str | None = None
    """The subnet's task category ("Product", "Shop", "Voucher", …); from the bucket when unset."""
    difficulty: str | None = None
    title: str | None = None
    knowledge_attribute: str | int | None = Field(default=None, alias="Knowledge_Attribute")

    @classmethod
    def of(cls, problem: Problem) -> ProblemView:
        bucket = problem.bucket or "product"
        return cls(
            problem_id=problem.problem_id or "",
            query=problem.query,
            bucket=bucket,
            voucher=problem.voucher.model_dump(mode="json") if problem.voucher else None,
            category=problem.category or bucket.capitalize(),
            difficulty=problem.difficulty,
            title=problem.title,
            knowledge_attribute=problem.knowledge_attribute,
        )

    def problem_data(self) -> bytes:
        """The JSON a miner file's `agent_main` receives (the upstream key spellings)."""
        return self.model_dump_json(by_alias=True).encode()


class AgentRun(BaseModel):
    """What an agent reports about one episode besides the episode itself."""

    model_config = ConfigDict(extra="forbid")

    usage: TokenUsage = Field(default_factory=TokenUsage)
    error: str | None = None
    """Why the agent stopped abnormally (crash, timeout, bad output); None when it finished."""
    model_outputs: list[Any] = Field(default_factory=list)
    """Raw model outputs in order (assistant messages or text), for debugging and the judge."""
    notes: list[str] = Field(default_factory=list)
    """What the agent wrapper did besides running the agent (e.g. replaying a claimed call), for audit."""
    inference: InferenceLog | None = None
    """The verified inference log, for agents whose model calls went through the inference proxy
    (miner files); None for agents whose inference the harness ran itself."""


def episode_seed(seed: int, problem_id: str, sample: int) -> int:
    """The sampling seed of one (problem, sample) under a run's `seed`: the n samples that pass@k needs
    differ from each other, and each is the same whichever worker runs it, in whatever order. 32 bits,
    which every sampler takes (torch, vLLM, OpenAI-compatible servers)."""
    digest = hashlib.sha256(f"{seed}\x00{problem_id}\x00{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


class Agent(ABC):
    """Base class of every agent kind. Subclasses set `kind` and implement `run`."""

    kind: str = "agent"

    def __init__(self, name: str, version: str = "0"):
        self.name = name
        self.version = version

    @property
    def agent_id(self) -> str:
        return f"{self.kind}:{self.name}"

    def begin_episode(self, problem_id: str, sample: int) -> None:  # noqa: B027 - optional hook
        """Called by the runner before each episode: which problem, and which of its samples, comes next.
        Agents that sample seed themselves from it (`episode_seed`); the rest ignore it."""

    @abstractmethod
    def run(self, episode: Episode, view: ProblemView) -> AgentRun:
        """Solve one problem through `episode`; never raise for model or tool trouble — report it."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections, processes or models."""


# spec kind → "module:factory"; imported lazily so heavy dependencies load only when used
AGENT_KINDS: dict[str, str] = {
    "openai": "shoparena.agents.openai_agent:make_openai_agent",
    "hf": "shoparena.agents.hf_agent:make_hf_agent",
    "file": "shoparena.agents.miner.file_agent:make_file_agent",
    "reference": "shoparena.agents.reference.agent:make_reference_agent",
}


def make_agent(spec: str, **options: Any) -> Agent:
    """Build an agent from `KIND:TARGET` (openai:MODEL, hf:PATH, file:PATH, reference:agentic|pipeline)."""
    kind, sep, target = spec.partition(":")
    if not sep or not target:
        raise AgentSpecError(
            f"agent spec {spec!r}: expected KIND:TARGET, e.g. openai:gpt-4o-mini, hf:./ckpt, "
            "file:miner.py, reference:agentic"
        )
    if kind not in AGENT_KINDS:
        raise AgentSpecError(
            f"agent spec {spec!r}: unknown kind {kind!r}; use one of {', '.join(AGENT_KINDS)}"
        )
    module_name, _, factory_name = AGENT_KINDS[kind].partition(":")
    factory = getattr(importlib.import_module(module_name), factory_name)
    if not _takes_any_keyword(factory):  # a factory taking **options checks them itself (or passes them on)
        check_options(spec, factory, options, skip=1)
    return factory(target, **options)


def option_names(function: Callable[..., Any], skip: int = 0) -> list[str]:
    """The keyword options `function` (a factory or an agent class) takes, read from its signature,
    leaving out its first `skip` parameters (the spec's target) and any **kwargs."""
    parameters = list(inspect.signature(function).parameters.values())[skip:]
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in parameters if p.kind in keyword]


def check_options(agent: str, function: Callable[..., Any], options: dict[str, Any], skip: int = 0) -> None:
    """Refuse options `function` does not take, naming the ones it does: `agent reference:pipeline
    takes no option 'foo'; its options: protocol, seed` rather than Python's TypeError."""
    names = option_names(function, skip)
    unknown = sorted(set(options) - set(names))
    if unknown:
        which = "option" if len(unknown) == 1 else "options"
        raise AgentSpecError(
            f"agent {agent} takes no {which} {', '.join(map(repr, unknown))}; "
            f"its options: {', '.join(names) or 'none'}"
        )


def _takes_any_keyword(function: Callable[..., Any]) -> bool:
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(function).parameters.values()
    )
