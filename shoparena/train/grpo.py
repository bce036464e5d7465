"""Stage 5: Dr. GRPO turn-level RL on multi-turn harness rollouts (SPEC §9.5, the paper's v17/v18/v19).

The update is TRL's `GRPOTrainer` with `loss_type="dr_grpo"` and `scale_rewards="none"`: the
advantage of a rollout is its reward minus its group's mean (no division by the group's std), the
loss is per token and divided by a constant (`max_completion_length`, Dr. GRPO's fix for the length
bias), and β weighs the KL to the reference policy (the base model: the LoRA adapter switched off).

TRL's own tool loop runs Python callables on one prompt; our episodes need the harness (a catalogue,
a step cap, the verified call log, the strict scorer), so the rollouts come from our loop
(`multiturn.run_rollout`) through TRL's `rollout_func`: for each of the B × K prompts it plays the
episode turn by turn in eval mode and hands TRL the prompt ids, the completion ids exactly as
generated (every turn, every tool turn), and `env_mask` (1 = model-generated, the only tokens the
loss sees). The rewards ride along as extra fields, one reward function a term of the reward formula
(`rewards.RewardFormula`: `outcome` weight 1, `tool_match` weight `tool_weight`, `prm` weight
`prm_weight` with a process-reward head). Sampling log-probabilities are not returned (None): TRL uses them
only to correct vLLM's sampler mismatch, and these rollouts sample with the trained model itself.

Before every update (`_compute_loss`, each micro-batch, before backward) the trainer proves the loss
mask it is about to use is exactly the generated spans of the rollout each row came from
(`multiturn.assert_generated_only`); a row the rollout loop did not produce fails too.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shoparena.records.options import Profile, SimilarityName
from shoparena.train.config import RESOLVED_CONFIG, StageConfig, StageResult, cleans_up
from shoparena.train.metrics import (
    METRICS_FILE,
    REPORT_FILE,
    MetricsLog,
    is_main_process,
    progress_callback,
    write_report,
)
from shoparena.train.multiturn import (
    HFGenerator,
    MaskError,
    Rollout,
    RolloutSettings,
    TemplateFrame,
    assert_generated_only,
    assert_loss_in_assistant_turns,
    run_rollouts,
)
from shoparena.train.rewards import (
    RewardFormula,
    TeacherSet,
    hallucinated_ids,
    load_teachers,
    model_steps,
    tool_match,
)

VARIANTS: dict[str, dict[str, Any]] = {
    "v17": {
        "batch_problems": 3,
        "num_generations": 6,
        "learning_rate": 1e-6,
        "beta": 0.1,
        "tool_weight": 0.0,
        "max_rollout_steps": 15,
    },
    "v18": {
        "batch_problems": 8,
        "num_generations": 6,
        "learning_rate": 5e-7,
        "beta": 0.2,
        "tool_weight": 0.0,
        "max_rollout_steps": 15,
    },
    "v19": {
        "batch_problems": 8,
        "num_generations": 6,
        "learning_rate": 5e-7,
        "beta": 0.2,
        "tool_weight": 0.5,
        "max_rollout_steps": 25,
    },
}
"""The paper's Dr. GRPO runs: v17 (B 3, K 6, lr 1e-6, β 0.1, outcome only, 15 steps a rollout), v18
(B 8, lr 5e-7, β 0.2), v19 (v18 + reward = outcome + 0.5 × tool-match, 25 steps a rollout)."""


class GRPOStageConfig(StageConfig):
    """Everything `shoparena train grpo` needs. `variant` seeds B, K, lr, β, tool_weight and the rollout
    step cap with the paper's numbers; a config file's keys and command-line flags override them."""

    stage: ClassVar[str] = "grpo"

    model: Path = Field(
        description="Checkpoint to start from: a model directory or an earlier stage's adapter directory."
    )
    catalog: Path = Field(description="Catalogue directory the harness tools search.")
    problems: Path = Field(description="Training problems (a suite file); the leak guard filters them.")
    teacher_trajectories: Path | None = Field(
        None,
        description="Teacher runs (trajectories.jsonl or corpus rows) for the tool-match reward.",
    )
    corpus: Path | None = Field(
        None, description="Corpus dir: problems of its eval and never-touch pools are refused."
    )
    never_touch: list[str] = Field(
        default_factory=list, description="More never-touch suite files for the leak guard."
    )
    variant: Literal["v17", "v18", "v19"] = Field(
        "v17",
        description="Paper run: v17 (outcome, B 3, K 6, lr 1e-6, β 0.1, 15 steps), v18 (B 8, lr 5e-7, "
        "β 0.2), v19 (v18 + 0.5 × tool-match, 25 steps).",
    )
    batch_problems: int = Field(3, ge=1, description="B: problems per optimizer step.")
    num_generations: int = Field(
        6, ge=2, description="K: rollouts per problem (the group whose mean is the baseline)."
    )
    learning_rate: float = Field(1e-6, gt=0, description="Learning rate of the LoRA adapter.")
    beta: float = Field(0.1, ge=0, description="KL weight to the reference policy (the base model).")
    tool_weight: float = Field(0.0, ge=0, description="reward = outcome + tool_weight × tool-match.")
    prm_head: Path | None = Field(
        None,
        description="A process-reward head (`train prm`, OUT/head): adds prm_weight × its mean predicted "
        "rule over a rollout's decision points.",
    )
    prm_weight: float = Field(0.0, ge=0, description="Weight of the process-reward term (needs --prm-head).")
    max_rollout_steps: int = Field(15, ge=1, description="Harness steps (model turns) a rollout may take.")
    max_new_tokens: int = Field(512, ge=1, description="Tokens one model turn may generate.")
    rollout_batch_size: int = Field(
        16, ge=1, description="Episodes whose turns are sampled together in one generate call."
    )
    max_completion_tokens: int = Field(
        8192,
        ge=16,
        description="Tokens of a whole rollout after the prompt (turns + tool results); Dr. GRPO's loss constant.",
    )
    temperature: float = Field(1.0, gt=0, description="Sampling temperature of the rollouts.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling of the rollouts.")
    enable_thinking: bool | None = Field(None, description="Passed to the chat template when set.")
    profile: Profile = Field("oro7", description="Harness tool profile.")
    similarity: SimilarityName = Field(
        "minilm", description="Title similarity of the strict scorer (minilm: the arena's)."
    )
    num_train_epochs: float = Field(1.0, gt=0, description="Epochs over the problems (unless --max-steps).")
    lora_r: int = Field(16, ge=1, description="LoRA rank.")
    lora_alpha: int = Field(32, ge=1, description="LoRA alpha.")
    lora_dropout: float = Field(0.05, ge=0, lt=1, description="LoRA dropout (off during rollouts).")
    lora_target_modules: list[str] = Field(
        default_factory=lambda: ["all-linear"],
        description="Modules LoRA adapts: all-linear, or names such as q_proj k_proj v_proj o_proj.",
    )
    gradient_checkpointing: bool = Field(False, description="Recompute activations in the update.")
    merge: bool = Field(False, description="Also write the adapter merged into the base model (merged/).")
    attn_implementation: str = Field("sdpa", description="Attention kernel: sdpa, eager, flash_attention_2.")
    dtype: str = Field("auto", description="auto (bf16 on a GPU that has it, else fp32), float32, bfloat16.")
    logging_steps: int = Field(1, ge=1, description="Optimizer steps per metrics.jsonl line.")

    @model_validator(mode="before")
    @classmethod
    def _variant_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict):
            variant = data.get("variant", "v17")
            if variant not in VARIANTS:
                raise ValueError(f"unknown GRPO variant {variant!r}; choose one of {', '.join(VARIANTS)}")
            data = {**VARIANTS[variant], **data}
        return data

    @model_validator(mode="after")
    def _teachers_for_tool_match(self) -> GRPOStageConfig:
        if self.tool_weight > 0 and self.teacher_trajectories is None:
            raise ValueError(
                f"variant {self.variant} has tool_weight {self.tool_weight}: give --teacher-trajectories"
            )
        if self.prm_weight > 0 and self.prm_head is None:
            raise ValueError(f"prm_weight {self.prm_weight}: give --prm-head (a `train prm` head directory)")
        return self

    def reward_formula(self) -> RewardFormula:
        return RewardFormula(tool_weight=self.tool_weight, prm_weight=self.prm_weight)


class RolloutStats(BaseModel):
    """What the rollouts of one logging window did (merged into each metrics.jsonl line)."""

    model_config = ConfigDict(extra="forbid")

    rollouts: int = 0
    successes: int = 0
    partial_successes: int = 0
    """Rollouts with some rule credit but no strict success."""
    recommended: int = 0
    hallucinated_ids: int = 0
    tool_match_sum: float = 0.0
    tool_match_n: int = 0
    steps_sum: int = 0
    completion_tokens_sum: int = 0
    generated_tokens_sum: int = 0
    mask_checks: int = 0

    def line(self) -> dict[str, float | int | None]:
        n = max(self.rollouts, 1)
        return {
            "rollouts": self.rollouts,
            "success_rate": self.successes / n if self.rollouts else None,
            "partial_successes": self.partial_successes,
            "recommend_rate": self.recommended / n if self.rollouts else None,
            "hallucinated_ids": self.hallucinated_ids,
            "tool_match": self.tool_match_sum / self.tool_match_n if self.tool_match_n else None,
            "mean_steps": self.steps_sum / n if self.rollouts else None,
            "mean_completion_tokens": self.completion_tokens_sum / n if self.rollouts else None,
            "mean_generated_tokens": self.generated_tokens_sum / n if self.rollouts else None,
            "mask_checks": self.mask_checks,
        }


class MaskGuard:
    """Holds the rollouts of the current generation and proves each update's loss mask against them."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.by_completion: dict[tuple[int, ...], Rollout] = {}
        self.checks = 0

    def register(self, rollouts: list[Rollout]) -> None:
        self.by_completion = {tuple(r.completion_ids): r for r in rollouts}

    def check(self, completion_ids: Any, completion_mask: Any, tool_mask: Any | None) -> int:
        """Assert every row's loss mask is its rollout's generated spans; returns the rows checked."""
        loss_mask = completion_mask if tool_mask is None else completion_mask * tool_mask
        rows = completion_ids.shape[0]
        for row in range(rows):
            length = int(completion_mask[row].sum())
            if not bool(completion_mask[row, :length].all()):
                raise MaskError(f"row {row}: the completion mask is not contiguous (padding inside the row)")
            ids = tuple(completion_ids[row, :length].tolist())
            rollout = self.by_completion.get(ids)
            if rollout is None:
                raise MaskError(f"row {row} of the update is not a completion the rollout loop produced")
            mask = loss_mask[row, :length].tolist()
            assert_generated_only(rollout, mask)
            assert_loss_in_assistant_turns(self.tokenizer, rollout, mask)
        self.checks += rows
        return rows


