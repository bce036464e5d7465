"""One eval configuration (SPEC §10): `EvalConfig` says, once, what to evaluate and how.

Every option is one field here: its type and bounds are checked when the config is built (so a bad
value stops a run before anything starts), and its description is also the `--help` of
`shoparena eval`, whose options are built from these fields. The run's record of itself (`RunConfig`,
run.json) and what a worker needs (`WorkerConfig`) are views derived from it, never written out again.

Adding an option is one field. Metadata on a field says how it reaches the CLI (`CliFlag`, when the
flag or its type differs from the field's) and whether it is passed to the agent factory
(`AgentOption`: for which agent kinds, under which option name).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from shoparena import __version__
from shoparena.harness.protocols import canonical_protocol
from shoparena.problems.models import Problem
from shoparena.records.options import CliFlag, Executor, Profile, SandboxBackend, SimilarityName
from shoparena.scoring.rules import ScoringMode

SECRET_MARKERS = ("key", "token", "secret", "password", "authorization")
RUN_SCHEMA = "shoparena.eval-run/1"
KILL_GRACE_S = 5.0
"""How long past the deadline the parent waits for a worker's own alarm before it kills the worker."""


def utc_now(timespec: Literal["seconds", "milliseconds"] = "seconds") -> str:
    """Now in UTC as ISO-8601: seconds for run.json, milliseconds for an episode's start."""
    return datetime.now(UTC).isoformat(timespec=timespec)


@dataclass(frozen=True)
class AgentOption:
    """A field that is also an agent factory option: agent kind → the factory's name for it.

    `only`: the field makes sense for these kinds alone, and is refused for any other (rather than
    silently ignored). Otherwise it has its own use too and is only passed on to these kinds.
    """

    names: dict[str, str] = field(default_factory=dict)
    only: bool = True


