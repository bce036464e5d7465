"""`shoparena train rs | teacher | kto`: the stages that sample episodes through the harness (rejection
sampling, teacher rollouts) and the KTO stage that learns from their strict scores (SPEC §9.2–9.4).
Thin: each is `train_stage.stage_command` over the stage's config class and runner."""

from __future__ import annotations

from typing import Any

import typer

RS_HELP = """Rejection-sampled re-SFT: sample, keep strict 1.0 episodes, mix 50/50 with the corpus, re-SFT.

Sample --model k times per training problem through the harness
(leak guard first: eval and never-touch problems of --corpus refused by id and leak cluster, counts
printed), keep the strict 1.0 episodes, mix them 50/50 with the corpus' train split, re-SFT.

Writes guard.json, rollouts/ (an eval run), rollout_rows.jsonl, rollout_rejects.jsonl,
dataset/train.jsonl, counts.json, sft/ (adapter, mask_check.json …), metrics.jsonl, report.md.

Examples:
  shoparena train rs --model runs/sft/adapter --catalog cat/ --problems train.jsonl --corpus corpus/ \\
      --out runs/rs --samples 8
  shoparena train rs --config configs/paper/rs.yaml --model runs/sft/adapter --catalog cat/ \\
      --problems train.jsonl --corpus corpus/ --out runs/rs --sampler openai:policy --base-url http://127.0.0.1:8000/v1
"""

TEACHER_HELP = """Continued SFT on strictly scored teacher rollouts, voucher bucket up-sampled ×3.

Run --teacher (openai:MODEL, hf:DIR, reference:agentic …)
over the training problems through the harness behind the leak guard, strictly scored; keep the 1.0
episodes, up-sample the voucher bucket ×3, continue SFT from --model. rollouts/trajectories.jsonl is
the KTO stage's --trajectories.

Example:
  shoparena train teacher --teacher openai:gpt-4.1 --model runs/rs/sft/adapter --catalog cat/ \\
      --problems train.jsonl --corpus corpus/ --out runs/teacher
"""

KTO_HELP = """KTO on strictly scored trajectories, stopped when the recommend rate falls below 0.9.

β 0.02, lr 5e-6, one epoch, LoRA r 16 on q/k/v/o): one
example per assistant turn, desirable when its episode scored 1.0. With --probe-problems, every
--probe-every steps the current model runs the probe set through the harness; training stops (adapter
restored to the last passing probe) when fewer than 90% of probe episodes emit recommend_product.

Example:
  shoparena train kto --model runs/teacher/sft/adapter --trajectories runs/teacher/rollouts/trajectories.jsonl \\
      --catalog cat/ --probe-problems probe.jsonl --out runs/kto
"""


def _run_rs(config: Any) -> Any:
    from shoparena.train.rs import run_rs

    return run_rs(config)


def _run_teacher(config: Any) -> Any:
    from shoparena.train.teacher import run_teacher

    return run_teacher(config)


def _run_kto(config: Any) -> Any:
    from shoparena.train.kto import run_kto

    return run_kto(config)


def register(group: typer.Typer) -> None:
    from shoparena.cli.train_stage import stage_command
    from shoparena.train.kto import KTOStageConfig
    from shoparena.train.rs import RSStageConfig
    from shoparena.train.teacher import TeacherStageConfig

    stage_command(group, "rs", RSStageConfig, _run_rs, RS_HELP)
    stage_command(group, "teacher", TeacherStageConfig, _run_teacher, TEACHER_HELP)
    stage_command(group, "kto", KTOStageConfig, _run_kto, KTO_HELP)
