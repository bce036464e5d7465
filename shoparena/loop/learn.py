"""The loop's train stage with the learning proof's recipe (`train.recipe: proof`, configs/loop/learn.yaml).

The season's firehose is far too small to teach a model from scratch (a few hundred episodes of many
policies), so this stage makes its rows the way `shoparena train proof` does, with the proof's own
functions: training and held-out problems generated on the season's catalogue (the training ones
leak-guarded against the held-out ones and against every problem of the season, so against the final
race's pool), the concise teacher (`reference:agentic style=concise`) playing the training problems
with the arena's tool profile (the tools the final race gives the model), its strictly successful
episodes as rows with the system prompt they are served with, a Qwen3 made from scratch with a
tokenizer trained on those rows, every weight trained for the budget (`full_sft`), and the base and the
checkpoint evaluated on the held-out problems through `shoparena eval --agent hf:` (greedy, strict).

Files, in the shape `train pipeline` writes so the report reads them alike: `00-base/` (the untrained
model), `01-full-sft/` (`model/`, `metrics.jsonl`, `stage_result.json`), `eval/base`, `eval/full-sft`
(eval runs), `work/` (problems, the teacher's run, the rows) and `learn.json` (what was measured:
teacher, rows, model size, training, held-out success per bucket with 95% intervals).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from shoparena.loop.config import LoopConfig
from shoparena.loop.layout import LoopLayout
from shoparena.loop.report_data import LEARN_FILE

STAGE = "01-full-sft"
STAGE_NAME = "full-sft"


def arena_profile(layout: LoopLayout) -> str:
    """The tool profile the season's arena races with (the teacher plays with the same tools)."""
    from shoparena.arena import open_arena

    with open_arena(layout.arena_dir) as arena:
        return arena.config.evaluation.profile


def heldout_file(layout: LoopLayout) -> Path:
    return layout.train_dir / "work" / "heldout.jsonl"


def train_by_proof(config: LoopConfig, layout: LoopLayout, say) -> dict[str, Any]:
    import torch

    from shoparena.train.metrics import METRICS_FILE
    from shoparena.train.pipeline import BASE_DIR, STAGE_RESULT
    from shoparena.train.proof import (
        EvalPlace,
        eval_model,
        init_model,
        machine,
        make_problems,
        play_teacher,
        read_jsonl,
        train_scratch,
    )

    recipe = config.train.proof
    preset = recipe.sizes()
    seed = config.season.seed
    out = layout.train_dir
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    place = EvalPlace(workers=recipe.workers, device=recipe.device)
    profile = arena_profile(layout)
    timings: dict[str, float] = {}
    t = time.monotonic()

    def lap(name: str) -> None:
        nonlocal t
        timings[name] = round(time.monotonic() - t, 1)
        t = time.monotonic()

    season_problems = read_jsonl(layout.problems)
    train_problems, leaked = make_problems(
        work, layout.catalog, preset, seed + 7, lambda line: say(f"    {line}"), never_touch=season_problems
    )
    say(
        f"    {len(train_problems)} training problems ({leaked} dropped by the leak guard against the "
        f"held-out problems and the season's {len(season_problems)}), {len(read_jsonl(heldout_file(layout)))} "
        "held-out"
    )
    lap("data")
    rows, teacher = play_teacher(
        layout.catalog, work, profile, recipe.workers, lambda line: say(f"    {line}")
    )
    if not rows:
        raise ValueError(
            f"the teacher solved none of {len(train_problems)} training problems: no rows to train on"
        )
    say(f"    teacher: {teacher}; {len(rows)} rows")
    lap("teacher")
    base = out / BASE_DIR
    made = init_model(base, work / "corpus" / "train.jsonl", preset, seed, lambda line: say(f"    {line}"))
    lap("init_model")
    say(f"    evaluating the untrained base on {preset.base_problems} held-out problems")
    base_results = eval_model(
        base, heldout_file(layout), layout.catalog, out / "eval" / "base", preset, place, say,
        preset.base_problems, profile,
    )  # fmt: skip
    lap("eval_base")
    if recipe.threads:
        torch.set_num_threads(recipe.threads)
    stage = out / STAGE
    checkpoint = stage / "model"
    log = train_scratch(
        base, rows, preset, preset.minutes, recipe.device, seed, checkpoint, stage / METRICS_FILE,
        lambda line: say(f"    {line}"),
    )  # fmt: skip
    lap("train")
    result = {
        "steps": log.steps,
        "train_loss": log.final_loss,
        "seconds": round(log.seconds, 1),
        "model_path": str(checkpoint),
        "details": {"rows": len(rows), "epochs": round(log.epochs, 3), "tokens": log.tokens,
                    "trained_tokens": log.trained_tokens, "tokens_per_s": round(log.tokens_per_s)},
    }  # fmt: skip
    (stage / STAGE_RESULT).write_text(json.dumps({"recipe": "proof", "result": result}, indent=2))
    say("    evaluating the trained checkpoint on the held-out problems")
    trained = eval_model(
        checkpoint, heldout_file(layout), layout.catalog, out / "eval" / STAGE_NAME, preset, place, say,
        None, profile,
    )  # fmt: skip
    lap("eval")
    learn = {
        "recipe": "proof",
        "preset": recipe.preset,
        "settings": preset.model_dump(),
        "profile": profile,
        "teacher": {"agent": "reference:agentic style=concise", "train_problems": len(train_problems),
                    "success": teacher, "rows": len(rows), "leak_guard_dropped": leaked},
        "heldout": {"base": base_results, STAGE_NAME: trained},
        "model": {"parameters": made.parameters, "vocab_size": made.vocab_size,
                  "hidden_size": preset.hidden_size, "layers": preset.layers},
        "training": log.model_dump(exclude={"curve"}),
        "timings_s": timings,
        "machine": machine(),
    }  # fmt: skip
    (out / LEARN_FILE).write_text(json.dumps(learn, indent=2))
    write_learn_card(learn, out, checkpoint, layout.catalog)
    product = trained.get("product", {})
    say(
        f"    held-out product success {product.get('success', 0)}/{product.get('n', 0)} "
        f"{product.get('ci95')} (base {base_results.get('product', {}).get('success', 0)}/"
        f"{base_results.get('product', {}).get('n', 0)})"
    )
    return {"base": str(base), "stages": [STAGE_NAME], "checkpoint": str(checkpoint), "heldout": trained}


HELDOUT_SOURCE = (
    "held-out problems generated on the season's catalogue (`04-train/work/heldout.jsonl`: no gold product, "
    "leak cluster or query shared with a training problem or the season's; greedy, the arena's tool "
    "profile), product problems the headline"
)


def write_learn_card(learn: dict[str, Any], out: Path, checkpoint: Path, catalog: Path) -> Path:
    """The distilled checkpoint's model card, as `train proof` writes its own: a loop's checkpoint is what
    a researcher would publish, so it says where it came from and what it solves held-out."""
    from shoparena.train.model_card import Lineage, write_card
    from shoparena.train.pipeline import BASE_DIR
    from shoparena.train.proof_card import heldout_table, sft_entry

    base = out / BASE_DIR
    lineage = Lineage(
        base_model=str(base),
        stages=[sft_entry(out, learn, base, catalog)],
        heldout=heldout_table(learn["heldout"], STAGE_NAME),
        heldout_source=HELDOUT_SOURCE,
    )
    return write_card(lineage, checkpoint)
