"""A trained checkpoint's model card, `README.md`, so that `push_to_hub` of the directory publishes a usable
artefact: the Hub's YAML header (library, base model, tags), what trained it — every stage from the
base model to this checkpoint, with its data and numbers — and, when the checkpoint was evaluated on
the corpus' held-out problems (`shoparena train pipeline`), its Table 1 row beside the base model's.

A checkpoint's stages come from the model it was trained from: each checkpoint directory also keeps
`shoparena_training.json` (the stages, machine-readable), and the next stage reads its input model's
file and adds itself. PEFT writes a generic README.md when it saves an adapter; this card replaces it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from shoparena.train.config import StageResult

CARD_FILE = "README.md"
LINEAGE_FILE = "shoparena_training.json"
DATA_FIELDS = ("corpus", "data", "problems", "trajectories", "teacher_trajectories", "teacher", "catalog")
"""Config fields that say what a stage trained on (those a stage has and set)."""


class StageEntry(BaseModel):
    """One stage of a checkpoint's history."""

    model_config = ConfigDict(extra="forbid")

    stage: str
    model: str
    """The model the stage started from."""
    out: str
    data: dict[str, str] = Field(default_factory=dict)
    corpus_manifest_sha256: str | None = None
    steps: int = 0
    train_loss: float | None = None
    eval_loss: float | None = None
    tokens: int = 0
    settings: dict[str, Any] = Field(default_factory=dict)


class Lineage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base_model: str
    stages: list[StageEntry]
    heldout: str | None = None
    """This checkpoint's Table 1 row (Markdown table: the base model's row, then this one's)."""
    heldout_source: str | None = None
    """Which held-out problems `heldout` is on (None: the corpus' eval split, as `train pipeline` has it)."""


def read_lineage(model: Path | str) -> Lineage | None:
    path = Path(model) / LINEAGE_FILE
    if not path.is_file():
        return None
    try:
        return Lineage.model_validate(orjson.loads(path.read_bytes()))
    except ValueError:
        return None


def _manifest_sha(config: Any) -> str | None:
    for key in ("corpus", "data"):
        directory = getattr(config, key, None)
        if directory is not None and (Path(directory) / "manifest.json").is_file():
            return orjson.loads((Path(directory) / "manifest.json").read_bytes()).get("manifest_sha256")
    return None


def stage_entry(config: Any, result: StageResult) -> StageEntry:
    data = {}
    for key in DATA_FIELDS:
        value = getattr(config, key, None)
        if value:
            data[key] = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    settings = {
        key: getattr(config, key)
        for key in ("learning_rate", "num_train_epochs", "epochs", "lora_r", "mode", "beta", "variant")
        if getattr(config, key, None) is not None
    }
    return StageEntry(
        stage=result.stage,
        model=str(config.model),
        out=str(result.out),
        data=data,
        corpus_manifest_sha256=_manifest_sha(config),
        steps=result.steps,
        train_loss=result.train_loss,
        eval_loss=result.eval_loss,
        tokens=result.tokens,
        settings=settings,
    )


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.4g}" if isinstance(value, float) else str(value).replace("|", "\\|")


