"""`shoparena train grpo`: Dr. GRPO on multi-turn harness rollouts (SPEC §9.5), the paper's v17/v18/v19.

One option per field of `GRPOStageConfig` (`train_stage.stage_command`); `--variant` seeds the paper's
numbers, `--config FILE` and the other flags override them.
"""

from __future__ import annotations

import typer

from shoparena.cli.train_stage import stage_command
from shoparena.train.grpo import GRPOStageConfig, run_grpo

GRPO_HELP = """Dr. GRPO on multi-turn harness rollouts (the paper's v17/v18/v19).

Each step samples B problems × K rollouts on the real harness (tools run turn by turn, model in eval
mode), rewards each with its strict outcome (+ tool_weight × tool-match against a teacher trajectory),
and updates a LoRA adapter with TRL's dr_grpo loss (advantage = reward − group mean, no std; per-token
loss ÷ max completion tokens; KL β to the starting model). The loss mask is proved assistant-only
before every update; eval/never-touch problems of --corpus are refused (counts printed).

Writes adapter/ (+ merged/ with --merge), config.resolved.json, metrics.jsonl, rollouts.jsonl, report.md.

Examples:

  shoparena train grpo --variant v19 --model runs/kto/adapter --catalog cat/ --problems train.jsonl \\
      --teacher-trajectories runs/teacher/rollouts/trajectories.jsonl --corpus corpus/ --out runs/grpo

  shoparena train grpo --config configs/tiny/grpo.yaml --model tiny/ --catalog cat/ --problems p.jsonl \\
      --teacher-trajectories run/trajectories.jsonl --corpus corpus/ --out runs/grpo-smoke --max-steps 1
"""


def run(config: GRPOStageConfig):
    from shoparena.train.leak_guard import LeakGuardError

    try:
        return run_grpo(config)
    except (FileNotFoundError, LeakGuardError) as exc:
        raise ValueError(f"train grpo: {exc}") from exc


def register(group: typer.Typer) -> None:
    stage_command(group, "grpo", GRPOStageConfig, run, GRPO_HELP)
