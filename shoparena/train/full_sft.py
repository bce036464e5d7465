"""Full fine-tuning (every weight trained) with a plain torch loop: for small models and models trained from
scratch, where LoRA is the wrong tool (SPEC §9).

Written for the cost structure of small models on the shop task: rows are a few hundred to a few thousand
tokens, of which only ~10% are assistant output, and at a few million parameters the output layer is
most of the compute. So the loss is computed only at assistant positions — the transformer body runs over
the whole row, but `lm_head` runs on the hidden states of the trained positions alone — and rows are
bucketed by length into batches of about `batch_tokens` padded tokens (shuffled batch order, one epoch
after another until the budget ends). The learning-rate schedule is linear warm-up then cosine over the
run's budget, measured in steps or, with `minutes`, in wall time (so a time-boxed proof anneals properly).
bf16 autocast on CUDA devices that support it; float32 elsewhere.

Rows are rendered by `chat_render.render_row` (the serving rendering), the same as LoRA SFT.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from shoparena.train.chat_render import render_row
from shoparena.train.reporting import REPORT_TO_HELP, Reporter, ReportTo


class FullSFTSettings(BaseModel):
    """How a full fine-tuning run trains; `minutes` or `max_steps` bounds it (both: the first reached)."""

    model_config = ConfigDict(extra="forbid")

    learning_rate: float = Field(2e-3, gt=0)
    min_lr_ratio: float = Field(0.1, ge=0, le=1)
    warmup_steps: int = Field(30, ge=0)
    weight_decay: float = Field(0.1, ge=0)
    batch_tokens: int = Field(8192, ge=64, description="Padded tokens per batch (length-bucketed rows).")
    share_prefix: bool = Field(True, description="Run the rows' common prefix once per batch (cache).")
    max_length: int = Field(4096, ge=16)
    epochs: float | None = Field(None, gt=0, description="Stop after this many passes over the rows.")
    max_steps: int | None = Field(None, ge=1)
    minutes: float | None = Field(None, gt=0)
    grad_clip: float = Field(1.0, gt=0)
    seed: int = 0
    log_every: int = Field(10, ge=1)
    device: str = "cpu"
    report_to: ReportTo = Field("none", description=REPORT_TO_HELP)
    run_stage: str = Field("sft", description="The stage name TensorBoard/wandb show the run under.")


class EncodedRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input_ids: list[int]
    mask: list[int]


def encode_rows(
    tokenizer: Any, rows: list[dict], max_length: int, check_rows: int = 64
) -> tuple[list[EncodedRow], dict[str, int]]:
    """Rows rendered as served; too long / unrenderable / nothing-to-train rows are counted, not kept.
    The first `check_rows` are also compared with the tokenizer's own chat template (jinja is slow)."""
    kept: list[EncodedRow] = []
    dropped = {"too_long": 0, "unrenderable": 0, "no_assistant_tokens": 0}
    for index, row in enumerate(rows):
        try:
            rendered = render_row(tokenizer, row, check_template=index < check_rows)
        except Exception:  # a row the template cannot render is dropped and counted
            dropped["unrenderable"] += 1
            continue
        if len(rendered.input_ids) > max_length:
            dropped["too_long"] += 1
        elif not rendered.trained_tokens:
            dropped["no_assistant_tokens"] += 1
        else:
            kept.append(EncodedRow(input_ids=rendered.input_ids, mask=rendered.assistant_mask))
    return kept, dropped


def shared_prefix(rows: list[EncodedRow]) -> int:
    """How many leading tokens every row shares (system prompt, tools), short of any trained token."""
    first = rows[0].input_ids
    length = min(len(r.input_ids) for r in rows)
    for row in rows:
        n = 0
        while n < length and row.input_ids[n] == first[n] and not row.mask[n]:
            n += 1
        length = n
    return max(0, length - 1)


def without_prefix(rows: list[EncodedRow], n: int) -> list[EncodedRow]:
    return [EncodedRow(input_ids=r.input_ids[n:], mask=r.mask[n:]) for r in rows]


