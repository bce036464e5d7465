"""Stage 1 (SPEC §9.1): LoRA SFT on the corpus with an assistant-only loss mask that is proved right.

Rows are rendered to token ids and a mask here (`chat_render.render_with_mask`), checked against the
tokenizer's own chat template, and handed to TRL's `SFTTrainer` pre-tokenised (`input_ids` +
`assistant_masks`, from which TRL builds labels with -100 outside assistant output). Rows longer than
`max_length` are dropped and counted, never truncated (a cut conversation would teach a turn without its
end). Before any step, `mask_check.json` decodes the masked-in spans of the first rows and verifies each
row independently (`assert_mask_is_assistant_only`).

`--lr-sweep` trains one candidate per learning rate, each in `sweep/lr-<lr>/`, evaluates each on the
held-out split and keeps the one with the lowest eval loss (recorded in `sweep.json`); its adapter is
copied to `adapter/`. Other stages (rejection-sampled re-SFT, teacher SFT) call `run_sft` with the rows
they built (`train_rows` / `eval_rows`) or a rows file (`data`).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from shoparena.records.options import CliFlag
from shoparena.train.chat_render import render_row, row_system_prompt, serving_messages
from shoparena.train.config import RESOLVED_CONFIG, StageConfig, StageResult, cleans_up
from shoparena.train.corpus_data import CorpusSplits, DataError, read_training_data
from shoparena.train.mask_check import MASK_CHECK_FILE, mask_check_entry, write_mask_check
from shoparena.train.metrics import (
    METRICS_FILE,
    REPORT_FILE,
    MetricsLog,
    is_main_process,
    markdown_table,
    metrics_callback,
    progress_callback,
    write_report,
)
from shoparena.train.reporting import direct_trainer, trainer_args

PAPER_LRS = (1e-5, 3e-5, 1e-4)
ADAPTER_DIR = "adapter"
MERGED_DIR = "merged"


class SFTStageConfig(StageConfig):
    """LoRA SFT (TRL `SFTTrainer`); defaults are the paper's where it gives one."""

    stage: ClassVar[str] = "sft"

    model: Path = Field(description="Base checkpoint directory (or an earlier stage's adapter directory).")
    corpus: Path | None = Field(
        None, description="Corpus directory from `shoparena corpus build` (train + eval splits)."
    )
    data: Path | None = Field(
        None, description="Instead of --corpus: a rows file (.jsonl/.parquet) or corpus dir to train on."
    )
    learning_rate: float = Field(1e-4, gt=0, description="Learning rate (ignored with --lr-sweep).")
    lr_sweep: bool = Field(
        False, description="Train one candidate per --sweep-lr value; keep the lowest held-out loss."
    )
    sweep_lrs: Annotated[list[float], CliFlag(flag="--sweep-lr", type=list[float])] = Field(
        default_factory=lambda: list(PAPER_LRS),
        description="A learning rate of the sweep; repeat the flag (default: the paper's 1e-5, 3e-5, 1e-4).",
    )
    num_train_epochs: float = Field(1.0, gt=0, description="Epochs over the training rows (paper: 1).")
    per_device_train_batch_size: int = Field(1, ge=1, description="Rows per device per step.")
    gradient_accumulation_steps: int = Field(1, ge=1, description="Micro-batches per optimiser step.")
    max_length: int = Field(
        14336, ge=16, description="Longest row in tokens; longer rows are dropped and counted."
    )
    gradient_checkpointing: bool = Field(True, description="Recompute activations in the backward pass.")
    attn_implementation: str = Field("sdpa", description="Attention kernel: sdpa, eager, flash_attention_2.")
    dtype: str = Field("auto", description="auto (bf16 on a GPU that has it, else fp32), float32, bfloat16.")
    lora_r: int = Field(16, ge=1, description="LoRA rank.")
    lora_alpha: int = Field(32, ge=1, description="LoRA alpha.")
    lora_dropout: float = Field(0.05, ge=0, lt=1, description="LoRA dropout.")
    lora_target_modules: list[str] = Field(
        default_factory=lambda: ["all-linear"],
        description="Modules LoRA adapts: all-linear, or names such as q_proj k_proj v_proj o_proj.",
    )
    warmup_ratio: float = Field(
        0.03, ge=0, lt=1, description="Share of steps spent warming up the learning rate."
    )
    lr_scheduler_type: str = Field("cosine", description="Learning-rate schedule (transformers' names).")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    logging_steps: int = Field(1, ge=1, description="Write a metrics.jsonl line every this many steps.")
    eval_rows: int | None = Field(None, ge=1, description="Evaluate on at most this many held-out rows.")
    mask_check_rows: int = Field(3, ge=1, description="Rows decoded into mask_check.json (each verified).")
    merge: bool = Field(False, description="Also write the adapter merged into the base model (merged/).")
    mode: Literal["lora", "full"] = Field(
        "lora",
        description="lora (the paper's) or full: every weight trained, for small models and models "
        "trained from scratch (loss on assistant positions only, length-bucketed batches, bf16 on GPUs).",
    )
    batch_tokens: int = Field(
        8192, ge=64, description="--mode full: padded tokens per batch (rows bucketed by length)."
    )

    @model_validator(mode="after")
    def _one_source(self) -> SFTStageConfig:
        if self.corpus is not None and self.data is not None:
            raise ValueError("give --corpus or --data, not both")
        if self.lr_sweep and not self.sweep_lrs:
            raise ValueError("--lr-sweep needs at least one learning rate in sweep_lrs")
        return self


class DroppedRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    split: str
    row: int
    problem_id: str | None
    reason: str
    detail: str


class TokenisedSplit(BaseModel):
    """A split rendered for the trainer, and what was dropped from it."""

    model_config = ConfigDict(extra="forbid")

    input_ids: list[list[int]] = Field(default_factory=list)
    assistant_masks: list[list[int]] = Field(default_factory=list)
    dropped: list[DroppedRow] = Field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(map(len, self.input_ids))

    @property
    def trained_tokens(self) -> int:
        return sum(map(sum, self.assistant_masks))


def tokenise_rows(
    tokenizer: Any,
    rows: list[dict],
    split: str,
    max_length: int,
    check: list[dict] | None = None,
    check_rows: int = 0,
) -> TokenisedSplit:
    """Render each row with its mask; rows over `max_length`, with nothing to train on, or that the template
    cannot render are dropped with a reason. The first `check_rows` kept rows go to `check` (mask check)."""
    out = TokenisedSplit()
    for index, row in enumerate(rows):
        problem_id = (row.get("metadata") or {}).get("problem_id")
        try:
            rendered = render_row(tokenizer, row)
        except Exception as exc:  # a template error (jinja, mismatch, odd content) drops the row only
            out.dropped.append(
                DroppedRow(
                    split=split,
                    row=index,
                    problem_id=problem_id,
                    reason="unrenderable",
                    detail=str(exc)[:300],
                )
            )
            continue
        if len(rendered.input_ids) > max_length:
            detail = f"{len(rendered.input_ids)} tokens > max_length {max_length}"
            out.dropped.append(
                DroppedRow(split=split, row=index, problem_id=problem_id, reason="too_long", detail=detail)
            )
            continue
        if not rendered.trained_tokens:
            out.dropped.append(
                DroppedRow(
                    split=split, row=index, problem_id=problem_id, reason="no_assistant_tokens", detail=""
                )
            )
            continue
        if check is not None and len(check) < check_rows:
            check.append(
                mask_check_entry(
                    tokenizer,
                    rendered,
                    serving_messages(row["messages"], row_system_prompt(row)),
                    row.get("tools") or None,
                    index,
                )
            )
        out.input_ids.append(rendered.input_ids)
        out.assistant_masks.append(rendered.assistant_mask)
    return out


