"""Stage 4, KTO (SPEC §9.4): TRL's `KTOTrainer` on teacher trajectories labelled by strict scoring,
with an attention-only LoRA (r = 16 on q/k/v/o), β = 0.02, lr 5e-6, one epoch — and a guard.

KTO can teach a model that stopping is safer than answering: undesirable episodes are mostly ones
that recommended the wrong thing, and the cheapest way to lower their likelihood is to stop
recommending at all. So every `probe_every` steps `RecommendRateProbe` runs the current policy (eval
mode, through the real harness: `train.live_agent`) over a fixed probe set and logs the share of
episodes that emitted `recommend_product`; the moment it falls below `probe_threshold` (0.9) training
stops, and the adapter is put back to the last probed state that passed (the input model itself when
none did) before it is saved. The rate goes to metrics.jsonl either way.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator

from shoparena.records.options import CliFlag, SimilarityName
from shoparena.train.config import StageConfig, StageResult, cleans_up
from shoparena.train.kto_probe import Probe, make_probe_callback
from shoparena.train.rollouts import Sampling, read_records

ATTENTION_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj"]


class KTOStageConfig(StageConfig):
    """KTO on strictly scored trajectories; the defaults are the paper's run."""

    stage: ClassVar[str] = "kto"

    model: Path = Field(description="Checkpoint to start from (the teacher-SFT stage's merged model).")
    trajectories: Annotated[list[Path], CliFlag(flag="--trajectories", type=list[Path])] = Field(
        min_length=1,
        description="Trajectory JSONL files scored in strict mode (e.g. the teacher stage's rollouts); repeatable.",
    )
    limit: int | None = Field(None, ge=1, description="Only the first N trajectory records (smoke runs).")
    beta: float = Field(0.02, gt=0, description="KTO β (strength of the implicit KL to the start model).")
    learning_rate: float = Field(5e-6, gt=0, description="Peak learning rate.")
    epochs: float = Field(1.0, gt=0, description="Passes over the examples.")
    batch_size: int = Field(2, ge=2, description="Examples per device step (KTO's KL estimate needs ≥ 2).")
    gradient_accumulation_steps: int = Field(1, ge=1, description="Device steps per optimiser step.")
    lora_r: int = Field(16, ge=1, description="LoRA rank.")
    lora_alpha: int = Field(32, ge=1, description="LoRA alpha.")
    lora_dropout: float = Field(0.05, ge=0, lt=1, description="LoRA dropout.")
    target_modules: Annotated[list[str], CliFlag(flag="--target-module", type=list[str])] = Field(
        default_factory=lambda: list(ATTENTION_MODULES), description="Modules LoRA adapts (attention only)."
    )
    max_length: int = Field(16384, ge=16, description="Longest prompt + completion in tokens (context).")
    desirable_weight: float = Field(1.0, gt=0, description="Loss weight of desirable examples.")
    undesirable_weight: float = Field(1.0, gt=0, description="Loss weight of undesirable examples.")
    gradient_checkpointing: bool = Field(True, description="Recompute activations in the backward pass.")
    dtype: str = Field("auto", description="auto (bf16 on a GPU that has it, else fp32), float32, bfloat16.")
    merge: bool = Field(False, description="Also write the merged model (base + adapter) to merged/.")
    catalog: Path | None = Field(None, description="Catalogue directory for the probe episodes.")
    probe_problems: Path | None = Field(
        None, description="Problems the recommend-rate probe runs (none: no probe, no early stop)."
    )
    probe_limit: int = Field(16, ge=1, description="Probe episodes: the first N probe problems.")
    probe_every: int = Field(10, ge=1, description="Probe every N optimiser steps.")
    probe_threshold: float = Field(
        0.9,
        ge=0,
        le=1,
        description="Stop when the share of probe episodes emitting recommend_product falls below.",
    )
    probe_max_turns: int = Field(8, ge=1, description="Turns per probe episode.")
    probe_max_new_tokens: int = Field(2048, ge=1, description="Tokens per probe turn.")
    probe_similarity: SimilarityName = Field(
        "lexical", description="Title similarity for scoring probe episodes (the rate does not use it)."
    )

    @field_validator("trajectories", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        return [value] if isinstance(value, str | Path) else value


def probe_of(config: KTOStageConfig) -> Probe | None:
    """The probe the config asks for (greedy episodes, the paper's turn cap), or None."""
    if config.probe_problems is None:
        return None
    if config.catalog is None:
        raise ValueError("kto: --probe-problems needs --catalog (the probe runs episodes on it)")
    from shoparena.scoring.suite import load_problem_file

    problems = load_problem_file(config.probe_problems)[: config.probe_limit]
    sampling = Sampling(
        samples=1,
        temperature=0.0,
        top_p=1.0,
        max_turns=config.probe_max_turns,
        max_new_tokens=config.probe_max_new_tokens,
        similarity=config.probe_similarity,
        executor="inline",
    )
    return Probe(config.catalog, problems, config.out / "probes", sampling)


def read_trajectories(paths: list[Path], limit: int | None = None):
    """(`path:line`, record) of every file in turn; the first `limit` records when given."""
    count = 0
    for path in paths:
        if not Path(path).is_file():
            raise ValueError(f"kto: trajectories file {path} is not there")
        for number, record in enumerate(read_records(path), start=1):
            if limit is not None and count >= limit:
                return
            count += 1
            yield f"{path}:{number}", record


@cleans_up
def run_kto(config: KTOStageConfig) -> StageResult:
    """Label, train, probe, save: see the module docstring."""
    from datasets import Dataset
    from peft import LoraConfig
    from trl import KTOConfig, KTOTrainer

    from shoparena.train.checkpoint import load_causal_lm, load_tokenizer, save_adapter, save_merged
    from shoparena.train.kto_data import kto_examples
    from shoparena.train.metrics import (
        METRICS_FILE,
        REPORT_FILE,
        MetricsLog,
        metrics_callback,
        progress_callback,
        write_report,
    )
    from shoparena.train.reporting import direct_trainer, trainer_args
    from shoparena.train.rollouts import write_jsonl

    started = time.monotonic()
    out = config.out
    out.mkdir(parents=True, exist_ok=True)
    config_path = config.write_resolved()
    tokenizer = load_tokenizer(config.model)
    data = kto_examples(read_trajectories(config.trajectories, config.limit), tokenizer)
    write_jsonl(out / "kto_rejects.jsonl", data.rejects)
    counts = data.counts()
    if not data.examples:
        raise ValueError(
            f"kto: no example could be made from {len(config.trajectories)} trajectory file(s) "
            f"({len(data.rejects)} records rejected; reasons in {out / 'kto_rejects.jsonl'})"
        )
    probe = probe_of(config)

    model = load_causal_lm(config.model, dtype=config.dtype)
    bf16 = str(next(model.parameters()).dtype) == "torch.bfloat16"
    dataset = Dataset.from_list(
        [{"prompt": e.prompt, "completion": e.completion, "label": e.label} for e in data.examples]
    )
    args = KTOConfig(
        output_dir=str(out / "trainer"),
        beta=config.beta,
        learning_rate=config.learning_rate,
        num_train_epochs=config.epochs,
        max_steps=config.max_steps or -1,
        per_device_train_batch_size=config.batch_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        max_length=config.max_length,
        desirable_weight=config.desirable_weight,
        undesirable_weight=config.undesirable_weight,
        gradient_checkpointing=config.gradient_checkpointing,
        bf16=bf16,
        fp16=False,
        use_cpu=not _cuda(),
        logging_steps=1,
        save_strategy="no",
        **trainer_args(config.report_to, out, config.stage),
        seed=config.seed,
        data_seed=config.seed,
        disable_tqdm=True,
    )
    lora = LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=list(config.target_modules),
        task_type="CAUSAL_LM",
    )
    log = MetricsLog(out / METRICS_FILE, stage=config.stage)
    callbacks: list[Any] = [metrics_callback(log)]
    if config.progress:
        callbacks.append(progress_callback("kto"))
    guard = None
    if probe is not None:
        guard = make_probe_callback(probe, config.probe_every, config.probe_threshold, log.write)
        callbacks.append(guard)
    trainer = KTOTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora,
        callbacks=callbacks,
    )
    direct_trainer(trainer, out, config.stage)
    output = trainer.train()
    log.close()
    tokens = int(max((h.get("num_tokens", 0) for h in trainer.state.log_history), default=0))
    train_seconds = float(output.metrics.get("train_runtime") or 0.0)
    adapter = save_adapter(trainer.model, tokenizer, out / "adapter", config.model)
    merged = save_merged(trainer.model, tokenizer, out / "merged") if config.merge else None
    shutil.rmtree(out / "trainer", ignore_errors=True)

    details: dict[str, Any] = {
        "labels": counts,
        "tokens_per_s": round(tokens / train_seconds, 2) if train_seconds > 0 else None,
    }
    facts: dict[str, Any] = {
        "model": str(config.model),
        **counts,
        "beta": config.beta,
        "learning rate": config.learning_rate,
        "LoRA": f"r {config.lora_r} on {', '.join(config.target_modules)}",
        "steps": output.global_step,
        "train loss": output.training_loss,
        "tokens": tokens,
        "tokens/s": details["tokens_per_s"],
        "checkpoint": str(merged or adapter),
    }
    notes: list[str] = []
    if guard is not None:
        details["probe"] = {
            "threshold": config.probe_threshold,
            "every": config.probe_every,
            "episodes": len(probe.problems) if probe else 0,
            "rates": {str(r.step): r.rate for r in guard.results},
            "stopped_at": guard.stopped_at,
            "restored_to": guard.restored_to if guard.stopped_at is not None else None,
        }
        rates = ", ".join(f"step {r.step}: {r.rate:.2f}" for r in guard.results) or "no probe ran"
        notes.append(f"recommend-rate probe (threshold {config.probe_threshold}): {rates}")
        if guard.stopped_at is not None:
            notes.append(
                f"**stopped early** at step {guard.stopped_at}: the adapter was restored to step "
                f"{guard.restored_to} (0 = the input model) before saving"
            )
    else:
        notes.append("no probe set given (--probe-problems): no early stop")
    report = write_report(
        out / REPORT_FILE, f"kto: {out.name}", facts, {"Notes": "\n".join(f"- {n}" for n in notes)}
    )
    return StageResult(
        stage=config.stage,
        out=out,
        checkpoint=adapter,
        merged=merged,
        metrics=out / METRICS_FILE,
        report=report,
        config=config_path,
        steps=output.global_step,
        train_loss=output.training_loss,
        tokens=tokens,
        seconds=round(time.monotonic() - started, 3),
        details=details,
    )


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()