def bucket_batches(rows: list[EncodedRow], batch_tokens: int, rng: random.Random) -> list[list[int]]:
    """Row indices grouped by similar length, each group's padded size within `batch_tokens`."""
    order = sorted(range(len(rows)), key=lambda i: (len(rows[i].input_ids), rng.random()))
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        longest = max([len(rows[i].input_ids) for i in current] + [len(rows[index].input_ids)])
        if current and longest * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches


def collate(rows: list[EncodedRow], pad_id: int, device: str):
    import torch

    width = max(len(r.input_ids) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    trained = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, row in enumerate(rows):
        n = len(row.input_ids)
        ids[i, :n] = torch.tensor(row.input_ids)
        attention[i, :n] = 1
        trained[i, :n] = torch.tensor(row.mask, dtype=torch.bool)
    return ids.to(device), attention.to(device), trained.to(device)


def cache_keyword(module: Any) -> str:
    """The key/value cache's name in `module.forward` and its outputs: `cache` in transformers ≥ 5.2x
    (`past_key_values` is deprecated there and warns on every call), `past_key_values` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(module.forward).parameters else "past_key_values"


def assistant_loss(model: Any, ids, attention, trained, prefix=None):
    """Summed next-token loss over assistant positions and their count; `lm_head` runs only where a
    target is trained. `prefix`: token ids every row of the batch starts with (left out of `ids`): run
    once and shared as the rows' key/value cache, gradients included."""
    import torch
    import torch.nn.functional as F

    if prefix is None:
        hidden = model.model(input_ids=ids, attention_mask=attention).last_hidden_state
    else:
        keyword = cache_keyword(model.model)
        shared = model.model(input_ids=prefix[None], use_cache=True)
        cache = getattr(shared, keyword)
        for layer in cache.layers:
            layer.keys = layer.keys.expand(ids.shape[0], -1, -1, -1)
            layer.values = layer.values.expand(ids.shape[0], -1, -1, -1)
        full = torch.cat([attention.new_ones((ids.shape[0], prefix.shape[0])), attention], dim=1)
        hidden = model.model(input_ids=ids, attention_mask=full, **{keyword: cache}).last_hidden_state
    targets = trained[:, 1:]
    selected = hidden[:, :-1][targets]
    logits = model.lm_head(selected).float()
    labels = ids[:, 1:][targets]
    return F.cross_entropy(logits, labels, reduction="sum"), int(labels.numel())


def autocast_dtype(device: str):
    import torch

    if device.startswith("cuda") and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return None


def lr_factor(progress: float, step: int, settings: FullSFTSettings) -> float:
    if step < settings.warmup_steps:
        return (step + 1) / settings.warmup_steps
    cosine = 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))
    return settings.min_lr_ratio + (1 - settings.min_lr_ratio) * cosine


class TrainLog(BaseModel):
    """What a run measured: the loss curve (one point per `log_every` steps) and throughput."""

    model_config = ConfigDict(extra="forbid")

    curve: list[dict[str, float]] = Field(default_factory=list)
    steps: int = 0
    epochs: float = 0.0
    tokens: int = 0
    trained_tokens: int = 0
    seconds: float = 0.0
    tokens_per_s: float = 0.0
    final_loss: float | None = None
    eval_loss: float | None = None
    rows: int = 0
    dropped: dict[str, int] = Field(default_factory=dict)


