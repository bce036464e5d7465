"""Title similarity: the real MiniLM embedder, its caches, the suite-embedding policy, lexical fallback."""

from __future__ import annotations

import logging
import subprocess
import sys

import numpy as np
import pytest

from shoparena.problems.io import read_problems
from shoparena.scoring.embedding_cache import EmbeddingCache
from shoparena.scoring.similarity import (
    MINILM_DIM,
    MINILM_MODEL_NAME,
    SUITE_EMBEDDING_MODEL_KEY,
    LexicalSimilarity,
    adopt_suite_embeddings,
    make_similarity,
    minilm_similarity,
)


def test_minilm_semantics_and_disk_cache(tmp_path, minilm):
    path = tmp_path / "emb.sqlite"
    fresh = minilm_similarity(path)
    fresh._encode = minilm._encode  # share the session's loaded model: same weights, no second load
    texts = [
        "wireless bluetooth earbuds with charging case",
        "bluetooth wireless earphones in-ear with case",
        "cast iron frying pan 12 inch",
    ]
    similar = fresh.similarity(texts[0], texts[1])
    unrelated = fresh.similarity(texts[0], texts[2])
    assert similar > 0.7 > 0.3 > unrelated
    assert fresh.similarity(texts[2], texts[2]) == pytest.approx(1.0, abs=1e-5)
    assert fresh.encoded == 3 and fresh.dim == MINILM_DIM

    again = minilm_similarity(path)  # new process-like instance: everything comes from disk
    again.prepare(texts)
    assert again.encoded == 0
    assert again.similarity(texts[0], texts[1]) == pytest.approx(similar, abs=1e-6)


def test_memory_cache_is_lru_and_keyed_by_model(tmp_path):
    cache = EmbeddingCache("model-a", max_items=2, path=tmp_path / "c.sqlite")
    cache.put_many({t: np.full(4, i, dtype=np.float32) for i, t in enumerate("xyz")})
    assert len(cache) == 2  # memory keeps the two most recent
    assert set(cache.get_many(["x", "y", "z"])) == {"x", "y", "z"}  # disk still has x
    other_model = EmbeddingCache("model-b", path=tmp_path / "c.sqlite")
    assert other_model.get_many(["x"]) == {}


def test_oro_suite_embeddings_are_not_mixed_with_minilm(upstream_dir, caplog):
    suite = read_problems(upstream_dir / "oro_problem_suite_v3.json", strict=True).problems
    similarity = minilm_similarity()
    with caplog.at_level(logging.WARNING):
        notes = adopt_suite_embeddings(suite, similarity)
    assert len(notes) == 1 and "30 problem(s)" in notes[0] and "no model name (1024-d)" in notes[0]
    assert "not used" in caplog.text
    assert similarity.cache.get_many(suite[0].gold_titles) == {}  # nothing was seeded


def test_suite_embeddings_used_only_from_the_same_model():
    vector = np.random.default_rng(0).normal(size=MINILM_DIM)
    gold = "a gold title nobody embedded"
    base = {"query": "q", "reward": {"product_id": "1", "title": [gold]}}
    from shoparena.problems.models import Problem

    same = Problem.model_validate(
        {
            **base,
            "reward_title_embeddings": {gold: vector.tolist()},
            SUITE_EMBEDDING_MODEL_KEY: MINILM_MODEL_NAME,
        }
    )
    similarity = minilm_similarity()
    notes = adopt_suite_embeddings([same], similarity)
    assert notes == [f"used precomputed gold-title embeddings of 1 problem(s) ({MINILM_MODEL_NAME})"]
    stored = similarity.cache.get_many([gold])[gold]
    assert np.allclose(stored, vector / np.linalg.norm(vector), atol=1e-6)

    wrong_dim = Problem.model_validate(
        {
            **base,
            "reward_title_embeddings": {gold: [0.1] * 1024},
            SUITE_EMBEDDING_MODEL_KEY: MINILM_MODEL_NAME,
        }
    )
    other = minilm_similarity()
    notes = adopt_suite_embeddings([wrong_dim], other)
    assert "not used" in notes[0] and other.cache.get_many([gold]) == {}

    lexical_notes = adopt_suite_embeddings([same], LexicalSimilarity())
    assert "not used with lexical-jaccard" in lexical_notes[0]


def test_lexical_similarity_values():
    lexical = make_similarity("lexical")
    assert lexical.similarity("Red Cotton Dress", "red cotton dress!") == 1.0
    assert lexical.similarity("red cotton dress", "red silk dress") == pytest.approx(2 / 4)
    assert lexical.similarity("abc", "xyz") == 0.0
    with pytest.raises(ValueError, match="unknown similarity"):
        make_similarity("bm25")


def test_scoring_import_does_not_load_torch():
    code = "import sys, shoparena.scoring, shoparena.cli.score_cmd; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "False"