def trainer_dataset(split: TokenisedSplit):
    """The split as the `datasets.Dataset` TRL takes pre-tokenised: `input_ids` and `assistant_masks`."""
    from datasets import Dataset

    return Dataset.from_dict({"input_ids": split.input_ids, "assistant_masks": split.assistant_masks})


class Candidate(BaseModel):
    """One training run (the only one, or one learning rate of a sweep)."""

    model_config = ConfigDict(extra="forbid")

    learning_rate: float
    out: Path
    adapter: Path
    steps: int
    train_loss: float | None
    eval_loss: float | None
    seconds: float
    tokens_per_s: float | None


def _steps_tokens(split: TokenisedSplit, config: SFTStageConfig) -> list[int]:
    """Tokens per optimiser step in dataset order (an estimate under shuffling: the mean is exact)."""
    per_step = config.per_device_train_batch_size * config.gradient_accumulation_steps
    lengths = [len(ids) for ids in split.input_ids]
    return [sum(lengths[i : i + per_step]) for i in range(0, len(lengths), per_step)]


def lora_config(config: SFTStageConfig) -> Any:
    """The PEFT LoRA config of a stage config (`all-linear` as PEFT's shorthand)."""
    from peft import LoraConfig

    targets: str | list[str] = config.lora_target_modules
    if targets == ["all-linear"]:
        targets = "all-linear"
    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=targets,
        task_type="CAUSAL_LM",
    )


def sft_args(config: SFTStageConfig, lr: float, output_dir: Path, *, bf16: bool) -> Any:
    """TRL `SFTConfig` for one run: the stage's fields; saving, evaluation and tqdm are the stage's own."""
    import torch
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(output_dir),
        learning_rate=lr,
        num_train_epochs=config.num_train_epochs,
        max_steps=config.max_steps or -1,
        per_device_train_batch_size=config.per_device_train_batch_size,
        per_device_eval_batch_size=config.per_device_train_batch_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        gradient_checkpointing=config.gradient_checkpointing,
        max_length=config.max_length,
        warmup_steps=config.warmup_ratio,  # transformers 5: a float in [0, 1) is a ratio of the steps
        lr_scheduler_type=config.lr_scheduler_type,
        weight_decay=config.weight_decay,
        logging_steps=config.logging_steps,
        bf16=bf16,
        fp16=False,
        seed=config.seed,
        data_seed=config.seed,
        save_strategy="no",
        eval_strategy="no",
        **trainer_args(config.report_to, config.out, f"sft-lr{lr:g}" if config.lr_sweep else "sft"),
        disable_tqdm=True,
        dataset_num_proc=None,
        dataloader_pin_memory=torch.cuda.is_available(),
    )


def train_candidate(
    config: SFTStageConfig,
    tokenizer: Any,
    train: TokenisedSplit,
    evaluation: TokenisedSplit,
    lr: float,
    out: Path,
) -> Candidate:
    """One LoRA SFT run at learning rate `lr`: adapter in `out/adapter`, metrics in `out/metrics.jsonl`."""
    import torch
    from trl import SFTTrainer

    from shoparena.train.checkpoint import load_causal_lm, save_adapter

    torch.manual_seed(config.seed)
    model = load_causal_lm(config.model, dtype=config.dtype, attn_implementation=config.attn_implementation)
    bf16 = next(model.parameters()).dtype == torch.bfloat16
    peft_config = lora_config(config)
    args = sft_args(config, lr, out / "trainer", bf16=bf16)
    out.mkdir(parents=True, exist_ok=True)
    log = MetricsLog(out / METRICS_FILE, stage="sft", peak_learning_rate=lr)
    callbacks = [metrics_callback(log, _steps_tokens(train, config))]
    if config.progress:
        callbacks.append(progress_callback(f"sft lr={lr:g}"))
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=trainer_dataset(train),
        eval_dataset=trainer_dataset(evaluation) if evaluation.input_ids else None,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=callbacks,
    )
    from transformers import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # metrics.jsonl and the progress bar report the logs
    direct_trainer(trainer, config.out, f"sft-lr{lr:g}" if config.lr_sweep else "sft")
    started = time.monotonic()
    result = trainer.train()
    seconds = time.monotonic() - started
    eval_loss = None
    if evaluation.input_ids:
        metrics = trainer.evaluate()
        eval_loss = metrics.get("eval_loss")
        log.write({"step": trainer.state.global_step, "eval_loss": eval_loss, "final": True})
    log.close()
    adapter = out / ADAPTER_DIR
    steps = trainer.state.global_step
    seen = sum(_steps_tokens(train, config)[:steps])
    if trainer.is_world_process_zero():
        save_adapter(trainer.model, tokenizer, adapter, config.model)
        if config.merge:
            from shoparena.train.checkpoint import save_merged

            save_merged(trainer.model, tokenizer, out / MERGED_DIR)
        shutil.rmtree(out / "trainer", ignore_errors=True)
    return Candidate(
        learning_rate=lr,
        out=out,
        adapter=adapter,
        steps=steps,
        train_loss=result.training_loss,
        eval_loss=eval_loss,
        seconds=round(seconds, 3),
        tokens_per_s=round(seen / seconds, 2) if seconds > 0 else None,
    )


