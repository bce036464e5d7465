"""What the rejection-sampling and teacher stages share (SPEC §9.2–9.3): their config fields for
sampling and for the SFT that follows, and the hand-off of built rows to `sft.run_sft`.

Both stages sample episodes behind the leak guard (`rollouts.collect`), build a training set from the
strict 1.0 ones, and continue SFT from `--model` with `run_sft` in `OUT/sft/` — the same trainer, mask
proof and checkpoint layout as stage 1. The stage's own directory holds the sampling (guard.json,
rollouts/, rollout_rows.jsonl, rollout_rejects.jsonl), the training set it built (dataset/train.jsonl),
counts.json, its resolved config, metrics.jsonl (the sampling line, then the SFT's lines) and
report.md.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, ClassVar, Literal

import orjson
from pydantic import Field

from shoparena.records.options import Executor, Profile, SimilarityName
from shoparena.train.config import StageConfig, StageResult
from shoparena.train.metrics import METRICS_FILE, REPORT_FILE, read_metrics, write_report
from shoparena.train.rollouts import Collected, Sampling, collect, write_jsonl


class SampledSFTConfig(StageConfig):
    """Fields of a stage that samples episodes and then continues SFT on them."""

    cli_exclude: ClassVar[frozenset[str]] = frozenset({"sft", "never_touch", "options"})

    model: Path = Field(
        description="Checkpoint to continue training (an earlier stage's adapter or merged dir)."
    )
    catalog: Path = Field(description="Catalogue directory the harness searches.")
    problems: Path = Field(description="Training problems (the leak guard drops eval / never-touch ones).")
    corpus: Path = Field(
        description="Corpus directory (`shoparena corpus build`): its manifest guards sampling."
    )
    limit: int | None = Field(None, ge=1, description="Only the first N problems of the file.")
    samples: int = Field(8, ge=1, description="Episodes sampled per problem.")
    temperature: float = Field(0.9, ge=0, description="Sampling temperature (model agents).")
    top_p: float = Field(0.95, gt=0, le=1, description="Nucleus sampling top_p (model agents).")
    max_turns: int | None = Field(8, ge=1, description="Model turns per episode (model agents).")
    max_new_tokens: int | None = Field(
        None, ge=1, description="Tokens per model turn (default: the agent's)."
    )
    profile: Profile = Field("oro7", description="Harness tool profile.")
    protocol: str | None = Field(None, description="Model protocol (default: the agent's).")
    similarity: SimilarityName = Field("minilm", description="Title similarity for scoring.")
    executor: Executor = Field(
        "inline", description="Where episodes run: inline (one agent here), process or ray."
    )
    workers: int = Field(1, ge=1, description="Parallel episode workers (process / ray).")
    timeout: float | None = Field(None, gt=0, description="Seconds per episode.")
    base_url: str | None = Field(None, description="openai: agents: the endpoint (e.g. a vLLM server).")
    options: dict[str, Any] = Field(default_factory=dict, description="Other agent options (config file).")
    never_touch: list[Path] | None = Field(
        None, description="Never-touch suites, when not where the corpus manifest says (config file)."
    )
    learning_rate: float = Field(1e-4, gt=0, description="SFT learning rate.")
    num_train_epochs: float = Field(1.0, gt=0, description="SFT epochs over the built training set.")
    max_length: int = Field(14336, ge=16, description="SFT: longest row in tokens (longer ones dropped).")
    lora_r: int = Field(16, ge=1, description="SFT LoRA rank.")
    merge: bool = Field(False, description="Also write the merged model (sft/merged/).")
    on_empty: Literal["fail", "skip"] = Field(
        "fail",
        description="When no sampled episode passes: fail, or skip (no training; the input model goes on).",
    )
    sample_only: bool = Field(
        False,
        description="Stop after writing dataset/ (then e.g. `accelerate launch … train sft --data OUT/dataset`).",
    )
    sft: dict[str, Any] = Field(
        default_factory=dict, description="Any other SFT stage field (config file), e.g. lora_alpha."
    )

    def sampling(self) -> Sampling:
        return Sampling(
            samples=self.samples,
            temperature=self.temperature,
            top_p=self.top_p,
            max_turns=self.max_turns,
            max_new_tokens=self.max_new_tokens,
            profile=self.profile,
            protocol=self.protocol,
            similarity=self.similarity,
            executor=self.executor,
            workers=self.workers,
            timeout=self.timeout,
            base_url=self.base_url,
            options=dict(self.options),
            seed=self.seed,
        )

    def sft_config(self) -> Any:
        from shoparena.train.sft import SFTStageConfig

        values = {
            "model": self.model,
            "out": self.out / "sft",
            "seed": self.seed,
            "max_steps": self.max_steps,
            "progress": self.progress,
            "report_to": self.report_to,
            "learning_rate": self.learning_rate,
            "num_train_epochs": self.num_train_epochs,
            "max_length": self.max_length,
            "lora_r": self.lora_r,
            "merge": self.merge,
            **self.sft,
        }
        return SFTStageConfig.from_values(values, source=f"{self.stage} stage's sft options")


def collect_rollouts(config: SampledSFTConfig, agent: str) -> Collected:
    """`agent`'s episodes on the config's training problems behind the corpus' leak guard, in OUT."""
    return collect(
        agent,
        config.catalog,
        config.problems,
        config.corpus,
        config.out,
        config.sampling(),
        limit=config.limit,
        never_touch=config.never_touch,
        progress=config.progress,
    )


