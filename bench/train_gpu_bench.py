"""GPU throughput of the training recipe at the paper's scale (issue 14, "Measured"): a Qwen3-4B-shaped
model, randomly initialised from its config (no weights can be downloaded), through

1. LoRA SFT at max_length 14336 the way `run_sft` runs it (SFTTrainer fed pre-tokenised ids + an
   assistant mask, LoRA r=16 on all linear layers, SDPA, gradient checkpointing, bf16), next to
2. plain TRL defaults on the same machine (SFTConfig defaults, PEFT's default LoRA targets, loss on the
   whole sequence), and
3. a GRPO-style step: B prompts × K samples generated in eval mode (T 0.9, top_p 0.95) with the LoRA
   model, then one policy update over the sampled completions (per-token loss, no std normalisation).

Reported per run: tokens/s (median over the measured steps), peak GPU memory, and MFU = model FLOPs/s
over the device's peak dense bf16 FLOPs. Model FLOPs per token for LoRA training count the forward and
the activation-gradient backward, 2 × (2·N + 2·S·H·L) (N matmul parameters including the LM head, S
sequence length, H = heads × head_dim, L layers; causal attention averages S/2 keys); gradient
checkpointing's recomputation is not counted (it is hardware work, not model work). Generation counts
2·N + 2·S·H·L per generated token, S the mean context.

Needs a CUDA device and refuses to run on a CPU. `--smoke` runs the same code with a tiny shape on
whatever device there is, to check the script itself (its numbers mean nothing).

    .venv/bin/python bench/train_gpu_bench.py                       # on a GPU machine
    .venv/bin/python bench/train_gpu_bench.py --smoke               # anywhere: checks the script
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

OUT = Path(__file__).parent / "out" / "train_gpu_bench.json"

QWEN3_4B = {
    "vocab_size": 151936,
    "hidden_size": 2560,
    "intermediate_size": 9728,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 40960,
    "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
}
SMOKE = {**QWEN3_4B, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2}
SMOKE.update(num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=4096)
PEAK_BF16_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "4090": 165.0}


def peak_tflops(name: str, given: float | None) -> float | None:
    if given:
        return given
    return next((value for key, value in PEAK_BF16_TFLOPS.items() if key in name), None)


def matmul_params(shape: dict) -> int:
    h, layers, inter = shape["hidden_size"], shape["num_hidden_layers"], shape["intermediate_size"]
    q = shape["num_attention_heads"] * shape["head_dim"]
    kv = shape["num_key_value_heads"] * shape["head_dim"]
    per_layer = h * q + 2 * h * kv + q * h + 3 * h * inter
    return layers * per_layer + shape["vocab_size"] * h  # the LM head is a matmul too


def forward_flops_per_token(shape: dict, context: float) -> float:
    attention = 2 * context * shape["num_attention_heads"] * shape["head_dim"] * shape["num_hidden_layers"]
    return 2 * matmul_params(shape) + attention


def synthetic_rows(n: int, length: int, vocab: int, seed: int) -> dict:
    """Token ids with an assistant mask shaped like an agent episode: a masked-out prompt (30%), then
    alternating assistant output (trained) and tool results (masked out)."""
    import random

    rng = random.Random(seed)
    ids, masks = [], []
    for _ in range(n):
        row = [rng.randrange(16, vocab) for _ in range(length)]
        mask = [0] * length
        at = int(length * 0.3)
        while at < length:
            turn = rng.randint(length // 40, length // 15)
            mask[at : at + turn] = [1] * len(mask[at : at + turn])
            at += turn + rng.randint(length // 30, length // 10)
        ids.append(row)
        masks.append(mask)
    return {"input_ids": ids, "assistant_masks": masks}


def step_timer():
    import torch
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self._start = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self._start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self.times.append(time.perf_counter() - self._start)

    return StepTimer()


def build_model(shape: dict, device: str):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    config = Qwen3Config(
        **shape, attn_implementation="sdpa", pad_token_id=0, eos_token_id=2, bos_token_id=None
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen3ForCausalLM(config)
    return model.to(dtype)


def reset_memory() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def peak_memory_gb() -> float | None:
    import torch

    return round(torch.cuda.max_memory_allocated() / 2**30, 2) if torch.cuda.is_available() else None


def summarise(name: str, timer, tokens_per_step: int, flops_per_token: float, peak: float | None) -> dict:
    measured = timer.times[1:] or timer.times  # the first step warms up kernels and allocators
    step_s = statistics.median(measured)
    tokens_per_s = tokens_per_step / step_s
    return {
        "run": name,
        "steps_measured": len(measured),
        "step_s": round(step_s, 3),
        "tokens_per_s": round(tokens_per_s, 1),
        "peak_memory_gb": peak_memory_gb(),
        "mfu": round(tokens_per_s * flops_per_token / (peak * 1e12), 4) if peak else None,
    }


def run_ours(shape, device, tokenizer, seq, steps, peak, tmp: Path) -> tuple[dict, object]:
    from datasets import Dataset
    from trl import SFTTrainer

    from shoparena.train.sft import SFTStageConfig, lora_config, sft_args

    config = SFTStageConfig(model=tmp, out=tmp / "ours", max_length=seq, max_steps=steps, progress=False)
    model = build_model(shape, device)
    trainer = SFTTrainer(
        model=model,
        args=sft_args(config, 1e-4, tmp / "ours", bf16=device == "cuda"),
        train_dataset=Dataset.from_dict(synthetic_rows(steps, seq, shape["vocab_size"], 1)),
        processing_class=tokenizer,
        peft_config=lora_config(config),
    )
    timer = step_timer()
    trainer.add_callback(timer)
    reset_memory()
    trainer.train()
    flops = 2 * forward_flops_per_token(shape, seq / 2)
    return summarise("shoparena run_sft settings", timer, seq, flops, peak), trainer.model


def run_trl_defaults(shape, device, tokenizer, seq, steps, peak, tmp: Path) -> dict:
    from datasets import Dataset
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer

    model = build_model(shape, device)
    rows = synthetic_rows(steps, seq, shape["vocab_size"], 1)
    trainer = SFTTrainer(
        model=model,
        args=SFTConfig(
            output_dir=str(tmp / "defaults"), max_length=seq, max_steps=steps, report_to="none",
            bf16=device == "cuda", save_strategy="no",
        ),
        train_dataset=Dataset.from_dict({"input_ids": rows["input_ids"]}),
        processing_class=tokenizer,
        peft_config=LoraConfig(task_type="CAUSAL_LM"),
    )  # fmt: skip
    timer = step_timer()
    trainer.add_callback(timer)
    reset_memory()
    trainer.train()
    result = summarise("plain TRL defaults", timer, seq, 2 * forward_flops_per_token(shape, seq / 2), peak)
    del trainer, model
    return result


def run_grpo_step(model, shape, device, prompts, group, prompt_len, new_tokens, peak) -> list[dict]:
    """Rollouts in eval mode (no dropout), then one Dr.GRPO-shaped update over the completions."""
    import torch

    vocab = shape["vocab_size"]
    torch.manual_seed(0)
    prompt_ids = torch.randint(16, vocab, (prompts, prompt_len), device=device).repeat_interleave(
        group, dim=0
    )
    model.eval()
    reset_memory()
    if device == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    with torch.inference_mode():
        output = model.generate(
            input_ids=prompt_ids,
            attention_mask=torch.ones_like(prompt_ids),
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=True,
            temperature=0.9,
            top_p=0.95,
            pad_token_id=0,
        )
    if device == "cuda":
        torch.cuda.synchronize()
    gen_s = time.perf_counter() - started
    generated = (output.shape[1] - prompt_len) * output.shape[0]
    gen_flops = forward_flops_per_token(shape, prompt_len + new_tokens / 2)
    rollout = {
        "run": f"GRPO rollout: {prompts} prompts x {group} samples, {prompt_len} + {new_tokens} tokens (HF generate)",
        "seconds": round(gen_s, 3),
        "tokens_per_s": round(generated / gen_s, 1),
        "peak_memory_gb": peak_memory_gb(),
        "mfu": round(generated / gen_s * gen_flops / (peak * 1e12), 4) if peak else None,
    }
    model.train()
    sequences = output.detach().clone()
    completion = torch.zeros_like(sequences, dtype=torch.float32)
    completion[:, prompt_len:] = 1.0
    rewards = torch.rand(prompts, group, device=device)
    advantages = (rewards - rewards.mean(dim=1, keepdim=True)).reshape(-1, 1)  # Dr. GRPO: no std division
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-6)
    reset_memory()
    if device == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    normaliser = sequences.shape[0] * new_tokens  # Dr. GRPO: per token, a constant normaliser
    for row in range(sequences.shape[0]):  # one sequence at a time: full-vocabulary logits are large
        ids = sequences[row : row + 1]
        logits = model(input_ids=ids).logits[:, :-1].float()
        logps = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        loss = -(advantages[row] * logps * completion[row : row + 1, 1:]).sum() / normaliser
        loss.backward()
        del logits, logps, loss
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if device == "cuda":
        torch.cuda.synchronize()
    update_s = time.perf_counter() - started
    tokens = sequences.numel()
    context = sequences.shape[1] / 2
    update = {
        "run": f"GRPO policy update over {sequences.shape[0]} sequences of {sequences.shape[1]} tokens",
        "seconds": round(update_s, 3),
        "tokens_per_s": round(tokens / update_s, 1),
        "peak_memory_gb": peak_memory_gb(),
        "mfu": round(tokens / update_s * 2 * forward_flops_per_token(shape, context) / (peak * 1e12), 4)
        if peak
        else None,
    }
    return [rollout, update]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seq", type=int, default=14336, help="SFT sequence length (paper: 14336)")
    parser.add_argument("--steps", type=int, default=4, help="SFT steps per run (the first is warm-up)")
    parser.add_argument("--prompts", type=int, default=3, help="GRPO prompts per step (v17: B = 3)")
    parser.add_argument("--group", type=int, default=6, help="GRPO samples per prompt (v17: K = 6)")
    parser.add_argument("--prompt-len", type=int, default=4096)
    parser.add_argument("--new-tokens", type=int, default=512)
    parser.add_argument("--peak-tflops", type=float, default=None, help="the device's dense bf16 peak")
    parser.add_argument("--smoke", action="store_true", help="tiny shape, any device: checks the script only")
    args = parser.parse_args()

    import torch

    from shoparena.train.tiny_model import tokenizer_text, train_tokenizer

    if not torch.cuda.is_available() and not args.smoke:
        print(
            "train_gpu_bench: needs a CUDA device and torch sees none. Run it on a GPU machine "
            "(the figures in docs/benchmarks.md are GPU figures), or pass --smoke to check the script "
            "on this machine with a tiny shape.",
            file=sys.stderr,
        )
        return 2
    device = "cuda" if torch.cuda.is_available() else "cpu"
    shape = SMOKE if args.smoke else QWEN3_4B
    if args.smoke:
        args.seq, args.steps, args.prompt_len, args.new_tokens = 512, 2, 64, 8
        args.prompts, args.group = 2, 2
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    peak = peak_tflops(name, args.peak_tflops) if device == "cuda" else None
    tokenizer = train_tokenizer(tokenizer_text(50, 0), 400)  # pads and ids only: the rows are token ids
    results: dict = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": name,
        "peak_bf16_tflops": peak,
        "shape": "smoke" if args.smoke else "Qwen3-4B",
        "matmul_params": matmul_params(shape),
        "seq": args.seq,
        "runs": [],
    }
    with tempfile.TemporaryDirectory(prefix="train-gpu-bench-") as tmp:
        root = Path(tmp)
        ours, model = run_ours(shape, device, tokenizer, args.seq, args.steps, peak, root)
        results["runs"].append(ours)
        results["runs"] += run_grpo_step(
            model, shape, device, args.prompts, args.group, args.prompt_len, args.new_tokens, peak
        )
        del model
        reset_memory()
        results["runs"].append(run_trl_defaults(shape, device, tokenizer, args.seq, args.steps, peak, root))
    OUT.parent.mkdir(exist_ok=True)
    target = OUT.with_name("train_gpu_bench_smoke.json") if args.smoke else OUT
    target.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