def card_text(lineage: Lineage, directory: Path) -> str:
    adapter = (directory / "adapter_config.json").is_file()
    last = lineage.stages[-1]
    header = ["---", f"library_name: {'peft' if adapter else 'transformers'}"]
    header += [f"base_model: {lineage.base_model}", "pipeline_tag: text-generation", "tags:", "- shoparena"]
    header += ["- trl", "- agents", "- tool-calling"] + [
        f"- {s}" for s in dict.fromkeys(e.stage for e in lineage.stages)
    ]
    header += ["- lora"] if adapter else []
    lines = [*header, "---", "", f"# shoparena agent: {' → '.join(e.stage for e in lineage.stages)}", ""]
    lines += [
        f"A shopping agent post-trained with `shoparena train` from `{lineage.base_model}` "
        f"({len(lineage.stages)} stage{'s' * (len(lineage.stages) != 1)}, the last: `{last.stage}`). "
        "It speaks Qwen3's chat format with the harness tools (`find_product`, `view_product_information`, "
        "`recommend_product`, …); its tokenizer and chat template are saved beside the weights.",
        "",
    ]
    if adapter:
        lines += [
            "This directory is a LoRA adapter: its base is named in `adapter_config.json` (an earlier "
            "stage's checkpoint when stages chain). `shoparena eval --agent hf:DIR` rebuilds the weights; "
            "for the Hub, publish the merged model (`--merge`), whose base needs no other directory.",
            "",
        ]
    lines += ["## Stages", "", "| # | stage | from | data | steps | train loss | eval loss | settings |"]
    lines.append("|---|---|---|---|---:|---:|---:|---|")
    for number, entry in enumerate(lineage.stages, start=1):
        data = "; ".join(f"{k}: `{v}`" for k, v in entry.data.items()) or "–"
        if entry.corpus_manifest_sha256:
            data += f" (manifest `{entry.corpus_manifest_sha256[:16]}…`)"
        settings = ", ".join(f"{k}={_cell(v)}" for k, v in entry.settings.items()) or "–"
        lines.append(
            f"| {number} | {entry.stage} | `{entry.model}` | {data} | {entry.steps} | "
            f"{_cell(entry.train_loss)} | {_cell(entry.eval_loss)} | {settings} |"
        )
    lines += ["", "## Held-out evaluation (Table 1)", ""]
    if lineage.heldout:
        source = lineage.heldout_source or (
            "the corpus' held-out (eval-split) problems, which no stage trained or sampled on (the "
            "corpus' leak guard)"
        )
        lines += [f"Strict success on {source}, next to the base model:", "", lineage.heldout.strip()]
    else:
        lines.append(
            "Not evaluated yet: `shoparena train pipeline` evaluates every checkpoint on the corpus' "
            "held-out problems and writes its Table 1 row here; `shoparena eval --agent hf:DIR` does it "
            "by hand."
        )
    lines += ["", f"Each stage's metrics.jsonl, report.md and resolved config are in its `out` directory; "
              f"`{LINEAGE_FILE}` has this card's facts, machine-readable."]  # fmt: skip
    return "\n".join(lines) + "\n"


def write_card(lineage: Lineage, directory: Path) -> Path:
    """`README.md` and the lineage file in `directory` (a checkpoint)."""
    (directory / LINEAGE_FILE).write_bytes(
        orjson.dumps(lineage.model_dump(mode="json"), option=orjson.OPT_INDENT_2)
    )
    path = directory / CARD_FILE
    path.write_text(card_text(lineage, directory), encoding="utf-8")
    return path


def checkpoint_dirs(result: StageResult) -> list[Path]:
    """The model directories a stage wrote (an adapter, a merged or full model; not e.g. a PRM head)."""
    found = [Path(d) for d in (result.checkpoint, result.merged) if d is not None]
    return [d for d in found if (d / "adapter_config.json").is_file() or (d / "config.json").is_file()]


def write_model_card(config: Any, result: StageResult) -> list[Path]:
    """The card (and lineage file) in every checkpoint directory the stage wrote; nothing when the stage
    trained nothing (its checkpoint is its input model)."""
    if Path(result.checkpoint).resolve() == Path(config.model).resolve():
        return []
    earlier = read_lineage(config.model)
    stages = [*(earlier.stages if earlier else []), stage_entry(config, result)]
    base = earlier.base_model if earlier else str(config.model)
    lineage = Lineage(base_model=base, stages=stages)
    return [write_card(lineage, directory) for directory in checkpoint_dirs(result)]


def add_heldout(result: StageResult, table: str) -> list[Path]:
    """Put the checkpoint's Table 1 row (Markdown) into its card — only a checkpoint this stage trained: a
    stage that trained nothing hands its input model on, whose card keeps its own stage's row."""
    written = []
    for directory in checkpoint_dirs(result):
        lineage = read_lineage(directory)
        if lineage is not None and lineage.stages[-1].out == str(result.out):
            written.append(write_card(lineage.model_copy(update={"heldout": table}), directory))
    return written
