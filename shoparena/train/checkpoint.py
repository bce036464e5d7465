"""Loading a model to train and saving what a stage trained: a LoRA adapter (always) and, on request, the
merged full model.

Stages chain: the next stage's `--model` is the previous stage's adapter directory. An adapter names its
base in `adapter_config.json`; `load_causal_lm` follows that chain (base, then each adapter merged in
order), so a stage can train a fresh adapter on top, and `save_adapter` records the directory it was
given (absolute) as the new adapter's base, so `shoparena eval --agent hf:ADAPTER_DIR` rebuilds the same
weights. The tokenizer is saved beside every adapter: the prompt format travels with the checkpoint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shoparena.agents.hf_agent import adapter_base_path, is_adapter_dir

ADAPTER_CONFIG = "adapter_config.json"
__all__ = ["is_adapter_dir", "load_causal_lm", "load_tokenizer", "save_adapter", "save_merged"]


def torch_dtype(name: str) -> Any:
    """`auto`: bfloat16 on a CUDA device that supports it, else float32."""
    import torch

    if name == "auto":
        if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}; use auto, float32, bfloat16 or float16")
    return dtype


def load_causal_lm(path: Path | str, *, dtype: str = "auto", attn_implementation: str = "sdpa") -> Any:
    """A causal LM from a checkpoint directory, or from an adapter directory (its base chain merged)."""
    from transformers import AutoModelForCausalLM

    if is_adapter_dir(str(path)):
        from peft import PeftModel

        base = load_causal_lm(
            adapter_base_path(str(path)), dtype=dtype, attn_implementation=attn_implementation
        )
        return PeftModel.from_pretrained(base, str(path)).merge_and_unload()
    try:
        return AutoModelForCausalLM.from_pretrained(
            str(path), dtype=torch_dtype(dtype), attn_implementation=attn_implementation
        )
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot load a causal LM from {path}: {exc}") from exc


def load_tokenizer(path: Path | str) -> Any:
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot load a tokenizer from {path}: {exc}") from exc
    if not tokenizer.chat_template:
        raise ValueError(
            f"{path}: the tokenizer has no chat template; training renders conversations with it"
        )
    return tokenizer


def save_adapter(model: Any, tokenizer: Any, out: Path, base: Path | str) -> Path:
    """The trained LoRA adapter and the tokenizer in `out`; `base` (the stage's input model) recorded as
    the adapter's base, absolute when it is a local directory."""
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    config_path = out / ADAPTER_CONFIG
    config = json.loads(config_path.read_text())
    local = Path(base)
    config["base_model_name_or_path"] = str(local.resolve()) if local.exists() else str(base)
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True))
    return out


def save_merged(model: Any, tokenizer: Any, out: Path) -> Path:
    """The adapter merged into its base, saved as a plain checkpoint (loads without peft)."""
    merged = model.merge_and_unload() if hasattr(model, "merge_and_unload") else model
    out.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out
