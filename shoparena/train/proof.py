"""`shoparena train proof`: one command that shows the post-training stack teaches a model to shop.

No pretrained weights are needed: a catalogue and problems are generated, the concise reference teacher
(`reference:agentic`, `style=concise`) plays the training problems, its successful episodes become the
corpus (each row carries the system prompt it is served with), a Qwen3-shaped model is made from scratch
with a tokenizer trained on that corpus, trained with full fine-tuning for the budget (`full_sft`), and
then evaluated on held-out problems through `shoparena eval --agent hf:` (greedy, strict scoring, tool
profile upstream4): the untrained model first (the base row of Table 1), then the trained one. Held-out
problems share no gold product and no leak cluster with a training problem (leak guard). Product problems
are the headline; shop and voucher problems are reported apart (the concise teacher plays them in full,
and a small model is not expected to solve them).

Why this task is learnable by a small model: the teacher's product episodes are three short turns with
one fixed sentence of reasoning each — search with the request's own words and its price/service filter,
recommend the first hit's id, terminate — so the student has to learn to copy (the request into `q`, a
number into the price filter, an id from the tool result into `recommend_product`), which small
transformers learn quickly; the tokenizer is trained on these rows (short contexts, small vocabulary).

Writes DIR/proof.json (per-bucket held-out success with 95% Wilson intervals, base vs trained, the loss
curve, tokens/s, parameters, wall time, machine) and DIR/checkpoint/ (loads as `hf:DIR/checkpoint`), with
a model card (`proof_card`: its stages, data and held-out Table 1 row).
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from shoparena.train.full_sft import FullSFTSettings, train_full
from shoparena.train.proof_card import write_cards
from shoparena.train.reporting import REPORT_TO_HELP, ReportToOption

PROOF_FILE = "proof.json"
PROOF_SCHEMA = "shoparena.train-proof/1"
PROFILE = "upstream4"


class ProofPreset(BaseModel):
    """The sizes of one proof: data, model shape, training and evaluation."""

    model_config = ConfigDict(extra="forbid")

    products: int
    train_problems: int
    heldout_product: int = Field(ge=1)
    heldout_other: int = Field(ge=0, description="Held-out shop + voucher problems (split evenly).")
    vocab_size: int
    hidden_size: int
    layers: int
    heads: int
    intermediate_size: int
    batch_tokens: int
    learning_rate: float
    minutes: float
    max_new_tokens: int = 160
    max_turns: int = 6
    warmup_steps: int = 30
    base_problems: int = Field(20, ge=1, description="Held-out problems the untrained base is run on.")
    max_epochs: float | None = None
    rs_problems: int = Field(0, ge=0, description="Training problems rejection sampling draws on (0: none).")
    rs_samples: int = Field(4, ge=1, description="Rollouts per problem (T 0.9, top_p 0.95).")
    rs_minutes: float = Field(1.0, gt=0, description="Re-SFT budget on the kept rollouts + corpus rows.")
    grpo_steps: int = Field(0, ge=0, description="Dr. GRPO steps on top of the last checkpoint (0: none).")


PRESETS: dict[str, ProofPreset] = {
    # seconds: the plumbing end to end (tests, and a dry run of the GPU script)
    "tiny": ProofPreset(
        products=400,
        train_problems=24,
        heldout_product=4,
        heldout_other=2,
        vocab_size=600,
        hidden_size=32,
        layers=1,
        heads=2,
        intermediate_size=64,
        batch_tokens=4096,
        learning_rate=2e-3,
        minutes=0.1,
        max_new_tokens=24,
        max_turns=3,
        warmup_steps=2,
        base_problems=2,
    ),
    # a 2-core CPU, 40 minutes of training (the whole proof within the hour). Many distinct rows, about
    # two epochs: on 2,232 rows and 6.8 epochs the model memorised ids instead of copying them (0/60);
    # 13 more minutes on 4,933 fresh rows gave 20/60 held-out (docs/benchmarks.md)
    "cpu": ProofPreset(
        products=6000,
        train_problems=12000,
        heldout_product=60,
        heldout_other=20,
        vocab_size=4096,
        hidden_size=160,
        layers=3,
        heads=4,
        intermediate_size=448,
        batch_tokens=8192,
        learning_rate=3e-3,
        minutes=40,
        max_new_tokens=128,
        warmup_steps=20,
        base_problems=20,
    ),
    # one H100: 2 minutes of training; data, teacher, evaluations, RS and GRPO on top: ~8 minutes
    "gpu": ProofPreset(
        products=20000,
        train_problems=12000,
        heldout_product=100,
        heldout_other=40,
        vocab_size=8192,
        hidden_size=512,
        layers=8,
        heads=8,
        intermediate_size=1536,
        batch_tokens=65536,
        learning_rate=1.5e-3,
        minutes=2,
        max_new_tokens=128,
        warmup_steps=50,
        base_problems=30,
        max_epochs=6,
        rs_problems=60,
        rs_samples=4,
        rs_minutes=0.5,
        grpo_steps=4,
    ),
}


class ProofConfig(BaseModel):
    """`shoparena train proof`'s options."""

    model_config = ConfigDict(extra="forbid")

    out: Path = Field(description="Directory for the proof: proof.json, checkpoint/, and the work files.")
    preset: Literal["tiny", "cpu", "gpu"] = Field("cpu", description="Sizes: tiny (seconds), cpu, gpu.")
    minutes: float | None = Field(None, gt=0, description="Training budget in minutes (default: preset's).")
    device: str = Field("cpu", description="Training and evaluation device: cpu or cuda.")
    seed: int = Field(0, description="Seeds the catalogue, problems, model and data order.")
    workers: int = Field(
        1, ge=1, description="Parallel workers for the teacher's and the evaluations' episodes."
    )
    on_top: bool = Field(
        False,
        description="Only run rejection sampling and GRPO on top of the finished proof in --out (sizes: "
        "the preset's, or --rs-problems / --grpo-steps).",
    )
    deadline_minutes: float | None = Field(
        None,
        gt=0,
        description="Wall-clock budget of the whole command: RS and GRPO are skipped (and say so in "
        "proof.json) when too little of it is left for them.",
    )
    rs_problems: int | None = Field(None, ge=0, description="Override the preset's rs_problems.")
    report_to: ReportToOption = Field("none", description=REPORT_TO_HELP)
    grpo_steps: int | None = Field(None, ge=0, description="Override the preset's grpo_steps.")


