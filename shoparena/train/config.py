"""The stage-config pattern every training stage follows (SPEC §9): one config class per stage, in the
shape of TRL's `Trainer` + `Config` (a flat record of named, documented, defaulted fields), read from
YAML or JSON, overridable field by field from the command line, written back resolved beside the
stage's outputs, and handed to the stage's `run_<stage>(config) -> StageResult`.

Stage configs are pydantic models with `extra="forbid"`: a misspelt key in a config file is refused by
name instead of silently ignored (an ignored `learning_rate` would train with the default). Each field's
`description` is its documentation and its command-line help (`shoparena.cli.train_stage.stage_command`
builds one option per field, so an option is written once).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Self

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shoparena.records.options import ConfigError, config_errors, read_config_file
from shoparena.train.reporting import REPORT_TO_HELP, ReportToOption

RESOLVED_CONFIG = "config.resolved.json"


class StageConfig(BaseModel):
    """Fields every stage has; a stage subclasses this and adds its own (TRL's `*Config` shape)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    stage: ClassVar[str] = "stage"
    """The stage's name: the `shoparena train <stage>` command and the `stage` of its `StageResult`."""
    cli_exclude: ClassVar[frozenset[str]] = frozenset()
    """Fields set only from a config file (no command-line type fits them)."""

    out: Path = Field(
        description="Output directory of the stage: checkpoint, metrics, report, resolved config."
    )
    seed: int = Field(0, description="Seeds data order, LoRA init and sampling.")
    max_steps: int | None = Field(
        None,
        ge=1,
        description="Stop after this many optimiser steps (smoke runs); default: the full schedule.",
    )
    progress: bool = Field(True, description="Show a progress bar.")
    report_to: ReportToOption = Field("none", description=REPORT_TO_HELP)

    @classmethod
    def from_file(cls, path: Path, **overrides: Any) -> Self:
        """The config in `path` (YAML/JSON), with `overrides` (e.g. command-line values) on top.
        Unknown keys are refused by name (`ConfigError`)."""
        data = read_config_file(path)
        unknown = sorted(set(data) - set(cls.model_fields))
        if unknown:
            raise ConfigError(
                f"config {path}: unknown key{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(repr(k) for k in unknown)} for the {cls.stage} stage; "
                f"known keys: {', '.join(cls.model_fields)}"
            )
        return cls.from_values({**data, **overrides}, source=str(path))

    @classmethod
    def from_values(cls, values: dict[str, Any], *, source: str = "values") -> Self:
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise ConfigError(f"{cls.stage} config ({source}): {config_errors(exc)}") from None

    def write_resolved(self, directory: Path | None = None) -> Path:
        """Write every field, defaults included, to `config.resolved.json` (in `out` by default)."""
        directory = directory or self.out
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / RESOLVED_CONFIG
        body = {"stage": self.stage, **self.model_dump(mode="json")}
        path.write_bytes(orjson.dumps(body, option=orjson.OPT_INDENT_2))
        return path


class StageResult(BaseModel):
    """What a stage wrote; the next stage's `model` is `checkpoint` (or `merged` when one was made)."""

    model_config = ConfigDict(extra="forbid")

    stage: str
    out: Path
    checkpoint: Path
    """The LoRA adapter directory (loads as `hf:` agent: base + adapter)."""
    merged: Path | None = None
    """The merged full model, when asked for."""
    metrics: Path
    report: Path
    config: Path
    steps: int = 0
    train_loss: float | None = None
    eval_loss: float | None = None
    tokens: int = 0
    """Trained-on (assistant) tokens seen."""
    seconds: float = 0.0
    details: dict[str, Any] = Field(default_factory=dict)
    """Stage-specific numbers (dropped rows, sweep results …)."""

    @property
    def model_path(self) -> Path:
        """The checkpoint a later stage or `shoparena eval --agent hf:` should load."""
        return self.merged or self.checkpoint
