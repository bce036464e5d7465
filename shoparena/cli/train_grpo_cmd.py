"""`shoparena train grpo`: Dr. GRPO on multi-turn harness rollouts (SPEC §9.5), the paper's v17/v18/v19.

One option per field of `GRPOStageConfig` (train-core's `stage_command`); `--variant` seeds the paper's
numbers, `--config FILE` and the other flags override them.
"""

from __future__ import annotations

import typer

from shoparena.cli.train_cmd import stage_command
from shoparena.train.grpo import GRPOStageConfig, run_grpo

GRPO_HELP = """Dr. GRPO: each step samples B problems × K multi-turn rollouts on the real harness (tools run
turn by turn, model in eval mode), rewards each with its strict outcome (+ tool_weight × tool-match
against a teacher trajectory), and updates a LoRA adapter with TRL's dr_grpo loss (advantage = reward −
group mean, no std; per-token loss ÷ max completion tokens; KL β to the base model). The loss mask is
proved assistant-only before every update; eval/never-touch problems of --corpus are refused.

Example (the paper's v19):
  shoparena train grpo --variant v19 --model runs/kto/merged --catalog cat/ --problems train.jsonl \\
    --teacher-trajectories runs/teacher/trajectories.jsonl --corpus corpus/ --out runs/grpo
Smoke run on a CPU: add --config configs/tiny/grpo.yaml --max-steps 1
"""


def run(config: GRPOStageConfig):
    from shoparena.train.leak_guard import LeakGuardError

    try:
        return run_grpo(config)
    except (FileNotFoundError, LeakGuardError) as exc:
        raise ValueError(f"train grpo: {exc}") from exc


def register(group: typer.Typer) -> None:
    stage_command(group, "grpo", GRPOStageConfig, run, GRPO_HELP)