def _load_rows(
    config: SFTStageConfig, train_rows: list[dict] | None, eval_rows: list[dict] | None
) -> CorpusSplits:
    if train_rows is not None:
        return CorpusSplits(path=config.out, train=train_rows, eval=eval_rows or [])
    source = config.corpus or config.data
    if source is None:
        raise DataError("sft: give --corpus (a corpus directory) or --data (a rows file)")
    splits = read_training_data(source)
    if eval_rows is not None:
        splits = splits.model_copy(update={"eval": eval_rows})
    return splits


@cleans_up
def run_sft(
    config: SFTStageConfig, *, train_rows: list[dict] | None = None, eval_rows: list[dict] | None = None
) -> StageResult:
    """Run LoRA SFT as `config` says, on `train_rows`/`eval_rows` when given, else on `config.corpus` or
    `config.data`. Writes the adapter, resolved config, metrics.jsonl, mask_check.json and report.md."""
    from shoparena.train.checkpoint import load_tokenizer

    started = time.monotonic()
    out = config.out
    out.mkdir(parents=True, exist_ok=True)
    main = is_main_process()  # under `accelerate launch`, rank 0 alone writes the stage's files
    config_path = config.write_resolved() if main else out / RESOLVED_CONFIG
    tokenizer = load_tokenizer(config.model)
    splits = _load_rows(config, train_rows, eval_rows)
    if not splits.train:
        raise DataError(f"sft: no training rows in {splits.path}")
    if config.mode == "full":
        from shoparena.train.full_sft import run_full_stage

        held_out = splits.eval[: config.eval_rows] if config.eval_rows else splits.eval
        return run_full_stage(config, tokenizer, splits.train, held_out)
    checks: list[dict] = []
    train = tokenise_rows(tokenizer, splits.train, "train", config.max_length, checks, config.mask_check_rows)
    held_out = splits.eval[: config.eval_rows] if config.eval_rows else splits.eval
    evaluation = tokenise_rows(tokenizer, held_out, "eval", config.max_length)
    dropped = train.dropped + evaluation.dropped
    if main:
        write_mask_check(out / MASK_CHECK_FILE, checks, tokenizer_path=str(config.model))
        (out / "dropped.jsonl").write_bytes(b"".join(orjson.dumps(d.model_dump()) + b"\n" for d in dropped))
    if not train.input_ids:
        raise DataError(
            f"sft: every training row was dropped ({len(train.dropped)}); see {out / 'dropped.jsonl'}"
        )
    if config.lr_sweep and not evaluation.input_ids:
        raise DataError("sft: --lr-sweep chooses by held-out loss, but the eval split is empty")

    if config.lr_sweep:
        candidates = [
            train_candidate(config, tokenizer, train, evaluation, lr, out / "sweep" / f"lr-{lr:g}")
            for lr in config.sweep_lrs
        ]
        winner = min(candidates, key=lambda c: c.eval_loss if c.eval_loss is not None else float("inf"))
        if main:
            _keep_winner(config, winner, candidates)
    else:
        winner = train_candidate(config, tokenizer, train, evaluation, config.learning_rate, out)
        candidates = [winner]

    reasons: dict[str, int] = {}
    for row in dropped:
        reasons[f"{row.split}:{row.reason}"] = reasons.get(f"{row.split}:{row.reason}", 0) + 1
    result = StageResult(
        stage="sft",
        out=out,
        checkpoint=out / ADAPTER_DIR,
        merged=out / MERGED_DIR if config.merge else None,
        metrics=out / METRICS_FILE,
        report=out / REPORT_FILE,
        config=config_path,
        steps=winner.steps,
        train_loss=winner.train_loss,
        eval_loss=winner.eval_loss,
        tokens=train.trained_tokens,
        seconds=round(time.monotonic() - started, 3),
        details={
            "learning_rate": winner.learning_rate,
            "train_rows": len(train.input_ids),
            "eval_rows": len(evaluation.input_ids),
            "dropped": reasons,
            "tokens_per_s": winner.tokens_per_s,
            "corpus_manifest_sha256": splits.manifest_sha256,
        },
    )
    if main:
        _report(config, result, candidates, train, evaluation)
    return result


