"""A command's options built from pydantic models: each field is one option, its description the
option's help, its default the option's default, so an option is written once (in the model).

The flag is `--field-name` of the field's own type unless the field carries a `CliFlag` saying
otherwise. The model, not click, checks the values: bounds, finiteness, cross-field rules — the
command turns its `ValidationError` into one line that names the flags.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import typer
from pydantic import BaseModel, SecretStr, ValidationError
from pydantic.fields import FieldInfo

from shoparena.records.options import CliFlag

PLAIN_TYPES = (str, int, float, bool, Path)


def _flag(info: FieldInfo) -> CliFlag | None:
    return next((m for m in info.metadata if isinstance(m, CliFlag)), None)


def flag_name(model: type[BaseModel], name: str) -> str:
    """The command-line flag of `model`'s field `name`."""
    flag = _flag(model.model_fields[name])
    return flag.flag if flag is not None and flag.flag else "--" + name.replace("_", "-")


def _cli_type(name: str, annotation: Any) -> Any:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = get_args(annotation)
        members = [a for a in args if a is not type(None)]
        inner = _cli_type(name, members[0])
        return inner | None if type(None) in args else inner
    if annotation is SecretStr:
        return str
    if annotation in PLAIN_TYPES or origin is Literal:
        return annotation
    if origin is list and get_args(annotation) in ((str,), (Path,)):
        return annotation
    raise TypeError(f"field {name}: no command-line type for {annotation!r}; give it a CliFlag(type=...)")


def _parameter(model: type[BaseModel], name: str, info: FieldInfo) -> inspect.Parameter:
    flag = _flag(info) or CliFlag()
    kind = flag.type if flag.type is not None else _cli_type(name, info.annotation)
    default: Any = inspect.Parameter.empty
    if not info.is_required():
        if info.default_factory is not None or info.default is None:
            kind, default = kind | None, None  # unset on the command line: the model's default applies
        else:
            default = info.default
    shown = {"metavar": flag.metavar, "envvar": flag.envvar, "min": flag.min, "max": flag.max}
    extra = {key: value for key, value in shown.items() if value is not None}
    if not flag.show_default:
        extra["show_default"] = False
    if flag.argument:
        declaration = typer.Argument(help=info.description, **extra)
    else:
        names = (flag_name(model, name), flag.short) if flag.short else (flag_name(model, name),)
        declaration = typer.Option(*names, help=info.description, **extra)
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[kind, declaration]
    )


def _parameters(source: type[BaseModel] | Callable[..., Any]) -> list[inspect.Parameter]:
    if isinstance(source, type) and issubclass(source, BaseModel):
        excluded = getattr(source, "cli_exclude", ())
        return [_parameter(source, f, info) for f, info in source.model_fields.items() if f not in excluded]
    hints = get_type_hints(source, include_extras=True)
    return [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints[p.name])
        for p in inspect.signature(source).parameters.values()
    ]


def command_from_models(
    app: typer.Typer,
    name: str,
    models: Iterable[type[BaseModel] | Callable[..., Any]],
    body: Callable[..., None],
    doc: str,
    order: Sequence[str] | None = None,
) -> None:
    """Register `name` on `app` with one option per field of `models` (but a model's `cli_exclude`), in
    order or in the given `order` of field names; `body(**values)` gets every value (None where an
    optional option was not given). A function among `models` brings the Typer options of its
    signature (options several commands share, declared once as `Annotated` aliases)."""
    parameters = [parameter for source in models for parameter in _parameters(source)]
    if order is not None:
        by_name = {p.name: p for p in parameters}
        if sorted(by_name) != sorted(order):
            raise TypeError(f"{name}: the order names {sorted(order)}, the models {sorted(by_name)}")
        parameters = [by_name[field] for field in order]

    def command(**values: Any) -> None:
        body(**values)

    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters}
    command.__doc__ = doc
    command.__name__ = name
    app.command(name)(command)


def model_values(model: type[BaseModel], values: dict[str, Any]) -> dict[str, Any]:
    """The given values of `model`'s fields (None = not given, so the model's default applies)."""
    return {name: values[name] for name in model.model_fields if values.get(name) is not None}


def validation_message(model: type[BaseModel], exc: ValidationError) -> str:
    """One line naming each bad flag, what is wrong with it, and the number given (numbers only: a
    string could be a key)."""
    parts = []
    for error in exc.errors():
        message = error["msg"].removeprefix("Value error, ")
        loc = error.get("loc") or ()
        if loc and isinstance(loc[0], str) and loc[0] in model.model_fields:
            given = error.get("input")
            shown = (
                f" (got {given!r})" if isinstance(given, int | float) and not isinstance(given, bool) else ""
            )
            parts.append(f"{flag_name(model, loc[0])}: {message}{shown}")
        else:
            parts.append(message)
    return "; ".join(parts)
