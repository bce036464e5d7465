"""Stage 3, continued SFT on teacher rollouts (SPEC §9.3): a strong model (any agent spec the eval
runner accepts: `openai:MODEL` with `--base-url`, `hf:DIR`, …) runs the training problems through the
real harness behind the leak guard, strictly scored; the 1.0 episodes become training rows, the voucher
bucket's up-sampled ×3 (the bucket the paper's model was weakest on), and SFT continues from `--model`.

The teacher's run directory (`OUT/rollouts/trajectories.jsonl`) holds every episode, passing or not,
strictly scored: the KTO stage's labelled trajectories and the GRPO stage's tool-match references.
"""

from __future__ import annotations

import random
import time
from typing import Any, ClassVar

from pydantic import Field

from shoparena.train.config import StageResult, cleans_up
from shoparena.train.sampled_sft import (
    SampledSFTConfig,
    check_single_process,
    collect_rollouts,
    train_on_rows,
)

UPSAMPLED_BUCKET = "voucher"


class TeacherStageConfig(SampledSFTConfig):
    """Teacher rollouts + continued SFT; the voucher bucket ×3 as in the paper."""

    stage: ClassVar[str] = "teacher"

    teacher: str = Field(
        description="Teacher agent spec: openai:MODEL (with --base-url), hf:DIR, reference:agentic …"
    )
    samples: int = Field(1, ge=1, description="Teacher episodes per problem.")
    temperature: float = Field(0.0, ge=0, description="Teacher sampling temperature (model agents).")
    top_p: float = Field(1.0, gt=0, le=1, description="Teacher nucleus sampling top_p (model agents).")
    max_turns: int | None = Field(
        None, ge=1, description="Teacher turns per episode (default: the step cap)."
    )
    voucher_upsample: int = Field(
        3, ge=1, description="Copies of each voucher-bucket row in the training set."
    )


def upsample(rows: list[dict], bucket: str, copies: int, seed: int) -> tuple[list[dict], int]:
    """(shuffled rows with each `bucket` row `copies` times, how many rows of the bucket there were)."""
    out: list[dict] = []
    hits = 0
    for row in rows:
        in_bucket = (row.get("metadata") or {}).get("bucket") == bucket
        hits += in_bucket
        out.extend([row] * (copies if in_bucket else 1))
    random.Random(seed).shuffle(out)
    return out, hits


@cleans_up
def run_teacher(config: TeacherStageConfig) -> StageResult:
    from shoparena.train.corpus_data import read_training_data

    check_single_process(config.stage)
    started = time.monotonic()
    config.write_resolved()
    collected = collect_rollouts(config, config.teacher)
    rows, vouchers = upsample(collected.rows, UPSAMPLED_BUCKET, config.voucher_upsample, config.seed)
    composition: dict[str, Any] = {
        "teacher_rows": len(collected.rows),
        "voucher_rows": vouchers,
        "voucher_copies": config.voucher_upsample,
    }
    notes = [
        f"teacher {config.teacher}: {config.samples} episode(s) per problem, strictly scored, 1.0 kept",
        f"{vouchers} voucher-bucket rows × {config.voucher_upsample}",
    ]
    held_out = read_training_data(config.corpus).eval
    return train_on_rows(config, collected, rows, held_out, composition, notes, started)
