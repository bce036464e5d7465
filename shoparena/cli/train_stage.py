"""How a training stage becomes a `shoparena train <stage>` command: one option per field of the stage's
config class (the field's description is the help), plus `--config FILE`; the flags given override
the file. Every train CLI module registers its stages with `stage_command`, so it lives apart from the
`train` group that registers those modules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic_core import PydanticUndefined

from shoparena.cli.common import fail, say
from shoparena.cli.model_options import command_from_models
from shoparena.records.options import CliFlag


class ConfigFileOption(BaseModel):
    model_config = ConfigDict(extra="forbid")

    config: Path | None = Field(
        None,
        description="YAML/JSON file of this stage's fields (e.g. configs/paper/sft.yaml); flags override it.",
    )


def optional_fields(config_cls: type[BaseModel]) -> type[BaseModel]:
    """`config_cls`'s command-line fields, all optional (a field may come from the config file instead),
    with the same descriptions and flag metadata; the help still shows each field's default, and marks
    the fields the stage needs from the flags or the file."""
    excluded = getattr(config_cls, "cli_exclude", frozenset())
    fields: dict[str, Any] = {}
    for name, info in config_cls.model_fields.items():
        if name in excluded:
            continue
        metadata = [m for m in info.metadata if not isinstance(m, CliFlag)]
        flag = next((m for m in info.metadata if isinstance(m, CliFlag)), None) or CliFlag()
        if info.annotation is bool and flag.flag is None:
            dashed = name.replace("_", "-")  # a switch both ways, so "not given" leaves the file's value
            flag = replace(flag, flag=f"--{dashed}/--no-{dashed}")
        metadata.append(flag)
        description = info.description or ""
        if info.is_required():
            description = f"{description} \\[required: here or in --config]".strip()
        elif (shown := default_text(flag, info.default)) is not None and flag.show_default:
            description = f"{description} \\[default: {shown}]".strip()
        annotation = Annotated[info.annotation | None, *metadata]
        fields[name] = (annotation, Field(None, description=description))
    return create_model(f"{config_cls.__name__}Options", __config__=ConfigDict(extra="forbid"), **fields)


def default_text(flag: CliFlag, default: Any) -> str | None:
    """How the help shows a field's default (None: it has none worth showing)."""
    if default is None or default is PydanticUndefined:
        return None
    if isinstance(default, bool):
        on, _, off = (flag.flag or "").partition("/")
        return (on if default else off) or str(default)
    if isinstance(default, list | tuple):
        return ", ".join(str(item) for item in default) if default else None
    return str(default)


def build_config(config_cls: Any, values: dict[str, Any]) -> Any:
    """The stage config from `--config FILE` (if given) with the given flags on top; exits on errors."""
    from shoparena.records.options import ConfigError

    given = {k: v for k, v in values.items() if k in config_cls.model_fields and v is not None}
    try:
        if values.get("config") is not None:
            return config_cls.from_file(values["config"], **given)
        return config_cls.from_values(given, source="command line")
    except ConfigError as exc:
        raise fail(str(exc)) from None


def stage_command(app: typer.Typer, name: str, config_cls: Any, run: Callable[[Any], Any], doc: str) -> None:
    """Register `shoparena train <name>`: options from `config_cls`'s fields + `--config`; runs
    `run(config)` and prints where the outputs are. `run` raises ValueError for bad input."""

    def body(**values: Any) -> None:
        from shoparena.train.chat_render import MaskError
        from shoparena.train.config import StageResult
        from shoparena.train.metrics import is_main_process
        from shoparena.train.model_card import write_model_card
        from shoparena.train.preflight import InputError, check_inputs

        config = build_config(config_cls, values)
        try:
            check_inputs(config)  # every input, before a model is loaded or a Hub download tried
        except InputError as exc:
            raise fail(str(exc)) from None
        try:
            result = run(config)
        except ValueError as exc:
            raise fail(str(exc)) from exc
        except MaskError as exc:  # the loss mask failed its proof: nothing was trained on it
            raise fail(f"{name}: the assistant-only loss mask failed its check: {exc}") from exc
        except KeyboardInterrupt:
            raise fail(f"{name}: interrupted; outputs so far are in {config.out}", 130) from None
        if hasattr(config, "model") and isinstance(result, StageResult) and is_main_process():
            write_model_card(config, result)  # README.md in the checkpoint: what push_to_hub would publish
        say(summary(result))

    command_from_models(app, name, (optional_fields(config_cls), ConfigFileOption), body, doc)


def summary(result: Any) -> str:
    lines = [f"{result.stage}: {result.out}"]
    for label, value in (
        ("checkpoint", result.checkpoint),
        ("merged", result.merged),
        ("metrics", result.metrics),
        ("report", result.report),
        ("steps", result.steps),
        ("train loss", result.train_loss),
        ("eval loss", result.eval_loss),
    ):
        if value is not None:
            lines.append(f"  {label}: {value:.4f}" if isinstance(value, float) else f"  {label}: {value}")
    return "\n".join(lines)
