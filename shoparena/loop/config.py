"""What one closed loop is made of (`shoparena loop --config FILE`). Every field has a default: together
they are the demo — a small season, the tiny model, every post-training stage for a couple of steps —
so `shoparena loop --out DIR` with no file runs the whole loop on a 2-core machine in a few minutes.

A config file (YAML or JSON) names only what it changes; unknown keys are refused by name. Paths in the
file are relative to the file. Example (a real checkpoint on a GPU, served by vLLM):

```yaml
season: {miners: 12, validators: 3, days: 5, race_problems: 3}
train:
  pipeline: ../paper/pipeline.yaml
  values: {model: /models/Qwen3-4B}
serve: {backend: vllm}
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shoparena.corpus.config import CorpusConfig
from shoparena.inference.serve_settings import ServeSettings
from shoparena.records.options import ConfigError, config_errors, fields_of, read_config_file
from shoparena.season.setup import SeasonSettings

CONFIGS_DIR = Path(__file__).resolve().parents[2] / "configs"
TINY_PIPELINE = CONFIGS_DIR / "tiny" / "pipeline.yaml"


def demo_season() -> SeasonSettings:
    """Eight roster miners (a model-driven one, four code-driven ones, a crashing one that resubmits a
    fix, two malicious ones), two validators (one dishonest), three days. The qualifying bar is 0 so that
    the tiny distilled model — which a few CPU steps cannot teach to shop — still races and is placed;
    a real run raises it."""
    return SeasonSettings(
        miners=8,
        validators=2,
        days=3,
        seed=0,
        products=3000,
        race_problems=3,
        qualifying_problems=3,
        qualify_threshold=0.0,
    )


CorpusBuild = fields_of(
    CorpusConfig,
    "eval_size",
    "min_quality",
    "require_success",
    "per_problem",
    "max_length",
    name="CorpusBuild",
    changes={"eval_size": {"default": 4}},
)
"""The `corpus build` options the loop's config may set, with the loop's own defaults (four held-out
rows for Table 1); the loop supplies the rest (inputs, out, catalogue, problems, never-touch, seed)."""


class CorpusPart(CorpusBuild):
    """`corpus build` of the season's firehose (the loop adds the leak guard against the final race)."""

    rewrite: str | None = "reference"
    """Rewrite the firehose's axis-B traces into agentic rows before the build (`corpus rewrite`):
    `reference` (offline), `openai:MODEL`, or None to keep them aside as axis-B only."""

    def build_options(self) -> dict[str, Any]:
        """The `CorpusConfig` fields this part sets."""
        return self.model_dump(include=set(CorpusBuild.model_fields))


class ProofRecipe(BaseModel):
    """The learning proof's recipe (`shoparena train proof`, docs/training.md) as the loop's train stage:
    training and held-out problems generated on the season's catalogue (leak-guarded against the
    season's problems, so against the final race's pool), the concise teacher playing the training
    problems with the arena's tool profile, a Qwen3 made from scratch with a tokenizer trained on the
    teacher's rows, every weight trained for the budget, base and checkpoint evaluated held-out.
    Sizes are the preset's (`train.proof`'s PRESETS) unless set here."""

    model_config = ConfigDict(extra="forbid")

    preset: Literal["tiny", "cpu", "gpu"] = "cpu"
    minutes: float | None = Field(None, gt=0, description="Training budget in minutes [preset's].")
    max_epochs: float | None = Field(None, gt=0, description="Training budget in epochs [preset's].")
    """Whichever of `minutes` and `max_epochs` comes first ends training, and the learning-rate schedule
    runs over it: an epoch budget learns the same on a slow machine as on a fast one, only later."""
    train_problems: int | None = Field(None, ge=1, description="Problems the teacher plays [preset's].")
    heldout_product: int | None = Field(None, ge=1)
    heldout_other: int | None = Field(None, ge=0)
    base_problems: int | None = Field(None, ge=1)
    workers: int = Field(1, ge=1, description="Parallel episodes of the teacher and the evaluations.")
    device: str = "cpu"
    threads: int | None = Field(None, ge=1, description="torch threads while training [torch's default].")

    def sizes(self):
        """The preset with this recipe's overrides."""
        from shoparena.train.proof import PRESETS

        keys = (
            "minutes",
            "max_epochs",
            "train_problems",
            "heldout_product",
            "heldout_other",
            "base_problems",
        )
        return PRESETS[self.preset].model_copy(
            update={key: getattr(self, key) for key in keys if getattr(self, key) is not None}
        )


class TrainPart(BaseModel):
    """The post-training stages: a `train pipeline` config file (its stages, evaluation, model), with
    `values` on top (the loop supplies the corpus, the catalogue and the problems); or, with
    `recipe: proof`, the learning proof's recipe (`proof`), which trains on the concise teacher's rows
    instead of the season's corpus."""

    model_config = ConfigDict(extra="forbid")

    recipe: Literal["pipeline", "proof"] = "pipeline"
    pipeline: Path = TINY_PIPELINE
    values: dict[str, Any] = Field(default_factory=dict)
    """Pipeline fields on top of the file (e.g. `{max_steps: 1, model: /models/Qwen3-4B}`)."""
    proof: ProofRecipe = Field(default_factory=ProofRecipe)
    """The recipe's sizes when `recipe` is `proof`."""


ServePart = fields_of(
    ServeSettings,
    "backend",
    "max_new_tokens",
    "device",
    "startup_timeout_s",
    name="ServePart",
    changes={
        "max_new_tokens": {
            "default": 64,
            "description": "Cap on tokens per answer (the tiny model's answers are noise: keep turns short).",
        }
    },
)
"""How the distilled checkpoint is served to the arena's inference proxy in the final race: `model
serve`'s settings with the loop's own cap on answers."""


class LoopConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    season: SeasonSettings = Field(default_factory=demo_season)
    corpus: CorpusPart = Field(default_factory=CorpusPart)
    train: TrainPart = Field(default_factory=TrainPart)
    season_agents: bool = True
    """Evaluate the season's racing miner files on the held-out split too (Table 1's season rows)."""
    serve: ServePart = Field(default_factory=ServePart)
    race_untrained: bool = False
    """Also serve the untrained base model (04-train/00-base) and race it in the final race, with the
    distilled agent's miner file: the random baseline the distilled agent is placed against."""
    final_race_whole_pool: bool = False
    """Race every fresh held-out problem of the final race's pool instead of the season's
    `race_problems`: the final race is the comparison, and more problems narrow it."""

    @classmethod
    def from_file(cls, path: Path | None) -> LoopConfig:
        """The config in `path` (None: the defaults). Relative paths are relative to the file."""
        if path is None:
            return cls()
        data = read_config_file(Path(path))
        train = data.get("train")
        if isinstance(train, dict) and train.get("pipeline") is not None:
            pipeline = Path(train["pipeline"])
            if not pipeline.is_absolute():
                train["pipeline"] = str((Path(path).resolve().parent / pipeline).resolve())
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"loop config {path}: {config_errors(exc)}") from None
