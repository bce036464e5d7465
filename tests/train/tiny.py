"""The tiny Qwen3 checkpoint the GRPO tests train: random weights, a tokenizer trained on the spot."""

from __future__ import annotations

from pathlib import Path

from tests.agents.tiny_qwen3 import save_tiny_qwen3


def tiny_checkpoint(directory: Path, catalog) -> str:
    return save_tiny_qwen3(directory / "tiny-qwen3", catalog)