def train_full(
    model: Any,
    tokenizer: Any,
    rows: list[dict],
    settings: FullSFTSettings,
    eval_rows: list[dict] | None = None,
    say: Callable[[str], None] = lambda _: None,
    metrics_path: Path | None = None,
) -> TrainLog:
    """Train every weight of `model` on the assistant turns of `rows` (see the module doc)."""
    import torch

    torch.manual_seed(settings.seed)
    rng = random.Random(settings.seed)
    encoded, dropped = encode_rows(tokenizer, rows, settings.max_length)
    if not encoded:
        raise ValueError(f"full SFT: no usable rows ({dropped})")
    device = settings.device
    model.to(device)
    model.train()
    prefix = None
    if settings.share_prefix and (n_prefix := shared_prefix(encoded)) > 0:
        prefix = torch.tensor(encoded[0].input_ids[:n_prefix], device=device)
        encoded = without_prefix(encoded, n_prefix)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    other = [p for n, p in model.named_parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": settings.weight_decay}, {"params": other, "weight_decay": 0.0}],
        lr=settings.learning_rate,
        betas=(0.9, 0.95),
    )
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    amp = autocast_dtype(device)
    log = TrainLog(rows=len(encoded), dropped=dropped)
    batches_per_epoch = len(bucket_batches(encoded, settings.batch_tokens, random.Random(0)))
    total_steps = settings.max_steps
    if settings.epochs is not None:
        by_epochs = math.ceil(settings.epochs * batches_per_epoch)
        total_steps = by_epochs if total_steps is None else min(total_steps, by_epochs)
    if total_steps is None and settings.minutes is None:
        total_steps = batches_per_epoch
    budget = settings.minutes * 60 if settings.minutes is not None else None
    start = time.monotonic()
    window_loss, window_n = 0.0, 0
    if metrics_path is not None:
        metrics_path.parent.mkdir(parents=True, exist_ok=True)
    metrics = metrics_path.open("ab") if metrics_path else None
    reporter = Reporter(
        settings.report_to if metrics_path else "none",
        metrics_path.parent if metrics_path else Path("."),
        settings.run_stage,
        settings.model_dump(mode="json"),
    )
    epoch = 0
    done = False
    while not done:
        for position, batch in enumerate(bucket_batches(encoded, settings.batch_tokens, rng)):
            elapsed = time.monotonic() - start
            progress = max(
                (log.steps / total_steps) if total_steps else 0.0, (elapsed / budget) if budget else 0.0
            )
            if progress >= 1.0:
                done = True
                break
            factor = lr_factor(progress, log.steps, settings)
            for group in optimizer.param_groups:
                group["lr"] = settings.learning_rate * factor
            ids, attention, trained = collate([encoded[i] for i in batch], pad, device)
            with torch.autocast(device_type=device.split(":")[0], dtype=amp, enabled=amp is not None):
                loss_sum, n = assistant_loss(model, ids, attention, trained, prefix)
            loss = loss_sum / max(n, 1)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), settings.grad_clip)
            optimizer.step()
            log.steps += 1
            log.tokens += int(attention.sum()) + (len(batch) * len(prefix) if prefix is not None else 0)
            log.trained_tokens += n
            window_loss += float(loss_sum.detach())
            window_n += n
            log.epochs = epoch + (position + 1) / batches_per_epoch
            if log.steps % settings.log_every == 0:
                point = {
                    "step": log.steps,
                    "seconds": round(time.monotonic() - start, 1),
                    "epoch": round(log.epochs, 3),
                    "loss": round(window_loss / max(window_n, 1), 4),
                    "lr": settings.learning_rate * factor,
                    "tokens": log.tokens,
                }
                log.curve.append(point)
                if metrics:
                    metrics.write(orjson.dumps(point) + b"\n")
                    metrics.flush()
                reporter.log(point)
                say(
                    f"step {point['step']} · epoch {point['epoch']:.2f} · loss {point['loss']:.3f} · "
                    f"{point['seconds']:.0f} s"
                )
                log.final_loss = point["loss"]
                window_loss, window_n = 0.0, 0
        else:
            epoch += 1
    log.seconds = time.monotonic() - start
    log.tokens_per_s = log.tokens / log.seconds if log.seconds else 0.0
    if window_n:  # the last, partial window is a point of the curve too (a short run has only it)
        log.final_loss = window_loss / window_n
        point = {"step": log.steps, "seconds": round(log.seconds, 1), "epoch": round(log.epochs, 3),
                 "loss": round(log.final_loss, 4), "tokens": log.tokens}  # fmt: skip
        log.curve.append(point)
        if metrics:
            metrics.write(orjson.dumps(point) + b"\n")
        reporter.log(point)
    if metrics:
        metrics.close()
    if eval_rows:
        log.eval_loss = evaluate_loss(model, tokenizer, eval_rows, settings)
        if log.eval_loss is not None:
            reporter.log({"eval_loss": log.eval_loss}, step=log.steps)
    reporter.close()
    model.eval()
    return log


