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


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory, small_catalog_dir, small_catalog) -> Path:
    """A corpus made the real way: reference-agent eval runs on generated problems, judged offline,
    through `build_corpus` (normalise, gates, dedup, leak-guarded split, TRL export)."""
    from shoparena.problems.generator import ProblemGenerator
    from shoparena.problems.io import write_problems
    from tests.train.reference_corpus import reference_corpus

    root = tmp_path_factory.mktemp("train-corpus")
    problems = root / "problems.jsonl"
    generated = ProblemGenerator(small_catalog, seed=11).generate(12, ["product"], variants=1)
    write_problems(problems, generated)
    _, out = reference_corpus(
        root,
        small_catalog_dir,
        problems,
        profile="upstream4",
        min_quality=0.1,
        per_problem=1,
        eval_size=3,
        seed=5,
    )
    return out