def reward_function(term: str) -> Callable[..., list[float]]:
    """TRL's reward function for one term of the formula: it reads the field the rollout carries
    (TRL logs it as `rewards/TERM/mean`)."""

    def read(prompts: Any, completions: Any, **fields: Any) -> list[float]:
        return [float(v) for v in fields[term]]

    read.__name__ = term
    return read


def process_reward(model: Any, messages: list[dict], tools: list[dict] | None) -> float:
    """The head's mean predicted rule over an episode's decision points (0 when it made no call)."""
    steps = model.predict(messages, tools)
    return sum(step.values["rule"] for step in steps) / len(steps) if steps else 0.0


def load_training_problems(config: GRPOStageConfig, say: Callable[[str], None]) -> tuple[list, dict | None]:
    """The problems GRPO may sample, after the leak guard (when a corpus is given)."""
    from shoparena.scoring.suite import load_problem_file
    from shoparena.train.leak_guard import guard_problems, problem_key

    problems = load_problem_file(config.problems)
    if config.corpus is None:
        say("leak guard: no --corpus given, so eval/never-touch problems cannot be refused; pass the corpus")
        # id-less problems get the id the corpus would give them, so episodes and teachers key by it
        return [
            p if p.problem_id else p.model_copy(update={"problem_id": problem_key(p)}) for p in problems
        ], None

    report = guard_problems(problems, config.corpus, [Path(p) for p in config.never_touch] or None)
    say(report.summary())
    return report.kept, report.counts()