def _keep_winner(config: SFTStageConfig, winner: Candidate, candidates: list[Candidate]) -> None:
    """The sweep's winner becomes the stage's adapter (and merged model, metrics); sweep.json records all."""
    out = config.out
    shutil.copytree(winner.adapter, out / ADAPTER_DIR, dirs_exist_ok=True)
    if config.merge:
        shutil.copytree(winner.out / MERGED_DIR, out / MERGED_DIR, dirs_exist_ok=True)
    (out / METRICS_FILE).write_bytes((winner.out / METRICS_FILE).read_bytes())
    sweep = {
        "chosen_by": "eval_loss",
        "winner": winner.learning_rate,
        "candidates": [c.model_dump(mode="json") for c in candidates],
    }
    (out / "sweep.json").write_bytes(orjson.dumps(sweep, option=orjson.OPT_INDENT_2))


def _report(
    config: SFTStageConfig,
    result: StageResult,
    candidates: list[Candidate],
    train: TokenisedSplit,
    evaluation: TokenisedSplit,
) -> None:
    facts = {
        "model": config.model,
        "data": config.corpus or config.data or "rows passed in",
        "train rows (kept)": len(train.input_ids),
        "eval rows (kept)": len(evaluation.input_ids),
        "dropped": ", ".join(f"{k} {v}" for k, v in result.details["dropped"].items()) or "none",
        "tokens (train, all / assistant)": f"{train.tokens} / {train.trained_tokens}",
        "learning rate": result.details["learning_rate"],
        "steps": result.steps,
        "train loss": result.train_loss,
        "eval loss": result.eval_loss,
        "tokens/s": result.details["tokens_per_s"],
        "LoRA": f"r={config.lora_r} alpha={config.lora_alpha} targets={','.join(config.lora_target_modules)}",
        "max_length": config.max_length,
        "adapter": result.checkpoint,
        "seconds": result.seconds,
    }
    sections = {
        "Loss mask": f"`{MASK_CHECK_FILE}`: masked-in spans of the first rows decoded and verified assistant-only.",
    }
    if len(candidates) > 1:
        rows = [[c.learning_rate, c.steps, c.train_loss, c.eval_loss, c.out.name] for c in candidates]
        sections["Learning-rate sweep (chosen by eval loss)"] = markdown_table(
            ["lr", "steps", "train loss", "eval loss", "dir"], rows
        )
    write_report(result.report, "SFT (LoRA)", facts, sections)
