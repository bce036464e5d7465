"""The values an option may take wherever it appears, how an option reaches the command line, and the
one reader of config files.

The same choices — the title similarity, the tool profile, the sandbox, the executor — are options of
many stages (eval, the arena, the season, the trainers, the loop); each is spelled here once, so a new
choice is added in one place and every config that offers it takes it. They live in `records`, below
every stage, because the lowest users (`scoring.similarity`, `harness.tool_specs`) sit below all the
configs that offer the choice, and none of this imports anything of ours.

`fields_of` makes a model of some of a config's fields — a command's options, or a part of the loop's
config that overrides a stage's defaults — without declaring them again.

`CliFlag` is the metadata a config field carries when its command-line option is not simply
`--field-name` of the field's own type (`cli.model_options` builds each command's options from the
config models). `read_config_file` is how every `--config FILE` and loop config is read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

SimilarityName = Literal["minilm", "lexical"]
"""Title similarity of the scorer: minilm (the embeddings of SPEC §4, the arena's) or lexical (no model)."""
Profile = Literal["upstream4", "oro7", "full"]
"""The harness's tool profiles (`harness.tool_specs.PROFILES`; a test keeps the two the same)."""
Executor = Literal["process", "ray", "inline"]
EXECUTORS: tuple[str, ...] = get_args(Executor)
SandboxBackend = Literal["bwrap", "container", "none"]
"""Where a miner's code runs: bubblewrap, a container engine, or unconfined."""
ServeBackend = Literal["hf", "vllm"]
"""What serves a checkpoint: transformers in our own server, or `vllm serve`."""


@dataclass(frozen=True)
class CliFlag:
    """How a field appears on the command line when not as `--field-name` of the field's own type.

    `flag`: the option's name(s) (`--successful`, `--parquet/--no-parquet`); `short`: a one-letter
    alias (`-i`); `type`: the command-line type when the field's has none there (a dict parsed from a
    string, say); `metavar`, `envvar`, `show_default`: as click has them; `min`/`max`: a range click
    checks and shows in the help (only where a command always showed it: the model checks the field's
    own bounds either way); `argument`: a positional argument rather than an option."""

    flag: str | None = None
    type: Any = None
    short: str | None = None
    metavar: str | None = None
    envvar: str | None = None
    show_default: bool = True
    min: float | None = None
    max: float | None = None
    argument: bool = False


class ConfigError(ValueError):
    """A config file that cannot be read, or holds unknown or invalid keys (named in the message)."""


def read_config_file(path: Path) -> dict[str, Any]:
    """A YAML (`.yaml`/`.yml`) or JSON config file's top-level mapping."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"config {path}: cannot read it ({exc.strerror or exc})") from exc
    except UnicodeDecodeError:
        raise ConfigError(f"config {path}: not a text file (not UTF-8); give a YAML or JSON file") from None
    try:
        if Path(path).suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as exc:  # yaml and json raise their own error types
        raise ConfigError(
            f"config {path}: not valid {Path(path).suffix.lstrip('.') or 'JSON'}: {exc}"
        ) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {path}: expected a mapping of keys to values, got {type(data).__name__}")
    return data


def config_errors(exc: ValidationError) -> str:
    """One line naming each bad key and what is wrong with it."""
    parts = []
    for error in exc.errors():
        key = ".".join(str(part) for part in error.get("loc", ()))
        message = error["msg"].removeprefix("Value error, ")
        if error.get("type") == "extra_forbidden":
            message = "unknown key"
        parts.append(f"{key}: {message}" if key else message)
    return "; ".join(parts)


def fields_of(
    model: type[BaseModel],
    *names: str | tuple[str, str],
    name: str,
    changes: dict[str, dict[str, Any]] | None = None,
) -> type[BaseModel]:
    """A model (`extra="forbid"`) of `model`'s fields `names`, in that order, each as `model` declares it
    (type, bounds, default, description, `CliFlag`). A name may be `(new_name, field)` to offer `field`
    under another name; `changes[new_name]` may replace its `default`, `description` or `flag` (a
    `CliFlag`): a command's help says it in the command's words, the loop runs with its own defaults."""
    fields: dict[str, Any] = {}
    for entry in names:
        option, source = entry if isinstance(entry, tuple) else (entry, entry)
        info = model.model_fields[source]
        change = dict((changes or {}).get(option, {}))
        flag = change.pop("flag", None)
        unknown = set(change) - {"default", "description"}
        if unknown:
            raise TypeError(f"fields_of({model.__name__}): cannot change {sorted(unknown)} of {option}")
        copy = FieldInfo.merge_field_infos(info, **change)
        if "default" in change:
            copy.default_factory = None
        if flag is not None:
            copy.metadata = [m for m in copy.metadata if not isinstance(m, CliFlag)] + [flag]
        fields[option] = (info.annotation, copy)
    return create_model(name, __config__=ConfigDict(extra="forbid"), **fields)
