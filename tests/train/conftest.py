"""Training fixtures: a corpus made the real way, once per session (the tiny checkpoint it trains is in
tests/conftest.py, shared with the model server's tests)."""

from __future__ import annotations

from pathlib import Path

import pytest


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