class EvalPlace(BaseModel):
    """Where a proof-style evaluation runs: the fields of `ProofConfig` that `eval_model` reads."""

    workers: int = Field(1, ge=1)
    device: str = "cpu"


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a success rate (meaningful at 0 and at small n)."""
    if n == 0:
        return (0.0, 0.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4))


def shoparena(*args: str, say: Callable[[str], None]) -> None:
    """Run one `shoparena` command (the public CLI: the proof goes through what a user runs)."""
    command = [sys.executable, "-c", "from shoparena.cli import main; main()", *args]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"`shoparena {' '.join(args[:2])}` failed ({done.returncode}): "
            f"{(done.stderr or done.stdout).strip()[-800:]}"
        )


def read_jsonl(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))


def gold_ids(problem: dict) -> set[str]:
    reward = problem.get("reward") or {}
    specs = reward if isinstance(reward, list) else [reward]
    return {str(s.get("product_id")) for s in specs if isinstance(s, dict) and s.get("product_id")}


def leak_guard(train: list[dict], heldout: list[dict]) -> tuple[list[dict], int]:
    """Training problems that share a gold product, a leak cluster or a query with a held-out one are
    dropped (held-out stays whole); returns the kept training problems and how many were dropped."""
    clusters = {p.get("leak_cluster_id") for p in heldout} - {None}
    golds = set().union(*(gold_ids(p) for p in heldout)) if heldout else set()
    queries = {p["query"] for p in heldout}
    kept = [
        p
        for p in train
        if p.get("leak_cluster_id") not in clusters
        and not (gold_ids(p) & golds)
        and p["query"] not in queries
    ]
    return kept, len(train) - len(kept)


def rows_from_trajectories(path: Path, system_prompt: str) -> list[dict]:
    """Successful episodes as training rows: messages, tools and the system prompt they are served with."""
    rows = []
    for record in read_jsonl(path):
        if not (record.get("score") or {}).get("success"):
            continue
        rows.append(
            {
                "messages": record["messages"],
                "tools": record.get("tools"),
                "system_prompt": system_prompt,
                "metadata": {
                    "problem_id": record["problem"]["problem_id"],
                    "bucket": record["problem"]["bucket"],
                },
            }
        )
    return rows


def bucket_results(run: Path) -> dict[str, dict[str, Any]]:
    """Per-bucket strict success of an eval run, with the 95% Wilson interval."""
    counts: dict[str, list[int]] = {}
    for record in read_jsonl(run / "trajectories.jsonl"):
        score = record.get("score") or {}
        bucket = record["problem"]["bucket"]
        tally = counts.setdefault(bucket, [0, 0])
        tally[0] += int(bool(score.get("success")))
        tally[1] += 1
    return {
        bucket: {"success": s, "n": n, "rate": round(s / n, 4), "ci95": list(wilson(s, n))}
        for bucket, (s, n) in sorted(counts.items())
    }


def eval_model(
    checkpoint: Path,
    problems: Path,
    catalog: Path,
    out: Path,
    preset: ProofPreset,
    config: ProofConfig | EvalPlace,
    say,
    limit: int | None = None,
    profile: str = PROFILE,
) -> dict[str, dict[str, Any]]:
    """`shoparena eval --agent hf:CHECKPOINT`: greedy, strict, the tool profile the rows were played with."""
    executor = ["--executor", "inline"] if config.workers == 1 else ["--workers", str(config.workers)]
    shoparena(
        "eval",
        *executor,
        *(["--limit", str(limit)] if limit else []),
        "--catalog", str(catalog),
        "--problems", str(problems),
        "--agent", f"hf:{checkpoint}",
        "--out", str(out),
        "--profile", profile,
        "--mode", "strict",
        "--similarity", "lexical",
        "--temperature", "0",
        "--max-tokens", str(preset.max_new_tokens),
        "--option", f"device={config.device}",
        "--option", f"max_turns={preset.max_turns}",
        "--quiet",
        say=say,
    )  # fmt: skip
    return bucket_results(out)


def machine() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def make_problems(
    work: Path,
    catalog: Path,
    preset: ProofPreset,
    seed: int,
    say: Callable[[str], None],
    never_touch: list[dict] | None = None,
) -> tuple[list[dict], int]:
    """Generated training problems (product) and held-out problems (product, then shop + voucher) on
    `catalog`, written to WORK/train.jsonl and WORK/heldout.jsonl; training problems sharing a gold
    product, a leak cluster or a query with a held-out problem or with `never_touch` (e.g. a race's
    pool) are dropped. Returns the kept training problems and how many were dropped."""
    gen = ["problems", "generate", "--catalog", str(catalog)]
    shoparena(*gen, "--n", str(preset.train_problems), "--buckets", "product", "--seed", str(seed + 1),
              "--out", str(work / "train-all.jsonl"), say=say)  # fmt: skip
    shoparena(*gen, "--n", str(preset.heldout_product), "--buckets", "product", "--seed", str(seed + 1001),
              "--out", str(work / "heldout-product.jsonl"), say=say)  # fmt: skip
    heldout = read_jsonl(work / "heldout-product.jsonl")
    if preset.heldout_other:
        shoparena(*gen, "--n", str(preset.heldout_other), "--buckets", "shop,voucher", "--seed",
                  str(seed + 2001), "--out", str(work / "heldout-other.jsonl"), say=say)  # fmt: skip
        heldout += read_jsonl(work / "heldout-other.jsonl")
    train_problems, leaked = leak_guard(read_jsonl(work / "train-all.jsonl"), heldout + (never_touch or []))
    write_jsonl(work / "train.jsonl", train_problems)
    write_jsonl(work / "heldout.jsonl", heldout)
    return train_problems, leaked


def play_teacher(
    catalog: Path, work: Path, profile: str, workers: int, say: Callable[[str], None]
) -> tuple[list[dict], dict[str, dict[str, Any]]]:
    """The concise teacher plays WORK/train.jsonl with `profile`'s tools; its strictly successful
    episodes become WORK/corpus/train.jsonl (each row with the system prompt it is served with).
    Returns the rows and the teacher's per-bucket success."""
    from shoparena.agents.chat_loop import DEFAULT_SYSTEM_PROMPT

    problems = len(read_jsonl(work / "train.jsonl"))
    say(f"teacher (reference:agentic, style=concise) plays {problems} training problems ({profile} tools)")
    shoparena(
        "eval", "--catalog", str(catalog), "--problems", str(work / "train.jsonl"),
        "--agent", "reference:agentic", "--option", "style=concise", "--option", "protocol=qwen3",
        "--profile", profile, "--mode", "strict", "--similarity", "lexical",
        "--workers", str(workers), "--out", str(work / "teacher"), "--quiet", say=say,
    )  # fmt: skip
    teacher = bucket_results(work / "teacher")
    corpus = work / "corpus"
    corpus.mkdir(exist_ok=True)
    rows = rows_from_trajectories(work / "teacher" / "trajectories.jsonl", DEFAULT_SYSTEM_PROMPT)
    write_jsonl(corpus / "train.jsonl", rows)
    return rows, teacher


