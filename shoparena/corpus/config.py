"""What a corpus build is asked to do: the one set of options `build_corpus`, its stages and the CLI read.

The model checks the values (the CLI turns its `ValidationError` into a line naming the flags), so a
bad value is refused before any work instead of quietly producing an empty or odd corpus.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from shoparena.corpus import gates as gate_mod
from shoparena.records.options import CliFlag


class CorpusConfig(BaseModel):
    """Every field is one `corpus build` option (its description the option's help) and, but for the
    paths the loop supplies, one key of the loop config's `corpus` part."""

    model_config = ConfigDict(extra="forbid")

    inputs: Annotated[list[Path], CliFlag(flag="--input", short="-i", metavar="<path>")] = Field(
        description="Run dir, JSONL or JSON file (repeatable)."
    )
    out: Annotated[Path, CliFlag(short="-o")] = Field(description="Output directory.")
    catalog: Path | None = Field(None, description="Catalogue dir: recommended ids must resolve in it.")
    min_quality: float = Field(
        default=gate_mod.DEFAULT_MIN_QUALITY,
        ge=0.0,
        le=1.0,
        description="Judge quality threshold in [0, 1]; unjudged rows fail.",
    )
    """Judge qualities are scores in [0, 1]: a threshold above 1 would reject every row, silently."""
    require_success: Annotated[bool, CliFlag(flag="--successful")] = Field(
        False, description="Drop rows of failed episodes (outcome_failed)."
    )
    """Off by default, as SPEC §8 gates on reasoning and format only."""
    max_length: int = Field(
        default=gate_mod.DEFAULT_MAX_LENGTH, ge=1, description="Most tokens a row may have."
    )
    tokenizer: str | None = Field(None, description="Tokenizer dir or .json (default: offline MiniLM).")
    per_problem: int = Field(default=2, ge=1, description="Rows kept per problem (≥ 1).")
    eval_size: int | None = Field(
        default=None, ge=0, description="Eval rows (default 10% of kept, ≤ 1000; 0: none)."
    )
    """None: `split.default_eval_size`. 0 asks for no eval split; any other target that would leave it
    empty still holds out one leak cluster."""
    never_touch: Annotated[list[Path], CliFlag(metavar="<path>")] = Field(
        default_factory=list, description="Problem files kept out of every output pile."
    )
    problems: Annotated[list[Path], CliFlag(metavar="<path>")] = Field(
        default_factory=list, description="Problem files whose rewards name leak clusters."
    )
    """Their reward-spec fingerprints name the leak clusters of their problems."""
    seed: int = Field(0, description="Seed of the eval draw.")
    workers: int = Field(default=1, ge=1, description="Processes for normalise + gates.")
    parquet: Annotated[bool, CliFlag(flag="--parquet/--no-parquet")] = Field(
        True, description="Also write train/eval Parquet."
    )
    report: bool = True
    """Write report.md (the command always does)."""
    force: bool = Field(False, description="Replace an earlier corpus in --out.")
    """Without it a non-empty `out` is refused."""