def evaluate_loss(model: Any, tokenizer: Any, rows: list[dict], settings: FullSFTSettings) -> float | None:
    """Teacher-forced assistant-token loss on held-out rows."""
    import torch

    encoded, _ = encode_rows(tokenizer, rows, settings.max_length)
    if not encoded:
        return None
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    amp = autocast_dtype(settings.device)
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for batch in bucket_batches(encoded, settings.batch_tokens, random.Random(0)):
            ids, attention, trained = collate([encoded[i] for i in batch], pad, settings.device)
            with torch.autocast(
                device_type=settings.device.split(":")[0], dtype=amp, enabled=amp is not None
            ):
                loss_sum, n = assistant_loss(model, ids, attention, trained)
            total += float(loss_sum)
            count += n
    return total / count if count else None


MODEL_DIR = "model"


def run_full_stage(config: Any, tokenizer: Any, train_rows: list[dict], eval_rows: list[dict]) -> Any:
    """`train sft --mode full`: every weight trained (`train_full`), the model and its tokenizer saved
    whole in OUT/model (loads as `hf:OUT/model`), metrics.jsonl and report.md beside it. `config` is an
    `SFTStageConfig`; its LoRA fields do not apply."""
    import torch

    from shoparena.train.checkpoint import load_causal_lm
    from shoparena.train.config import RESOLVED_CONFIG, StageResult
    from shoparena.train.metrics import METRICS_FILE, REPORT_FILE, write_report

    started = time.monotonic()
    out = config.out
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = load_causal_lm(config.model, dtype="float32", attn_implementation=config.attn_implementation)
    model.requires_grad_(True)  # from an adapter, the merged chain comes back frozen (PEFT froze its base)
    settings = FullSFTSettings(
        learning_rate=config.learning_rate,
        warmup_steps=max(1, round(config.warmup_ratio * 100)),
        weight_decay=config.weight_decay,
        batch_tokens=config.batch_tokens,
        max_length=config.max_length,
        epochs=config.num_train_epochs,
        max_steps=config.max_steps,
        seed=config.seed,
        log_every=config.logging_steps,
        device=device,
        report_to=config.report_to,
    )
    metrics = out / METRICS_FILE
    metrics.unlink(missing_ok=True)
    log = train_full(
        model, tokenizer, train_rows, settings, eval_rows=eval_rows or None, metrics_path=metrics
    )
    target = out / MODEL_DIR
    model.to("cpu").save_pretrained(target)
    tokenizer.save_pretrained(target)
    facts = {
        "mode": "full",
        "rows": log.rows,
        "steps": log.steps,
        "epochs": round(log.epochs, 3),
        "final train loss": log.final_loss,
        "eval loss": log.eval_loss,
        "tokens/s": round(log.tokens_per_s),
        "device": device,
    }
    write_report(out / REPORT_FILE, "SFT (full fine-tuning)", facts)
    return StageResult(
        stage="sft",
        out=out,
        checkpoint=target,
        metrics=metrics,
        report=out / REPORT_FILE,
        config=out / RESOLVED_CONFIG,
        steps=log.steps,
        train_loss=log.final_loss,
        eval_loss=log.eval_loss,
        tokens=log.trained_tokens,
        seconds=round(time.monotonic() - started, 3),
        details={"mode": "full", "dropped": log.dropped, "tokens_per_s": log.tokens_per_s},
    )
