"""Continue the learn loop's checkpoint on fresh teacher rows, re-evaluate it on the loop's held-out
problems and race it again (docs/benchmarks.md, "The loop with the learning proof's recipe"): the
proof's lesson (more distinct rows, against memorising) applied to the loop.

    OMP_NUM_THREADS=2 PYTHONPATH=. .venv/bin/python bench/loop_continue.py LOOP_DIR OUT_DIR STEPS

Generates 9,000 more product problems on the season's catalogue (leak-guarded against the loop's
held-out problems and every problem of the season, so against the final race's pool), plays the
concise teacher on them with the arena's tools, trains LOOP_DIR's checkpoint (04-train/01-full-sft)
on the solved ones for STEPS optimiser steps (a budget in steps learns the same on a
busy machine, only later), evaluates it through `shoparena eval --agent hf:` on the same held-out
problems, and races it and the untrained base with the loop's own final race in OUT_DIR (the season
and firehose of LOOP_DIR linked, not copied). Writes OUT_DIR/cont.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from shoparena.loop.config import LoopConfig
from shoparena.loop.final_race import run_final_race
from shoparena.loop.layout import LoopLayout
from shoparena.loop.learn import arena_profile
from shoparena.train import proof as P
from shoparena.train.full_sft import FullSFTSettings, train_full


def say(message: str) -> None:
    print(message, flush=True)


def main(loop_dir: Path, out: Path, steps: int) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    loop = LoopLayout(out=loop_dir)
    config = LoopConfig.model_validate_json((loop_dir / "loop.resolved.json").read_text())
    preset = config.train.proof.sizes()
    profile = arena_profile(loop)
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    heldout = loop.train_dir / "work" / "heldout.jsonl"
    P.shoparena("problems", "generate", "--catalog", str(loop.catalog), "--n", "9000", "--buckets", "product",
                "--seed", "77", "--out", str(work / "more-all.jsonl"), say=say)  # fmt: skip
    fresh, dropped = P.leak_guard(
        P.read_jsonl(work / "more-all.jsonl"), P.read_jsonl(heldout) + P.read_jsonl(loop.problems)
    )
    P.write_jsonl(work / "train.jsonl", fresh)
    rows, teacher = P.play_teacher(loop.catalog, work, profile, config.train.proof.workers, say)
    say(f"{len(rows)} fresh rows ({dropped} leak-guarded out); teacher {teacher}")
    start = loop.train_dir / "01-full-sft" / "model"
    tokenizer = AutoTokenizer.from_pretrained(start)
    model = AutoModelForCausalLM.from_pretrained(start)
    settings = FullSFTSettings(
        learning_rate=1.5e-3, max_steps=steps, batch_tokens=preset.batch_tokens, warmup_steps=10, device="cpu",
        seed=5, max_length=8192,
    )  # fmt: skip
    log = train_full(model, tokenizer, rows, settings, say=say, metrics_path=out / "metrics.jsonl")
    checkpoint = out / "model"
    model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    place = P.EvalPlace(workers=config.train.proof.workers, device="cpu")
    results = P.eval_model(checkpoint, heldout, loop.catalog, out / "eval", preset, place, say, None, profile)
    say(json.dumps(results))
    race_out = LoopLayout(out=out / "race")
    race_out.out.mkdir(parents=True, exist_ok=True)
    for stage in (loop.season_dir, loop.firehose_dir):
        link = race_out.out / stage.name
        if not link.exists():
            link.symlink_to(stage.resolve(), target_is_directory=True)
    race = run_final_race(config, race_out, checkpoint, say, untrained=loop.train_dir / "00-base")
    result = {"rows": len(rows), "leak_guard_dropped": dropped, "teacher": teacher,
              "training": log.model_dump(exclude={"curve"}), "curve": log.curve, "heldout": results,
              "final_race": race}  # fmt: skip
    (out / "cont.json").write_text(json.dumps(result, indent=2, default=str))
    return result


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
