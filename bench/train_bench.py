"""SFT throughput on the tiny model, on this machine's CPU (issue 14, "Measured").

A corpus is made the real way (reference-agent eval runs on a generated catalogue, judged offline,
through `build_corpus`), the tiny Qwen3 from `make_tiny_model` is fine-tuned by `run_sft` (LoRA,
pre-tokenised ids + assistant mask into TRL's SFTTrainer) for `--steps` optimiser steps, with and
without gradient checkpointing. Reported: tokens/s (all tokens of the rows, and the assistant tokens
trained on), seconds a step, peak RSS; and the renderer alone (rows/s of `render_with_mask`, and of the
independent mask assertion the GRPO stage runs before every update).

    .venv/bin/python bench/train_bench.py --steps 8
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shoparena.index.catalog_dir import build_synthetic, open_catalog
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from shoparena.train.chat_render import assert_mask_is_assistant_only, render_with_mask
from shoparena.train.corpus_data import read_corpus
from shoparena.train.metrics import read_metrics
from shoparena.train.sft import SFTStageConfig, run_sft
from shoparena.train.tiny_model import TinyModelConfig, make_tiny_model
from tests.train.reference_corpus import reference_corpus

OUT = Path(__file__).parent / "out" / "train_bench.json"


def make_corpus(root: Path, problems: int) -> Path:
    catalog = root / "cat"
    build_synthetic(catalog, 3000, seed=7, workers=1)
    backend = open_catalog(catalog)
    path = root / "problems.jsonl"
    write_problems(path, ProblemGenerator(backend, seed=11).generate(problems, ["product"], variants=1))
    _, corpus = reference_corpus(
        root, catalog, path, run_name="run", profile="upstream4", min_quality=0.1, per_problem=1, eval_size=2
    )
    return corpus


def bench_render(model: Path, corpus: Path) -> dict:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    rows = read_corpus(corpus).train
    started = time.perf_counter()
    rendered = [render_with_mask(tokenizer, r["messages"], r["tools"]) for r in rows]
    render_s = time.perf_counter() - started
    started = time.perf_counter()
    for row, conversation in zip(rows, rendered, strict=True):
        assert_mask_is_assistant_only(tokenizer, conversation, row["messages"], row["tools"])
    check_s = time.perf_counter() - started
    tokens = sum(len(r.input_ids) for r in rendered)
    return {
        "rows": len(rows),
        "tokens": tokens,
        "render_rows_per_s": round(len(rows) / render_s, 2),
        "render_tokens_per_s": round(tokens / render_s, 1),
        "mask_assert_rows_per_s": round(len(rows) / check_s, 2),
    }


def bench_sft(model: Path, corpus: Path, out: Path, steps: int, max_length: int, checkpointing: bool) -> dict:
    config = SFTStageConfig(
        model=model,
        corpus=corpus,
        out=out,
        max_steps=steps,
        max_length=max_length,
        gradient_checkpointing=checkpointing,
        learning_rate=1e-3,
        progress=False,
        lora_r=8,
        lora_alpha=16,
    )
    started = time.perf_counter()
    result = run_sft(config)
    wall = time.perf_counter() - started
    metrics = read_metrics(result.metrics)
    steps_logged = [m for m in metrics if "loss" in m]
    last = steps_logged[-1]
    trained = last["tokens_seen"]
    return {
        "gradient_checkpointing": checkpointing,
        "steps": result.steps,
        "tokens_seen": trained,
        "tokens_per_s": last["tokens_per_s"],
        "s_per_step": round(last["elapsed_s"] / result.steps, 3),
        "stage_wall_s": round(wall, 2),
        "train_rows_kept": result.details["train_rows"],
        "dropped": result.details["dropped"],
        "final_loss": last["loss"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--problems", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=6000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="train-bench-") as tmp:
        root = Path(tmp)
        corpus = make_corpus(root, args.problems)
        tiny = make_tiny_model(TinyModelConfig(out=root / "tiny"))
        results = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {platform.python_version()}",
            "model_parameters": tiny.parameters,
            "render": bench_render(tiny.path, corpus),
            "sft": [
                bench_sft(tiny.path, corpus, root / f"sft-{gc}", args.steps, args.max_length, gc)
                for gc in (False, True)
            ],
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
