"""What a corpus build is asked to do: the one set of options `build_corpus`, its stages and the CLI read.

The model checks the values (the CLI turns its `ValidationError` into a line naming the flags), so a
bad value is refused before any work instead of quietly producing an empty or odd corpus.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from shoparena.corpus import gates as gate_mod


class CorpusConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    inputs: list[Path]
    out: Path
    catalog: Path | None = None
    min_quality: float = Field(default=gate_mod.DEFAULT_MIN_QUALITY, ge=0.0, le=1.0)
    """Judge qualities are scores in [0, 1]: a threshold above 1 would reject every row, silently."""
    require_success: bool = False
    """Drop rows whose episode is recorded as failed (`outcome_failed`); off by default, as SPEC §8 gates
    on reasoning and format only."""
    max_length: int = Field(default=gate_mod.DEFAULT_MAX_LENGTH, ge=1)
    tokenizer: str | None = None
    per_problem: int = Field(default=2, ge=1)
    eval_size: int | None = Field(default=None, ge=0)
    """Eval rows; None: 10% of the kept rows, at most 1000 (`split.default_eval_size`). 0 asks for no
    eval split; any other target that would leave it empty still holds out one leak cluster."""
    never_touch: list[Path] = Field(default_factory=list)
    problems: list[Path] = Field(default_factory=list)
    """Problem files whose reward-spec fingerprints name the leak clusters of their problems."""
    seed: int = 0
    workers: int = Field(default=1, ge=1)
    parquet: bool = True
    report: bool = True
    force: bool = False
    """Replace the previous corpus in `out`; without it a non-empty `out` is refused."""
