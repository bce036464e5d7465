"""The corpus directory's dataset card, `README.md`: what makes the directory a Hugging Face dataset.

`datasets.load_dataset(DIR)` reads the card's YAML header (`configs:`), so the splits load under the
names the corpus gives them (`train`, `eval`) from the TRL-format JSONL (without the card, `datasets`
guesses from file names: `eval.jsonl` would become `test`, and `axis_b.jsonl`/`rejects.jsonl` would be
read into the data). The Parquet copies are named in the body, not as a second config (`datasets`
reads every config of a local directory with one format). The body states what `push_to_hub` would publish along with the rows: the filter the rows passed, the
counts per reject reason, the leak guard between train and eval, and the manifest's hashes. Written from
the build's result (no timings), before the manifest, which lists it among its report files.
"""

from __future__ import annotations

from pathlib import Path

from shoparena.corpus.models import ALL_REASONS, CorpusResult
from shoparena.corpus.report import REASON_TEXT

CARD_FILE = "README.md"
SPLITS = ("train", "eval")


def _size_category(rows: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if rows < limit:
            return name
    return "100K<n<1M" if rows < 1_000_000 else "n>1M"


def _yaml_header(files: dict[str, dict], rows: int) -> list[str]:
    lines = ["---", "pretty_name: shoparena agentic-commerce SFT corpus", "language:", "- en"]
    lines += ["task_categories:", "- text-generation", "tags:", "- shoparena", "- agents", "- tool-calling"]
    lines += ["- sft", "- trl", "size_categories:", f"- {_size_category(rows)}", "configs:"]
    lines += ["- config_name: default", "  data_files:"]
    for split in present_splits(files):
        lines += [f"  - split: {split}", f"    path: {split}.jsonl"]
    return [*lines, "---"]


def present_splits(files: dict[str, dict]) -> list[str]:
    """The splits with rows (an empty split file is left out of the card: `datasets` refuses it)."""
    return [split for split in SPLITS if files.get(f"{split}.jsonl", {}).get("rows")]


def dataset_card(result: CorpusResult) -> str:
    """The card's text (see the module doc)."""
    counts, reasons, manifest = result.counts, result.reasons, result.manifest
    config, files = manifest["config"], manifest["files"]
    never_touch = reasons.get("never_touch", 0)
    lines = _yaml_header(files, counts["train"] + counts["eval"])
    lines += [
        "",
        "# shoparena agentic-commerce SFT corpus",
        "",
        "Multi-turn shopping-agent trajectories (search, inspect, recommend) built by `shoparena corpus "
        "build`, in TRL's conversational tool-calling format: a `messages` column (OpenAI tool-call "
        "schema, thinking in `reasoning_content`), a `tools` column (the OpenAI function schemas the "
        "episode was played with) and a `metadata` column (problem, bucket, leak cluster, judge quality, "
        "system prompt …).",
        "",
        "```python",
        "from datasets import load_dataset",
        f'corpus = load_dataset("path/or/hub-id")  # splits: {", ".join(present_splits(files))}',
        "```",
        "",
        "The same rows are in `train.parquet` / `eval.parquet` when the build wrote them, with tool-call "
        "arguments, `tools` and `metadata` as JSON text (one Arrow type per column): "
        '`load_dataset("parquet", data_files={"train": "train.parquet", "eval": "eval.parquet"})`.',
        "",
        "## Splits",
        "",
        "| split | rows |",
        "|---|---:|",
        f"| train | {counts['train']:,} |",
        f"| eval | {counts['eval']:,} |",
        "",
        "## Filter",
        "",
        f"Of **{counts['inputs']:,}** input rows, {counts['train'] + counts['eval']:,} were kept. A row is kept "
        f"when it is a well-formed episode (every tool call answered), ends in exactly one grounded "
        f"`recommend_product` naming products its searches returned"
        + (" that resolve in the catalogue" if config.get("catalog") else "")
        + f", has judge quality ≥ "
        f"{config.get('min_quality')} (unjudged rows are rejected)"
        + (", succeeded under strict scoring" if config.get("require_success") else "")
        + f", fits in {config.get('max_length'):,} tokens under `{config.get('tokenizer')}`, and ranks in "
        f"the best {config.get('per_problem')} of its problem (near-duplicates ranked out). Axis-B rows "
        f"(set aside, {counts['axis_b']:,}) are in `axis_b.jsonl`, rejected rows with their reason in "
        "`rejects.jsonl`; neither is part of the splits.",
        "",
        "## Rows rejected, per reason",
        "",
        "| reason | rows | meaning |",
        "|---|---:|---|",
    ]
    lines += [f"| `{r}` | {reasons.get(r, 0):,} | {REASON_TEXT[r]} |" for r in ALL_REASONS]
    lines += [
        "",
        "## Leak guard",
        "",
        f"The {counts['problems']:,} problems are grouped into {counts['clusters']:,} leak clusters (the same "
        "reward fingerprint or leak cluster id, or near-duplicate query text by MinHash/LSH); a cluster is "
        "wholly in train or wholly in eval, and `train ∩ eval` is verified empty by problem id and by "
        "cluster before anything is written. A cluster that touches a never-touch suite (the arena's held-"
        f"back problems) is in neither split: {never_touch:,} rows were dropped for it. The eval problems "
        f"hash to `{manifest['eval_problems_sha256']}` (`manifest.json`); `shoparena train` reads the "
        "manifest to keep its sampling stages away from eval and never-touch problems.",
        "",
        "## Files",
        "",
        "| file | rows | sha256 |",
        "|---|---:|---|",
    ]
    lines += [f"| {name} | {info['rows']:,} | `{info['sha256']}` |" for name, info in files.items()]
    lines += ["", "`report.md` has the funnel and per-bucket counts; `manifest.json` the full build config."]
    return "\n".join(lines) + "\n"


def write_dataset_card(result: CorpusResult, out: Path | None = None) -> Path:
    path = (out or result.out) / CARD_FILE
    path.write_text(dataset_card(result), encoding="utf-8")
    return path
