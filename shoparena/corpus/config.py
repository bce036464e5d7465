"""What a corpus build is asked to do: the one set of options `build_corpus`, its stages and the CLI read."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from shoparena.corpus import gates as gate_mod


class CorpusConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    inputs: list[Path]
    out: Path
    catalog: Path | None = None
    min_quality: float = gate_mod.DEFAULT_MIN_QUALITY
    max_length: int = gate_mod.DEFAULT_MAX_LENGTH
    tokenizer: str | None = None
    per_problem: int = Field(default=2, ge=1)
    eval_size: int | None = None
    never_touch: list[Path] = Field(default_factory=list)
    problems: list[Path] = Field(default_factory=list)
    """Problem files whose reward-spec fingerprints name the leak clusters of their problems."""
    seed: int = 0
    workers: int = 1
    parquet: bool = True
    report: bool = True