def init_model(out: Path, rows_file: Path, preset: ProofPreset, seed: int, say: Callable[[str], None]):
    """A Qwen3 of the preset's shape from scratch, its tokenizer trained on the rows in `rows_file`."""
    from shoparena.train.tiny_model import TinyModelConfig, make_tiny_model

    say(f"model from scratch, tokenizer trained on {rows_file}")
    return make_tiny_model(
        TinyModelConfig(
            out=out,
            seed=seed,
            vocab_size=preset.vocab_size,
            hidden_size=preset.hidden_size,
            layers=preset.layers,
            heads=preset.heads,
            intermediate_size=preset.intermediate_size,
            max_position_embeddings=8192,
            corpus=rows_file,
        )
    )


def train_scratch(
    base: Path,
    rows: list[dict],
    preset: ProofPreset,
    minutes: float,
    device: str,
    seed: int,
    checkpoint: Path,
    metrics_path: Path,
    say: Callable[[str], None],
    report_to: str = "none",
):
    """Every weight of the model in `base` trained on `rows` for `minutes` (`full_sft.train_full` with
    the preset's settings), saved whole to `checkpoint`; returns the training log."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    budget = f"{minutes:g} minutes"
    if preset.max_epochs is not None:
        budget = f"{preset.max_epochs:g} epochs (or {budget}, whichever comes first)"
    say(f"training every weight for {budget} on {device}")
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype="float32")
    settings = FullSFTSettings(
        learning_rate=preset.learning_rate,
        batch_tokens=preset.batch_tokens,
        minutes=minutes,
        device=device,
        seed=seed,
        warmup_steps=preset.warmup_steps,
        epochs=preset.max_epochs,
        max_length=8192,
        report_to=report_to,
    )
    log = train_full(model, tokenizer, rows, settings, say=say, metrics_path=metrics_path)
    model.to("cpu")
    model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    return log


def run_proof(config: ProofConfig, say: Callable[[str], None] = print) -> dict[str, Any]:
    """The whole proof (see the module doc); returns what it writes to proof.json."""
    preset = PRESETS[config.preset].model_copy(
        update={
            k: v
            for k, v in (("rs_problems", config.rs_problems), ("grpo_steps", config.grpo_steps))
            if v is not None
        }
    )
    minutes = config.minutes or preset.minutes
    out = config.out
    if config.on_top:
        return on_top(config, preset, say)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"train proof: {out} exists and is not empty; pick a new --out")
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    timings: dict[str, float] = {}

    def lap(name: str, since: float) -> float:
        timings[name] = round(time.monotonic() - since, 1)
        return time.monotonic()

    seed = config.seed
    catalog = work / "catalog"
    say(f"catalogue of {preset.products} products")
    t = time.monotonic()
    shoparena("catalog", "build", "--products", str(preset.products), "--seed", str(seed),
              "--out", str(catalog), say=say)  # fmt: skip
    train_problems, leaked = make_problems(work, catalog, preset, seed, say)
    t = lap("data", t)

    rows, teacher = play_teacher(catalog, work, PROFILE, config.workers, say)
    t = lap("teacher", t)

    base = out / "base"
    made = init_model(base, work / "corpus" / "train.jsonl", preset, seed, say)
    t = lap("init_model", t)
    say(f"evaluating the untrained base on {preset.base_problems} held-out problems")
    base_results = eval_model(
        base, work / "heldout.jsonl", catalog, work / "eval-base", preset, config, say, preset.base_problems
    )
    t = lap("eval_base", t)

    checkpoint = out / "checkpoint"
    log = train_scratch(
        base,
        rows,
        preset,
        minutes,
        config.device,
        seed,
        checkpoint,
        out / "metrics.jsonl",
        say,
        report_to=config.report_to,
    )
    t = lap("train", t)

    say("evaluating the trained checkpoint on held-out problems")
    trained = eval_model(checkpoint, work / "heldout.jsonl", catalog, out / "eval", preset, config, say)
    t = lap("eval", t)
    proof = {
        "schema_version": PROOF_SCHEMA,
        "preset": config.preset,
        "settings": preset.model_dump(),
        "minutes": minutes,
        "device": config.device,
        "seed": seed,
        "teacher": {"agent": "reference:agentic style=concise", "train_problems": len(train_problems),
                    "success": teacher, "rows": len(rows), "leak_guard_dropped": leaked},
        "heldout": {"base": base_results, "sft": trained},
        "model": {"parameters": made.parameters, "vocab_size": made.vocab_size,
                  "hidden_size": preset.hidden_size, "layers": preset.layers},
        "training": log.model_dump(exclude={"curve"}),
        "loss_curve": log.curve,
        "timings_s": timings,
        "wall_s": round(time.monotonic() - started, 1),
        "machine": machine(),
        "evaluation": {"agent": "hf:checkpoint", "greedy": True, "mode": "strict", "profile": PROFILE,
                       "max_new_tokens": preset.max_new_tokens, "max_turns": preset.max_turns},
    }  # fmt: skip
    (out / PROOF_FILE).write_text(json.dumps(proof, indent=2))
    write_cards(out, proof)
    if preset.rs_problems or preset.grpo_steps:
        return on_top(config, preset, say)
    return proof


STARTED = time.monotonic()


def time_left(config: ProofConfig) -> float:
    """Seconds left of `deadline_minutes` (infinite without one)."""
    if config.deadline_minutes is None:
        return float("inf")
    return config.deadline_minutes * 60 - (time.monotonic() - STARTED)


def on_top(config: ProofConfig, preset: ProofPreset, say: Callable[[str], None]) -> dict[str, Any]:
    """Rejection sampling, then Dr. GRPO, each on top of the checkpoint before it, each evaluated on the
    same held-out problems; their rows are added to proof.json's `heldout` (Table 1: base, SFT, RS, GRPO).
    A stage the deadline leaves too little time for is skipped, and one that fails is recorded with its
    error: either way proof.json says so, and the SFT result stands."""
    out = config.out
    path = out / PROOF_FILE
    if not path.is_file():
        raise ValueError(f"train proof --on-top: {path} does not exist; run the proof first")
    proof = json.loads(path.read_text())
    work, catalog = out / "work", out / "work" / "catalog"
    current = out / "checkpoint"
    proof.setdefault("on_top", {})
    stages = (
        ("rs", preset.rs_problems, 150 + preset.rs_minutes * 60, rejection_sampling),
        ("grpo", preset.grpo_steps, 150, grpo),
    )
    for name, wanted, needs, run in stages:
        if not wanted:
            continue
        if time_left(config) < needs:
            proof["on_top"][name] = {"skipped": f"{time_left(config):.0f} s left of the deadline"}
            continue
        t = time.monotonic()
        try:
            checkpoint, facts = run(config, preset, current, say)
            say(f"evaluating the {name.upper()} checkpoint on held-out problems")
            proof["heldout"][name] = eval_model(
                checkpoint, work / "heldout.jsonl", catalog, out / f"eval-{name}", preset, config, say
            )
        except (RuntimeError, ValueError, OSError) as exc:
            proof["on_top"][name] = {"error": str(exc)[-600:], "seconds": round(time.monotonic() - t, 1)}
            say(f"{name}: {exc}")
            break
        current = checkpoint
        proof["on_top"][name] = {**facts, "seconds": round(time.monotonic() - t, 1)}
        path.write_text(json.dumps(proof, indent=2))
        write_cards(out, proof)  # before the next stage: `train grpo` chains the card it starts from
    path.write_text(json.dumps(proof, indent=2))
    return proof


def rejection_sampling(
    config: ProofConfig, preset: ProofPreset, checkpoint: Path, say: Callable[[str], None]
) -> tuple[Path, dict[str, Any]]:
    """SPEC §9.2 at proof scale: K rollouts per training problem at T 0.9 / top_p 0.95 through `shoparena
    eval --agent hf:` (training problems only: the held-out ones were leak-guarded out of them), the
    strictly successful ones kept, mixed 50/50 with corpus rows, full fine-tuning continued from
    `checkpoint` at a third of the SFT learning rate."""
    import random

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from shoparena.agents.chat_loop import DEFAULT_SYSTEM_PROMPT

    out, work = config.out, config.out / "work"
    problems = read_jsonl(work / "train.jsonl")[: preset.rs_problems]
    write_jsonl(work / "rs-problems.jsonl", problems)
    say(f"rejection sampling: {preset.rs_samples} rollouts on each of {len(problems)} training problems")
    executor = ["--executor", "inline"] if config.workers == 1 else ["--workers", str(config.workers)]
    rollouts = work / "rs-rollouts"
    shoparena(
        "eval", *executor, "--catalog", str(work / "catalog"), "--problems", str(work / "rs-problems.jsonl"),
        "--agent", f"hf:{checkpoint}", "--out", str(rollouts), "--profile", PROFILE, "--mode", "strict",
        "--similarity", "lexical", "--samples", str(preset.rs_samples), "--temperature", "0.9",
        "--option", "top_p=0.95", "--option", f"seed={config.seed}", "--max-tokens", str(preset.max_new_tokens),
        "--option", f"device={config.device}", "--option", f"max_turns={preset.max_turns}", "--quiet", say=say,
    )  # fmt: skip
    kept = rows_from_trajectories(rollouts / "trajectories.jsonl", DEFAULT_SYSTEM_PROMPT)
    corpus = read_jsonl(work / "corpus" / "train.jsonl")
    rng = random.Random(config.seed)
    mix = kept + rng.sample(corpus, min(len(kept), len(corpus)))
    rng.shuffle(mix)
    facts: dict[str, Any] = {
        "rollouts": len(problems) * preset.rs_samples,
        "kept": len(kept),
        "rows": len(mix),
    }
    target = out / "rs" / "checkpoint"
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype="float32")
    if mix:
        settings = FullSFTSettings(
            learning_rate=preset.learning_rate / 3,
            batch_tokens=preset.batch_tokens,
            minutes=preset.rs_minutes,
            epochs=2,
            device=config.device,
            seed=config.seed + 1,
            warmup_steps=5,
            max_length=8192,
            report_to=config.report_to,
            run_stage="rs",
        )
        say(f"re-SFT on {len(kept)} kept rollouts + {len(mix) - len(kept)} corpus rows")
        log = train_full(model, tokenizer, mix, settings, say=say, metrics_path=out / "rs" / "metrics.jsonl")
        facts.update(steps=log.steps, final_loss=log.final_loss, tokens_per_s=round(log.tokens_per_s))
    model.to("cpu").save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target, facts


def grpo(
    config: ProofConfig, preset: ProofPreset, checkpoint: Path, say: Callable[[str], None]
) -> tuple[Path, dict[str, Any]]:
    """SPEC §9.5 at proof scale: `shoparena train grpo` (Dr. GRPO, LoRA on the proof's model, outcome
    reward, strict scoring) for `grpo_steps` steps on training problems, merged for evaluation."""
    out, work = config.out, config.out / "work"
    say(f"Dr. GRPO: {preset.grpo_steps} steps on top of {checkpoint}")
    problems_file = (
        work / "rs-problems.jsonl" if (work / "rs-problems.jsonl").is_file() else work / "train.jsonl"
    )
    problems = len(read_jsonl(problems_file))
    stage = out / "grpo"
    shoparena(
        "train", "grpo", "--model", str(checkpoint), "--catalog", str(work / "catalog"),
        "--problems", str(problems_file),
        "--out", str(stage), "--profile", PROFILE, "--similarity", "lexical", "--max-steps", str(preset.grpo_steps),
        "--learning-rate", "1e-3", "--beta", "0", "--batch-problems", str(min(4, problems)), "--num-generations", "4",
        "--max-rollout-steps", str(preset.max_turns), "--max-new-tokens", str(preset.max_new_tokens),
        "--temperature", "0.9", "--top-p", "0.95", "--merge", "--no-progress", "--report-to", config.report_to, say=say,
    )  # fmt: skip
    metrics = read_jsonl(stage / "metrics.jsonl") if (stage / "metrics.jsonl").is_file() else []
    rewards = [m.get("reward_mean", m.get("reward")) for m in metrics if isinstance(m, dict)]
    return stage / "merged", {"steps": preset.grpo_steps, "reward_per_step": rewards}
