"""Scoring fixtures: the real MiniLM embedder (one per session, disk-cached) and the upstream task files."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from shoparena.problems.io import read_problems
from shoparena.scoring.similarity import default_cache_path, minilm_similarity
from tests.scoring.constructed import UNRELATED_TITLES

SHOPPINGBENCH_FILES = (
    "shoppingbench_synthesize_product_test.jsonl",
    "shoppingbench_synthesize_shop_test.jsonl",
    "shoppingbench_synthesize_voucher_test.jsonl",
    "shoppingbench_synthesize_web_simpleqa_test.jsonl",
)


def embedding_cache_path() -> Path:
    """Title vectors persist across runs (keyed by model + text hash): the first run embeds ~2k titles."""
    override = os.environ.get("SHOPARENA_TEST_EMBED_CACHE")
    return Path(override) if override else default_cache_path()


@pytest.fixture(scope="session")
def upstream_problems(upstream_dir):
    problems = []
    for name in SHOPPINGBENCH_FILES:
        problems.extend(read_problems(upstream_dir / name, strict=True).problems)
    assert len(problems) == 900
    return problems


@pytest.fixture(scope="session")
def minilm(upstream_problems):
    """The real all-MiniLM-L6-v2 similarity with every upstream gold title embedded up front.

    A file lock makes parallel test workers take turns: the first embeds and writes the disk cache,
    the others read it instead of embedding the same titles again.
    """
    path = embedding_cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    similarity = minilm_similarity(path)
    titles = [t for p in upstream_problems for t in p.gold_titles]
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            similarity.prepare([*titles, *UNRELATED_TITLES])
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return similarity