def train_on_rows(
    config: SampledSFTConfig,
    collected: Collected,
    train_rows: list[dict],
    eval_rows: list[dict],
    composition: dict[str, Any],
    notes: list[str],
    started: float,
) -> StageResult:
    """Write the training set and counts, run SFT on them, then the stage's metrics and report."""
    from shoparena.train.sft import run_sft

    out = config.out
    write_jsonl(out / "dataset" / "train.jsonl", train_rows)
    if eval_rows:
        write_jsonl(out / "dataset" / "eval.jsonl", eval_rows)
    counts = {**collected.counts(), **composition, "train_rows": len(train_rows), "eval_rows": len(eval_rows)}
    (out / "counts.json").write_bytes(orjson.dumps(counts, option=orjson.OPT_INDENT_2))
    if not train_rows:
        message = (
            f"{config.stage}: nothing to train on — {counts['sampled']} episodes sampled, {counts['passed']} "
            f"at strict 1.0 ({out / 'counts.json'})"
        )
        if config.on_empty == "fail":
            raise ValueError(message + "; sample more (--samples), or start from a stronger model")
        return _untrained(
            config, collected, counts, [*notes, message + "; skipped, the input model goes on"], started
        )
    if config.sample_only:
        note = f"sample only: the training set is in {out / 'dataset'}; SFT was not run"
        return _untrained(config, collected, counts, [*notes, note], started)
    sft = run_sft(config.sft_config(), train_rows=train_rows, eval_rows=eval_rows)

    metrics = out / METRICS_FILE
    with metrics.open("wb") as handle:
        handle.write(orjson.dumps({"stage": config.stage, "phase": "sampling", "step": 0, **counts}) + b"\n")
        for line in read_metrics(sft.metrics):
            handle.write(orjson.dumps({**line, "stage": config.stage, "phase": "sft"}) + b"\n")
    facts = {
        "model": str(config.model),
        "agent": collected.rollouts.agent,
        **counts,
        **collected.rates(),
        "sft steps": sft.steps,
        "sft train loss": sft.train_loss,
        "sft eval loss": sft.eval_loss,
        "checkpoint": str(sft.model_path),
    }
    sections = {"Notes": "\n".join(f"- {n}" for n in notes)} if notes else None
    report = write_report(out / REPORT_FILE, f"{config.stage}: {config.out.name}", facts, sections)
    return StageResult(
        stage=config.stage,
        out=out,
        checkpoint=sft.checkpoint,
        merged=sft.merged,
        metrics=metrics,
        report=report,
        config=out / "config.resolved.json",
        steps=sft.steps,
        train_loss=sft.train_loss,
        eval_loss=sft.eval_loss,
        tokens=sft.tokens,
        seconds=round(time.monotonic() - started, 3),
        details={
            "counts": counts,
            **collected.rates(),
            "trajectories": str(collected.rollouts.run_dir / "trajectories.jsonl"),
            "sft": sft.details,
        },
    )


def check_single_process(stage: str) -> None:
    """Sampling runs episodes in one process (its own workers aside): under a distributed launch every
    rank would sample the same run directory. Refused, with the way to use several GPUs for the SFT."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ValueError(
            f"{stage}: run the sampling stages as one process, not under accelerate/torchrun; for a "
            f"multi-GPU SFT give --sample-only, then `accelerate launch … shoparena train sft --data OUT/dataset`"
        )


def _untrained(
    config: SampledSFTConfig, collected: Collected, counts: dict[str, Any], notes: list[str], started: float
) -> StageResult:
    """No training (nothing passed, or --sample-only): the stage's outputs say so; its checkpoint is the
    input model."""
    out = config.out
    metrics = out / METRICS_FILE
    metrics.write_bytes(
        orjson.dumps({"stage": config.stage, "phase": "sampling", "step": 0, "trained": False, **counts})
        + b"\n"
    )
    facts = {
        "model": str(config.model),
        "agent": collected.rollouts.agent,
        **counts,
        "trained": "no",
    }
    report = write_report(
        out / REPORT_FILE, f"{config.stage}: {out.name}", facts, {"Notes": "\n".join(f"- {n}" for n in notes)}
    )
    return StageResult(
        stage=config.stage,
        out=out,
        checkpoint=config.model,
        metrics=metrics,
        report=report,
        config=out / "config.resolved.json",
        seconds=round(time.monotonic() - started, 3),
        details={
            "counts": counts,
            "skipped": not config.sample_only,
            "dataset": str(out / "dataset"),
            "trajectories": str(collected.rollouts.run_dir / "trajectories.jsonl"),
        },
    )
