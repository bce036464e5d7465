"""Title-embedding cache: an in-memory LRU in front of an optional SQLite file.

Scoring a suite compares the same gold titles (and the same popular recommended products) again and
again, across problems, samples and runs; a sentence embedder costs milliseconds per title on CPU, so
every text is embedded once per model and then read back. Keys carry the model name, so vectors from
two embedders can never be mixed.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

import numpy as np


def text_key(text: str) -> str:
    """A fixed-size key for any text (titles can be long)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Vectors by (model, text): `get_many` returns what is known, `put_many` stores new ones.

    Vectors are stored as float32 and L2-normalised by the caller, so cosine is a dot product.
    """

    def __init__(self, model_name: str, max_items: int = 200_000, path: str | Path | None = None):
        self.model_name = model_name
        self.max_items = max_items
        self._memory: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self.hits = 0
        self.misses = 0
        if path is not None:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS embeddings ("
                "model TEXT NOT NULL, key TEXT NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL,"
                " PRIMARY KEY (model, key))"
            )
            self._db.commit()

    def __len__(self) -> int:
        return len(self._memory)

    def _remember(self, key: str, vector: np.ndarray) -> None:
        self._memory[key] = vector
        self._memory.move_to_end(key)
        while len(self._memory) > self.max_items:
            self._memory.popitem(last=False)

    def get_many(self, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors among `texts` (memory first, then disk, which refills memory)."""
        found: dict[str, np.ndarray] = {}
        missing: dict[str, str] = {}
        with self._lock:
            for text in texts:
                if text in found or text in missing.values():
                    continue
                vector = self._memory.get(text)
                if vector is not None:
                    self._memory.move_to_end(text)
                    found[text] = vector
                else:
                    missing[text_key(text)] = text
            if missing and self._db is not None:
                keys = list(missing)
                for start in range(0, len(keys), 500):
                    chunk = keys[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    rows = self._db.execute(
                        f"SELECT key, dim, vector FROM embeddings WHERE model = ? AND key IN ({marks})",
                        [self.model_name, *chunk],
                    ).fetchall()
                    for key, dim, blob in rows:
                        vector = np.frombuffer(blob, dtype=np.float32)
                        if vector.shape[0] != dim:
                            continue
                        text = missing[key]
                        found[text] = vector
                        self._remember(text, vector)
            self.hits += len(found)
            self.misses += len(missing) - sum(1 for t in missing.values() if t in found)
        return found

    def put_many(self, vectors: dict[str, np.ndarray]) -> None:
        with self._lock:
            for text, vector in vectors.items():
                self._remember(text, np.asarray(vector, dtype=np.float32))
            if self._db is not None and vectors:
                self._db.executemany(
                    "INSERT OR REPLACE INTO embeddings (model, key, dim, vector) VALUES (?, ?, ?, ?)",
                    [
                        (self.model_name, text_key(t), int(v.shape[0]), np.asarray(v, np.float32).tobytes())
                        for t, v in vectors.items()
                    ],
                )
                self._db.commit()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