def parse_option(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` with VALUE read as JSON when it parses (numbers, true, lists), else as a string."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"{text!r}: expected KEY=VALUE, e.g. --option max_turns=20")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip().replace("-", "_"), value


class EvalConfig(BaseModel):
    """One evaluation: an agent over a suite into a run directory. Build it in Python as
    `EvalConfig(catalog=..., problems=..., agent="reference:agentic", out=...)`, or let
    `shoparena eval` build it from its flags; `replace(**changes)` gives a checked variant (one per
    entrant of a race, say)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    cli_exclude: ClassVar[frozenset[str]] = frozenset({"agent_file", "problems_source"})

    catalog: Path = Field(description="Catalogue directory the harness searches.")
    problems: Annotated[Path | list[Problem], CliFlag(type=Path)] = Field(
        description="Problems: ShoppingBench JSONL or an arena JSON list."
    )
    agent: str = Field(
        description="openai:MODEL, hf:PATH, file:MINER.py, reference:agentic or reference:pipeline."
    )
    out: Path = Field(description="Run directory (re-running resumes it).")
    samples: int = Field(1, ge=1, description="Samples per problem (pass@k for k ≤ samples).")
    workers: int = Field(1, ge=1, description="Parallel workers (each builds the agent once).")
    executor: Executor = Field("process", description="process (local pool), ray (cluster) or inline.")
    profile: Profile = Field("oro7", description="Tool profile: upstream4, oro7 or full.")
    protocol: str | None = Field(
        None,
        description="Model protocol: openai, upstream (or tags), qwen3 (or qwen); default: the agent's.",
    )
    step_cap: int | None = Field(None, ge=1, description="Steps per episode (default: the profile's).")
    mode: ScoringMode = Field(
        "upstream", description="Scoring: upstream (ShoppingBench) or strict (the arena)."
    )
    similarity: SimilarityName = Field("minilm", description="Title similarity: minilm or lexical.")
    timeout: Annotated[float | None, AgentOption({"file": "timeout_s"}, only=False)] = Field(
        None,
        gt=0,
        allow_inf_nan=False,
        description="Seconds per episode; past it the episode fails as a timeout.",
    )
    limit: int | None = Field(None, ge=1, description="Only the first N problems of the file.")
    retry_errors: bool = Field(
        False,
        description="Resuming, re-run the episodes recorded with a model-endpoint error (connection, "
        "HTTP) or a timeout; the new record counts, the old one stays in the file. The agent's own "
        "crashes stay failures.",
    )
    sandbox: Annotated[SandboxBackend | None, AgentOption({"file": "sandbox"})] = Field(
        None,
        description="file: where the miner's code runs: bwrap (the default: no network, no host files, "
        "limits), container (docker/podman), or none (no isolation, only for code you trust).",
    )
    base_url: Annotated[str | None, AgentOption({"openai": "base_url"})] = Field(
        None, description="openai: endpoint (or OPENAI_BASE_URL)."
    )
    api_key: Annotated[SecretStr | None, AgentOption({"openai": "api_key"}), CliFlag(type=str)] = Field(
        None, description="openai: key (or OPENAI_API_KEY); never recorded."
    )
    temperature: Annotated[float | None, AgentOption({"openai": "temperature", "hf": "temperature"})] = Field(
        None, ge=0, allow_inf_nan=False, description="Model sampling temperature."
    )
    max_tokens: Annotated[int | None, AgentOption({"openai": "max_tokens", "hf": "max_new_tokens"})] = Field(
        None, ge=1, description="Model tokens per turn."
    )
    options: Annotated[dict[str, Any], CliFlag("--option", list[str])] = Field(
        default_factory=dict, description="Any agent option as KEY=VALUE (repeatable)."
    )
    name: str | None = Field(None, description="Variant name in reports (default: the spec).")
    notes: Annotated[list[str], CliFlag("--note")] = Field(
        default_factory=list, description="A note for the report (repeatable)."
    )
    bootstrap: int = Field(1000, ge=0, description="Bootstrap resamples for the intervals.")
    seed: int = Field(0, description="Bootstrap seed.")
    agent_file: str | None = None
    """The miner file as its author names it, where the spec's `file:PATH` is a copy (`miner try` runs
    `agent.py`): recorded in run.json so a viewer shows the miner's frames under the author's name."""
    problems_source: str | None = None
    """Where a list of `problems` came from (`miner try`: its problems file and the cut it made), for
    run.json and the report; a file's source is its own path, and without it a list reads
    `<in-memory>`."""

    @field_validator("catalog")
    @classmethod
    def _catalog_dir(cls, path: Path) -> Path:
        if not path.is_dir():
            raise ValueError(f"{path} is not a directory")
        return path

    @field_validator("problems")
    @classmethod
    def _problems_file(cls, value: Path | list[Problem]) -> Path | list[Problem]:
        if isinstance(value, Path) and not value.is_file():
            raise ValueError(f"{value} is not a file")
        if isinstance(value, list) and not value:
            raise ValueError("no problems given")
        return value

    @field_validator("out")
    @classmethod
    def _out_dir(cls, path: Path) -> Path:
        if path.exists() and not path.is_dir():
            raise ValueError(f"{path} is a file; a run directory is a directory")
        return path

    @field_validator("agent")
    @classmethod
    def _agent_spec(cls, spec: str) -> str:
        kind, sep, target = spec.partition(":")
        if not sep or not kind or not target:
            raise ValueError(
                f"agent spec {spec!r}: expected KIND:TARGET, e.g. openai:gpt-4o-mini, hf:./ckpt, "
                "file:miner.py, reference:agentic"
            )
        return spec

    @field_validator("protocol")
    @classmethod
    def _protocol_name(cls, protocol: str | None) -> str | None:
        return None if protocol is None else canonical_protocol(protocol)

    @field_validator("options", mode="before")
    @classmethod
    def _options(cls, value: Any) -> Any:
        """A dict, or KEY=VALUE strings as the CLI's repeated --option gives them."""
        if isinstance(value, list | tuple):
            return dict(parse_option(item) for item in value)
        return value

    @model_validator(mode="after")
    def _fits_the_agent_kind(self) -> EvalConfig:
        kind = self.agent_kind
        if self.protocol is not None and kind == "file":
            raise ValueError(
                "--protocol does not apply to file: agents: a miner calls the tools over HTTP, "
                "without a model protocol"
            )
        for name, info in type(self).model_fields.items():
            option = _agent_option(info.metadata)
            if option is None or not option.only or getattr(self, name) is None or kind in option.names:
                continue
            kinds = ", ".join(f"{k}:" for k in option.names)
            raise ValueError(f"{cli_flag(name)} applies to {kinds} agents only, not {self.agent!r}")
        return self

    @property
    def agent_kind(self) -> str:
        return self.agent.partition(":")[0]

    def agent_options(self) -> dict[str, Any]:
        """The agent factory's options: the fields meant for this kind under its names, then `options`
        (which win), then the protocol asked for (unless `options` names one)."""
        kind = self.agent_kind
        options: dict[str, Any] = {}
        for name, info in type(self).model_fields.items():
            option = _agent_option(info.metadata)
            value = getattr(self, name)
            if option is not None and value is not None and kind in option.names:
                options[option.names[kind]] = (
                    value.get_secret_value() if isinstance(value, SecretStr) else value
                )
        options.update(self.options)
        if self.protocol is not None:
            options.setdefault("protocol", self.protocol)
        return options

    def replace(self, **changes: Any) -> EvalConfig:
        """A copy with `changes`, checked like a new config (pydantic's `model_copy` checks nothing)."""
        return type(self).model_validate({**dict(self), **changes})


def _agent_option(metadata: list[Any]) -> AgentOption | None:
    return next((m for m in metadata if isinstance(m, AgentOption)), None)


def cli_flag(name: str) -> str:
    """The `shoparena eval` flag of an `EvalConfig` field (what errors call it)."""
    info = EvalConfig.model_fields.get(name)
    flag = next((m for m in info.metadata if isinstance(m, CliFlag)), None) if info else None
    return flag.flag if flag is not None and flag.flag else "--" + name.replace("_", "-")


# -- the views derived from it --------------------------------------------------------------------


def redact(options: dict[str, Any]) -> dict[str, Any]:
    """Agent options as recorded: secrets (api keys, tokens) never reach run.json."""
    return {
        key: ("<redacted>" if any(marker in key.lower() for marker in SECRET_MARKERS) else value)
        for key, value in sorted(options.items())
    }


class AgentIdentity(BaseModel):
    """Who the workers built: known once the first worker has built the agent."""

    agent_id: str
    kind: str
    name: str
    version: str
    protocol: str


RESULT_DEFINING = (
    "catalog",
    "problems_sha256",
    "agent_spec",
    "agent_options",
    "profile",
    "protocol",
    "step_cap",
    "mode",
    "similarity",
)
"""What a resumed run must share with the original: anything that changes an episode or its score.
Samples, limit, workers, executor, timeout and retry_errors may change (more samples or problems
extend the run)."""


class RunConfig(BaseModel):
    """`run.json`: how a run was made. Written before the first episode, updated when a run finishes.
    Its JSON shape is what earlier runs wrote, so they resume."""

    model_config = ConfigDict(extra="ignore")

    schema_version: str = RUN_SCHEMA
    run_id: str
    name: str
    notes: list[str] = Field(default_factory=list)
    created_at: str
    updated_at: str | None = None
    status: str = "running"
    shoparena_version: str = __version__
    catalog: str
    """The catalogue's fingerprint (n products, source, seed, build time): a moved directory still matches."""
    catalog_dir: str
    problems_source: str
    problems_sha256: str
    n_problems_file: int
    limit: int | None = None
    samples: int
    agent_spec: str
    agent_options: dict[str, Any] = Field(default_factory=dict)
    agent_file: str | None = Field(None, exclude_if=lambda value: value is None)
    """The author's name for the miner file the spec's copy came from (`EvalConfig.agent_file`); absent
    from runs written before it, which show the spec's own file name, and not written when there is
    none, so a run without one keeps the bytes earlier versions wrote."""
    agent: AgentIdentity | None = None
    profile: str
    protocol: str | None = None
    step_cap: int | None = None
    mode: ScoringMode
    similarity: str
    episode_timeout_s: float | None = None
    workers: int = 1
    executor: str = "process"
    judged: bool = False

    @model_validator(mode="after")
    def _protocol_names(self) -> RunConfig:
        """Runs written before the one registry may say `tags` or `qwen`: they resume as their protocol."""
        self.protocol = _protocol_or_as_is(self.protocol)
        if "protocol" in self.agent_options:
            self.agent_options["protocol"] = _protocol_or_as_is(self.agent_options["protocol"])
        return self

    def differences(self, other: RunConfig) -> list[str]:
        """The result-defining fields that differ (self: before, other: now)."""
        return [
            f"{name}: {getattr(self, name)!r} before, {getattr(other, name)!r} now"
            for name in RESULT_DEFINING
            if getattr(self, name) != getattr(other, name)
        ]


def _protocol_or_as_is(value: Any) -> Any:
    try:
        return canonical_protocol(value) if isinstance(value, str) else value
    except ValueError:
        return value


class WorkerConfig(BaseModel):
    """Everything a worker needs to build its catalogue and agent (picklable, sent once per worker)."""

    model_config = ConfigDict(extra="forbid")

    catalog_dir: str
    agent_spec: str
    agent_options: dict[str, Any] = Field(default_factory=dict)
    profile: str = "oro7"
    protocol: str | None = None
    """The protocol asked for (already in `agent_options`); None = the agent's own default."""
    step_cap: int | None = None
    episode_timeout_s: float | None = None
    kill_grace_s: float = KILL_GRACE_S
    run_id: str = ""
    scoring_mode: str = "upstream"
    """Recorded in each trajectory (the parent scores; the worker writes everything else)."""
    agent_kinds: dict[str, str] = Field(default_factory=dict)
    """The parent's agent registry: kinds registered there (plugins, test doubles) exist in workers too."""

    @classmethod
    def of(cls, config: EvalConfig, run_id: str, agent_kinds: dict[str, str]) -> WorkerConfig:
        return cls(
            catalog_dir=str(config.catalog),
            agent_spec=config.agent,
            agent_options=config.agent_options(),
            profile=config.profile,
            protocol=config.protocol,
            step_cap=config.step_cap,
            episode_timeout_s=config.timeout,
            agent_kinds=agent_kinds,
            run_id=run_id,
            scoring_mode=config.mode,
        )
