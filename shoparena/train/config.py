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

import contextlib
import functools
import os
import shutil
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shoparena.records.options import ConfigError, config_errors, read_config_file
from shoparena.train.reporting import REPORT_TO_HELP, ReportToOption

RESOLVED_CONFIG = "config.resolved.json"
FAILED_FILE = "failed.json"
"""Left in a stage's output directory by a run that failed after writing its own outputs: why it failed."""


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


# -- a failed stage leaves nothing half-made ------------------------------------------------------------


def _missing_dirs(path: Path) -> list[Path]:
    """`path` and each of its ancestors that does not exist yet, nearest first."""
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextmanager
def stage_outputs(stage: str, out: Path) -> Iterator[None]:
    """One run of a stage writing into `out`. If it raises, what it made does not pass for a result:
    when `out` was new (or empty) and the run wrote no more than its resolved config (it failed on its
    inputs: a model that does not load, rows that cannot be read), everything it created is removed
    again — `out` and the parents it made included; otherwise (it got further: metrics, rollouts,
    dropped rows worth reading; or `out` held an earlier run's files) they stay and `failed.json` says
    the run failed and why. A later run removes a stale `failed.json`. Only the main process of a
    distributed run touches the directory; Ctrl-C keeps the outputs as they are."""
    created = _missing_dirs(out)
    before = set(os.listdir(out)) if out.is_dir() else set()
    from shoparena.train.metrics import is_main_process

    main = is_main_process()
    if main:
        with contextlib.suppress(OSError):
            (out / FAILED_FILE).unlink(missing_ok=True)
        before.discard(FAILED_FILE)
    try:
        yield
    except Exception as exc:
        if main and out.is_dir():
            new = set(os.listdir(out)) - before
            if not before and new <= {RESOLVED_CONFIG}:
                for name in new:
                    _remove(out / name)
                for path in created:  # `out` first, then the parents made for it, while empty
                    with contextlib.suppress(OSError):
                        path.rmdir()
            else:
                reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                record = {
                    "stage": stage,
                    "failed_at": datetime.now(UTC).isoformat(timespec="seconds"),
                    "error": f"{type(exc).__name__}: {reason}",
                    "traceback": traceback.format_exc(limit=8),
                }
                with contextlib.suppress(OSError):
                    (out / FAILED_FILE).write_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2))
        raise


Run = TypeVar("Run", bound=Callable[..., Any])


def cleans_up(run: Run) -> Run:
    """Wrap a stage's `run_<stage>(config, ...)` in `stage_outputs(config.stage, config.out)`."""

    @functools.wraps(run)
    def wrapper(config: StageConfig, *args: Any, **kwargs: Any) -> Any:
        with stage_outputs(config.stage, Path(config.out)):
            return run(config, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
