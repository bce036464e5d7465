"""A stage's inputs checked before any model is loaded (issue 25).

Loading a model takes seconds to minutes, and an unreachable Hub costs about 50 s of retries before
transformers gives up. `check_inputs` looks at a stage config first: every input path it names
(every `Path` field but `out`) must exist, and `--model` must be a checkpoint or adapter directory, a Hub
model id already in the local cache, or a Hub id the Hub can be asked for (not offline). A directory
that is not a model is named as such, not as a missing tokenizer backend.
"""

from __future__ import annotations

import os
import socket
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin
from urllib.parse import urlparse

from pydantic import BaseModel

from shoparena.agents.hf_agent import cached_hub_id, model_dir_problem
from shoparena.records.options import CliFlag

OUTPUT_FIELDS = frozenset({"out"})
MODEL_FIELD = "model"
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


class InputError(ValueError):
    """A stage input that cannot be used; the message names the flag and what is wrong."""


def _flag(config: BaseModel, name: str) -> str:
    flag = next((m for m in type(config).model_fields[name].metadata if isinstance(m, CliFlag)), None)
    return (flag.flag if flag is not None and flag.flag else f"--{name.replace('_', '-')}").split("/")[0]


def _is_path_field(annotation: Any) -> bool:
    if annotation is Path:
        return True
    if get_origin(annotation) in (Union, types.UnionType, list):
        return any(_is_path_field(arg) for arg in get_args(annotation) if arg is not type(None))
    return False


def _paths(value: Any) -> list[Path]:
    if value is None:
        return []
    return [Path(item) for item in value] if isinstance(value, list | tuple) else [Path(value)]


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face Hub can be asked at all: not switched offline, and its host answers
    (assumed yes behind a proxy, which a direct connection cannot test)."""
    if any(
        os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on") for name in OFFLINE_VARIABLES
    ):
        return False
    if any(os.environ.get(name) for name in PROXY_VARIABLES):
        return True
    endpoint = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    try:
        socket.create_connection((endpoint.hostname or "huggingface.co", port), timeout=timeout).close()
    except OSError:
        return False
    return True


def check_model(flag: str, model: Path | str) -> None:
    """Raise `InputError` unless `model` can be loaded without a failing download."""
    path = Path(model).expanduser()
    if path.exists():
        problem = model_dir_problem(path)
        if problem:
            raise InputError(f"{flag} {model}: {problem} (give a checkpoint or LoRA adapter directory)")
        return
    if cached_hub_id(str(model)):
        return
    if not hub_reachable():
        raise InputError(
            f"{flag} {model}: no such directory, and the Hugging Face Hub cannot be reached (offline), so it "
            f"cannot be downloaded as a Hub model id either; download it where there is a network "
            f"(`huggingface-cli download {model} --local-dir DIR`) and give DIR"
        )


def check_inputs(config: BaseModel) -> None:
    """Raise `InputError` for the first input of `config` that cannot be used (see the module)."""
    fields = type(config).model_fields
    for name, info in fields.items():
        if name in OUTPUT_FIELDS or name == MODEL_FIELD or not _is_path_field(info.annotation):
            continue
        for path in _paths(getattr(config, name)):
            if not path.exists():
                raise InputError(f"{_flag(config, name)} {path}: no such file or directory")
    if MODEL_FIELD in fields and _is_path_field(fields[MODEL_FIELD].annotation):
        check_model(_flag(config, MODEL_FIELD), getattr(config, MODEL_FIELD))
