"""How a checkpoint is served: the options of `model serve` and of the loop's final race (its `serve`
part), written once. Kept apart from the servers so that reading a loop config loads no web stack."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from shoparena.records.options import CliFlag, ServeBackend

DEFAULT_MAX_NEW_TOKENS = 2048
STARTUP_TIMEOUT_S = 900.0


class ServeSettings(BaseModel):
    """How `model serve` (and the loop's final race) serves a checkpoint; each field but `cli_exclude`
    is an option of `model serve`, its description the option's help."""

    model_config = ConfigDict(extra="forbid")
    cli_exclude: ClassVar[frozenset[str]] = frozenset({"startup_timeout_s"})

    backend: ServeBackend = Field(
        "hf", description="hf: transformers in this process (CPU or GPU); vllm: launch vLLM (GPU)."
    )
    max_new_tokens: Annotated[int, CliFlag(min=1)] = Field(
        DEFAULT_MAX_NEW_TOKENS, ge=1, description="Most tokens one completion may generate."
    )
    device: str = Field("auto", description="auto, cpu, cuda or cuda:N.")
    startup_timeout_s: float = Field(
        STARTUP_TIMEOUT_S,
        gt=0,
        description="vllm: how long the server may take to load the checkpoint and answer /v1/models.",
    )
