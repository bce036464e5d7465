"""Stage 2, rejection-sampled re-SFT (SPEC §9.2): sample the SFT checkpoint k = 8 times per training
problem at T = 0.9, top_p 0.95, ≤ 8 turns, through the real harness behind the leak guard; keep the
episodes scored 1.0 under the strict rules; mix them 50/50 with the SFT corpus' train split; re-SFT.

The mix is by rows, seeded: all kept rollout rows, and as many corpus train rows drawn without
replacement (all of them when the corpus has fewer; `mix_ratio` sets another share). The held-out loss
is the corpus' eval split, as in stage 1. The sampler is `hf:MODEL` unless `--sampler` names another
spec of the same weights (an `openai:` vLLM server of the checkpoint, with `--base-url`).
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


class RSStageConfig(SampledSFTConfig):
    """Rejection sampling + re-SFT; defaults are the paper's (k = 8, T = 0.9, top_p 0.95, ≤ 8 turns, 50/50)."""

    stage: ClassVar[str] = "rs"

    sampler: str | None = Field(
        None, description="Agent spec to sample with (default hf:MODEL), e.g. openai:NAME for a vLLM server."
    )
    mix_ratio: float = Field(0.5, gt=0, le=1, description="Share of rollout rows in the re-SFT mix.")


def mix_rows(
    rollout_rows: list[dict], corpus_rows: list[dict], ratio: float, seed: int
) -> tuple[list[dict], int]:
    """(shuffled mix, corpus rows drawn): every rollout row and `len(rollouts) × (1 − ratio) / ratio`
    corpus rows drawn without replacement (all when there are fewer)."""
    rng = random.Random(seed)
    want = round(len(rollout_rows) * (1 - ratio) / ratio)
    drawn = rng.sample(corpus_rows, min(want, len(corpus_rows)))
    mixed = [*rollout_rows, *drawn]
    rng.shuffle(mixed)
    return mixed, len(drawn)


@cleans_up
def run_rs(config: RSStageConfig) -> StageResult:
    from shoparena.train.corpus_data import read_training_data

    check_single_process(config.stage)
    started = time.monotonic()
    config.write_resolved()
    agent = config.sampler or f"hf:{config.model}"
    collected = collect_rollouts(config, agent)
    corpus = read_training_data(config.corpus)
    rows, drawn = mix_rows(collected.rows, corpus.train, config.mix_ratio, config.seed)
    composition: dict[str, Any] = {
        "rollout_rows": len(collected.rows),
        "corpus_rows": drawn,
        "corpus_train_rows": len(corpus.train),
        "rollout_share": round(len(collected.rows) / len(rows), 4) if rows else None,
    }
    notes = [f"sampler {agent}: k = {config.samples} at T = {config.temperature}, top_p {config.top_p}"]
    if drawn < round(len(collected.rows) * (1 - config.mix_ratio) / config.mix_ratio):
        notes.append(
            f"the corpus has {len(corpus.train)} train rows: the mix is not {config.mix_ratio:.0%} rollouts"
        )
    if not collected.rows:
        rows = []  # nothing sampled passed: no re-SFT on the corpus alone (that would be stage 1 again)
    return train_on_rows(config, collected, rows, corpus.eval, composition, notes, started)