@cleans_up
def run_grpo(config: GRPOStageConfig, *, say: Callable[[str], None] = print) -> StageResult:
    """Run the stage: leak-guarded problems → multi-turn rollouts → Dr. GRPO updates → checkpoint + report."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import PrinterCallback, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from shoparena.harness.episode import Episode, load_shops
    from shoparena.index.catalog_dir import open_catalog
    from shoparena.scoring import RuleScorer, make_similarity
    from shoparena.train.checkpoint import load_causal_lm, load_tokenizer, save_adapter, save_merged
    from shoparena.train.reporting import direct_trainer, trainer_args

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental: chosen, see above
    started = time.perf_counter()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    main = is_main_process()  # under `accelerate launch`, rank 0 alone writes the stage's files
    config_path = config.write_resolved() if main else out / RESOLVED_CONFIG

    problems, guard_counts = load_training_problems(config, say)
    teachers = (
        load_teachers(config.teacher_trajectories)
        if config.teacher_trajectories
        else TeacherSet(by_problem={})
    )
    for reject in teachers.rejects[:5]:
        say(f"teacher trajectories: skipped {reject.reason}")
    if config.tool_weight > 0:
        without = [p for p in problems if p.problem_id not in teachers.by_problem]
        if without:
            say(f"tool-match: {len(without)} problem(s) have no teacher trajectory and are left out")
        problems = [p for p in problems if p.problem_id in teachers.by_problem]
    if not problems:
        raise ValueError(
            "train grpo: no problems left to train on (after the leak guard and the teacher filter)"
        )
    by_id = {p.problem_id: p for p in problems}
    if len(by_id) < config.batch_problems:
        raise ValueError(
            f"train grpo: {len(by_id)} distinct problem(s) left to train on, fewer than B = "
            f"{config.batch_problems} a step; give more problems or a smaller --batch-problems"
        )

    tokenizer = load_tokenizer(config.model)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    # a previous stage's adapter directory loads as its base chain merged: GRPO starts from that policy,
    # measures its KL to it, and the new adapter records that directory as its base (save_adapter)
    model = load_causal_lm(config.model, dtype=config.dtype, attn_implementation=config.attn_implementation)
    formula = config.reward_formula()
    prm_model = None
    if "prm" in formula.terms:
        from shoparena.train.prm import ProcessRewardModel

        prm_model = ProcessRewardModel(config.prm_head)  # its own frozen base: the policy moves, it does not
    use_bf16 = next(model.parameters()).dtype == torch.bfloat16
    limit = getattr(model.config, "max_position_embeddings", None)

    settings = RolloutSettings(
        max_rollout_steps=config.max_rollout_steps,
        max_new_tokens=config.max_new_tokens,
        max_completion_tokens=config.max_completion_tokens,
        temperature=config.temperature,
        top_p=config.top_p,
        profile=config.profile,
        enable_thinking=config.enable_thinking,
        context_limit=limit,
    )
    frame = TemplateFrame(tokenizer, settings)
    backend = open_catalog(config.catalog)
    shops = load_shops(config.catalog)
    scorer = RuleScorer(backend, make_similarity(config.similarity), mode="strict")
    guard = MaskGuard(tokenizer)
    rollouts_path = out / "rollouts.jsonl"
    if main:
        rollouts_path.write_text("")
    window = RolloutStats()
    totals = RolloutStats()

    def rollout_func(prompts: list, trainer: Any) -> dict[str, Any]:
        policy = trainer.accelerator.unwrap_model(trainer.model)
        generate = HFGenerator(policy, tokenizer, settings)
        episodes = [
            Episode.for_problem(
                by_id[prompt],
                backend,
                profile=settings.profile,
                step_cap=settings.max_rollout_steps,
                shops=shops,
            )
            for prompt in prompts
        ]
        rollouts = run_rollouts(episodes, frame, generate.batch, settings, config.rollout_batch_size)
        scores = scorer.score_many(
            [
                (
                    by_id[r.problem_id],
                    r.recommended_product_ids,
                    {"steps": r.steps, "answered": r.recommended_product_ids is not None},
                )
                for r in rollouts
            ]
        )
        outcome = [s.rule for s in scores]
        matches: list[float] = []
        for r in rollouts:
            teacher = teachers.by_problem.get(r.problem_id)
            matches.append(tool_match(model_steps(r.calls), teacher.steps) if teacher else 0.0)
            for stats in (window, totals):
                if teacher:
                    stats.tool_match_sum += matches[-1]
                    stats.tool_match_n += 1
        process = (
            [process_reward(prm_model, episode.messages, episode.tools) for episode in episodes]
            if prm_model is not None
            else [0.0] * len(rollouts)
        )
        lines = []
        for r, s, match, prm in zip(rollouts, scores, matches, process, strict=True):
            invented = hallucinated_ids(r.calls)
            lines.append(
                {
                    "step": trainer.state.global_step + 1,
                    "problem_id": r.problem_id,
                    "reward": formula.total({"outcome": s.rule, "tool_match": match, "prm": prm}),
                    "outcome": s.rule,
                    "success": s.success,
                    "tool_match": match,
                    **({"prm": prm} if prm_model is not None else {}),
                    "steps": r.steps,
                    "end_reason": r.end_reason,
                    "recommended": r.recommended_product_ids,
                    "tools": [c.name for c in r.calls],
                    "hallucinated_ids": invented,
                    "completion_tokens": len(r.completion_ids),
                    "generated_tokens": sum(r.model_mask),
                }
            )
            for stats in (window, totals):
                stats.rollouts += 1
                stats.successes += int(s.success)
                stats.partial_successes += int(s.rule > 0 and not s.success)
                stats.recommended += int(r.recommended_product_ids is not None)
                stats.hallucinated_ids += len(invented)
                stats.steps_sum += r.steps
                stats.completion_tokens_sum += len(r.completion_ids)
                stats.generated_tokens_sum += sum(r.model_mask)
        guard.register(rollouts)
        if main:  # rank 0's rollouts (each process rolls out its own share of the batch)
            with rollouts_path.open("a") as handle:
                handle.writelines(json.dumps(line) + "\n" for line in lines)
        return {
            "prompt_ids": [r.prompt_ids for r in rollouts],
            "completion_ids": [r.completion_ids for r in rollouts],
            "logprobs": None,
            "env_mask": [r.model_mask for r in rollouts],
            "outcome": outcome,
            "tool_match": matches,
            **({"prm": process} if prm_model is not None else {}),
        }

    class MaskCheckedGRPOTrainer(GRPOTrainer):
        def _compute_loss(self, model, inputs):
            checked = guard.check(
                inputs["completion_ids"], inputs["completion_mask"], inputs.get("tool_mask")
            )
            window.mask_checks += checked
            totals.mask_checks += checked
            return super()._compute_loss(model, inputs)

    metrics_path = out / METRICS_FILE
    if main:
        metrics_path.unlink(missing_ok=True)
    log = MetricsLog(metrics_path, stage="grpo", variant=config.variant)
    clock = time.monotonic()

    class GRPOMetrics(TrainerCallback):
        """One metrics.jsonl line per logging step: TRL's loss/KL/reward numbers and the window's rollouts."""

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not logs or "loss" not in logs:
                return
            elapsed = time.monotonic() - clock
            log.write(
                {
                    "step": state.global_step,
                    "loss": logs.get("loss"),
                    "kl": logs.get("kl"),
                    "reward_mean": logs.get("reward"),
                    "reward_std": logs.get("reward_std"),
                    "outcome_mean": logs.get("rewards/outcome/mean"),
                    "tool_match_reward_mean": logs.get("rewards/tool_match/mean"),
                    **({"prm_reward_mean": logs.get("rewards/prm/mean")} if prm_model is not None else {}),
                    "learning_rate": logs.get("learning_rate"),
                    "grad_norm": logs.get("grad_norm"),
                    **window.line(),
                    "elapsed_s": round(elapsed, 3),
                    "generated_tokens_per_s": round(totals.generated_tokens_sum / elapsed, 2)
                    if elapsed
                    else None,
                }
            )
            window.__init__()

    callbacks: list[Any] = [GRPOMetrics()]
    if config.progress:
        callbacks.append(progress_callback(f"grpo {config.variant}"))

    # the "prompt" TRL hands rollout_func is the problem id: the episode builds the real prompt (system,
    # tools, query) through the chat template, and a plain string keeps TRL from parsing completions
    dataset = Dataset.from_list([{"prompt": p.problem_id} for p in problems])
    args = GRPOConfig(
        output_dir=str(out / "trainer"),
        learning_rate=config.learning_rate,
        beta=config.beta,
        loss_type="dr_grpo",
        scale_rewards="none",
        num_generations=config.num_generations,
        per_device_train_batch_size=config.num_generations,
        gradient_accumulation_steps=config.batch_problems,
        steps_per_generation=config.batch_problems,
        max_completion_length=config.max_completion_tokens,
        temperature=config.temperature,
        top_p=config.top_p,
        reward_weights=formula.weights,
        num_train_epochs=config.num_train_epochs,
        max_steps=config.max_steps or -1,
        disable_tqdm=True,
        logging_steps=config.logging_steps,
        save_strategy="no",
        **trainer_args(config.report_to, out, "grpo"),
        seed=config.seed,
        bf16=use_bf16,
        use_cpu=not torch.cuda.is_available(),
        gradient_checkpointing=config.gradient_checkpointing,
        remove_unused_columns=False,
        log_completions=False,
    )
    peft_config = LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules="all-linear"
        if config.lora_target_modules == ["all-linear"]
        else config.lora_target_modules,
        task_type="CAUSAL_LM",
    )
    trainer = MaskCheckedGRPOTrainer(
        model=model,
        reward_funcs=[reward_function(term) for term in formula.terms],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        rollout_func=rollout_func,
        callbacks=callbacks,
    )
    trainer.remove_callback(PrinterCallback)  # metrics.jsonl and the progress bar say it; no dicts on stdout
    direct_trainer(trainer, out, "grpo")
    try:
        train_output = trainer.train()
    finally:
        backend.close()
        log.close()

    policy = trainer.accelerator.unwrap_model(trainer.model)
    adapter_dir, merged_dir, report_path = (
        out / "adapter",
        (out / "merged" if config.merge else None),
        out / REPORT_FILE,
    )
    if main:
        save_adapter(policy, tokenizer, adapter_dir, config.model)
        if merged_dir is not None:
            save_merged(policy, tokenizer, merged_dir)
        shutil.rmtree(out / "trainer", ignore_errors=True)
        _report(report_path, config, train_output.global_step, totals, guard_counts, len(problems), teachers)
    return StageResult(
        stage="grpo",
        out=out,
        checkpoint=adapter_dir,
        merged=merged_dir,
        metrics=metrics_path,
        report=report_path,
        config=config_path,
        steps=train_output.global_step,
        train_loss=train_output.training_loss,
        tokens=totals.generated_tokens_sum,
        seconds=time.perf_counter() - started,
        details={
            "variant": config.variant,
            "rollouts": totals.rollouts,
            "rollouts_file": str(rollouts_path),
            "problems": len(problems),
            "teachers": len(teachers.by_problem),
            "leak_guard": guard_counts,
            "mask_checks": totals.mask_checks,
            **{k: v for k, v in totals.line().items() if k not in ("rollouts", "mask_checks")},
        },
    )


def _report(
    path: Path,
    config: GRPOStageConfig,
    steps: int,
    totals: RolloutStats,
    guard_counts: dict[str, int] | None,
    problems: int,
    teachers: TeacherSet,
) -> Path:
    guard = (
        ", ".join(f"{k} {v}" for k, v in guard_counts.items())
        if guard_counts
        else "not applied (no corpus given)"
    )
    facts: dict[str, Any] = {
        "model": str(config.model),
        "problems": problems,
        "leak guard": guard,
        "teacher trajectories": f"{len(teachers.by_problem)} problems ({len(teachers.rejects)} lines skipped)",
        "B × K": f"{config.batch_problems} × {config.num_generations}",
        "learning rate": config.learning_rate,
        "β (KL)": config.beta,
        "reward": config.reward_formula().describe()
        + (f" ({config.prm_head})" if config.prm_weight > 0 else ""),
        "steps a rollout": config.max_rollout_steps,
        "loss": f"dr_grpo (reward − group mean, no std; per-token ÷ {config.max_completion_tokens})",
        "optimizer steps": steps,
        "mask proofs": f"{totals.mask_checks} rows checked before their updates",
    }
    facts.update({f"rollouts: {k}": v for k, v in totals.line().items()})
    return write_report(
        path,
        f"Dr. GRPO ({config.variant})",
        facts,
        {
            "Files": "`metrics.jsonl` (per step: loss, KL, reward mean/std, tool-match, hallucinated ids, "
            "partial successes), `rollouts.jsonl` (one line per rollout), `adapter/` (+ `merged/`), "
            "`config.resolved.json`."
        },
    )
