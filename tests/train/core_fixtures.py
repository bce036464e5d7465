"""Shared by the training tests: a tiny Qwen3 checkpoint made by the real `make_tiny_model` (once per
session, a few seconds), for the renderer, the SFT stage and the stages built on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoparena.train.tiny_model import TinyModelConfig, make_tiny_model


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiny") / "model"
    make_tiny_model(TinyModelConfig(out=out, seed=0))
    return out


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)
