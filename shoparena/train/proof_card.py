"""Model cards for the learning proof's checkpoints (`shoparena train proof`), as `train pipeline` writes
them for its stages: every checkpoint the proof evaluated (`checkpoint/`, `rs/checkpoint/`,
`grpo/merged/`) gets a `README.md` with its stages from the untrained base (`base/`, made from scratch),
their data and numbers, and its Table 1 row on the proof's held-out problems beside the base model's.

The proof trains its SFT and RS stages with its own loop, so it writes their lineage itself, from
proof.json; GRPO runs as `shoparena train grpo`, which writes its card from the RS (or SFT) card it
starts from, and the proof adds the held-out row once it has evaluated it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shoparena.train.model_card import Lineage, StageEntry, read_lineage, write_card

CHECKPOINTS = {"sft": "checkpoint", "rs": "rs/checkpoint", "grpo": "grpo/merged"}
"""Where each evaluated model of proof.json's `heldout` lives, under the proof's directory."""
BUCKETS = ("product", "shop", "voucher")
HELDOUT_SOURCE = (
    "the proof's generated held-out problems (`work/heldout.jsonl`: no gold product, leak cluster or "
    "query shared with a training problem; greedy, tool profile upstream4), product problems the headline"
)


def _cell(result: dict[str, Any] | None) -> str:
    if not result:
        return "–"
    return f"{result['success']}/{result['n']} ({100 * result['rate']:.1f}%)"


def heldout_table(heldout: dict[str, dict], name: str) -> str:
    """Markdown: the base model's row and `name`'s: per-bucket strict success, product's 95% interval."""
    lines = ["| model | product | product 95% CI | shop | voucher |", "|---|---:|---|---:|---:|"]
    for model in ("base", name):
        buckets = heldout.get(model, {})
        product = buckets.get("product")
        ci = f"[{100 * product['ci95'][0]:.1f}%, {100 * product['ci95'][1]:.1f}%]" if product else "–"
        lines.append(f"| {model} | {_cell(product)} | {ci} | {_cell(buckets.get('shop'))} | "
                     f"{_cell(buckets.get('voucher'))} |")  # fmt: skip
    return "\n".join(lines)


def sft_entry(out: Path, proof: dict[str, Any], model: Path, catalog: Path) -> StageEntry:
    """The from-scratch SFT stage, from proof.json (or the learn loop's learn.json, the same facts):
    the concise teacher's rows under `out/work`, trained from `model`."""
    work = out / "work"
    training = proof.get("training", {})
    rows = proof.get("teacher", {}).get("rows")
    return StageEntry(
        stage="sft",
        model=str(model),
        out=str(out),
        data={
            "corpus": str(work / "corpus" / "train.jsonl"),
            "rows": f"{rows}, the concise teacher's strictly successful episodes",
            "problems": str(work / "train.jsonl"),
            "catalog": str(catalog),
        },
        steps=int(training.get("steps", 0)),
        train_loss=training.get("final_loss"),
        eval_loss=training.get("eval_loss"),
        tokens=int(training.get("tokens", 0)),
        settings={
            "mode": "full",
            "learning_rate": proof.get("settings", {}).get("learning_rate"),
            "epochs": training.get("epochs"),
        },
    )


def _entry(name: str, out: Path, proof: dict[str, Any], model: Path) -> StageEntry:
    """The stage that made `name`'s checkpoint, from proof.json."""
    work = out / "work"
    if name == "sft":
        return sft_entry(out, proof, model, work / "catalog")
    facts = proof.get("on_top", {}).get(name, {})
    if name == "rs":
        data = {
            "problems": str(work / "rs-problems.jsonl"),
            "rows": f"{facts.get('kept', 0)} kept rollouts + corpus rows ({facts.get('rows', 0)} in all)",
        }
        settings: dict[str, Any] = {"mode": "full"}
    else:
        problems = work / "rs-problems.jsonl"  # what `proof.grpo` trains on, as it picks it
        problems = problems if problems.is_file() else work / "train.jsonl"
        data, settings = {"problems": str(problems)}, {"variant": "dr-grpo"}
    return StageEntry(
        stage=name,
        model=str(model),
        out=str(out / Path(CHECKPOINTS[name]).parent),
        data=data,
        steps=int(facts.get("steps", 0)),
        train_loss=facts.get("final_loss"),
        settings=settings,
    )


def write_cards(out: Path, proof: dict[str, Any]) -> list[Path]:
    """A model card in every checkpoint proof.json has a held-out row for (see the module doc)."""
    written: list[Path] = []
    previous: Lineage | None = None
    model = out / "base"
    for name in CHECKPOINTS:
        directory = out / CHECKPOINTS[name]
        if name not in proof.get("heldout", {}) or not (directory / "config.json").is_file():
            continue
        own = read_lineage(directory) if name == "grpo" else None  # `train grpo` wrote it
        if own is None or own.stages[-1].stage != name:
            earlier = previous.stages if previous else []
            own = Lineage(base_model=str(out / "base"), stages=[*earlier, _entry(name, out, proof, model)])
        lineage = own.model_copy(
            update={"heldout": heldout_table(proof["heldout"], name), "heldout_source": HELDOUT_SOURCE}
        )
        written.append(write_card(lineage, directory))
        previous, model = lineage, directory
    return written
