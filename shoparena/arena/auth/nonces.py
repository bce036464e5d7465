"""Nonce stores: each (hotkey, nonce) is accepted once while a request carrying it could still pass the
clock-skew check, so a captured request cannot be replayed.

`claim` is one atomic operation in both stores (an upsert on SQLite, `SET NX` on Redis): of any number
of concurrent requests carrying one nonce, exactly one wins. An entry lives until the latest moment its
timestamp could still be accepted; after that the skew check refuses the replay on its own.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Protocol

from shoparena.arena.errors import ArenaConfigError, NonceStoreUnavailable

DEFAULT_REDIS_PREFIX = "shoparena:"
PURGE_EVERY = 1000
"""Claims between two sweeps of expired SQLite entries (Redis expires its keys itself)."""


class NonceStore(Protocol):
    def claim(self, hotkey: str, nonce: str, expires_at: float, now: float) -> bool:
        """True when (hotkey, nonce) was not live and is now taken until `expires_at` (Unix seconds)."""

    def close(self) -> None: ...


class SQLiteNonceStore:
    """A SQLite file (WAL) shared by every server process on this machine.

    Within a process one connection serves every thread behind a lock: concurrent writers on separate
    connections would meet SQLite's busy handler, whose back-off sleeps (1, 2, 5 … 100 ms) cost far
    more than the ~50 µs upsert. Other processes still wait on SQLite's own lock."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._claims = 0
        try:
            self._connection = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False
            )
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute("PRAGMA synchronous=NORMAL")
            self._connection.execute(
                "CREATE TABLE IF NOT EXISTS nonces (hotkey TEXT NOT NULL, nonce TEXT NOT NULL, "
                "expires_at REAL NOT NULL, PRIMARY KEY (hotkey, nonce)) WITHOUT ROWID"
            )
            self._connection.execute("CREATE INDEX IF NOT EXISTS nonces_expiry ON nonces (expires_at)")
        except sqlite3.Error as exc:
            raise NonceStoreUnavailable(f"nonce store {self.path}: {exc}") from exc

    def claim(self, hotkey: str, nonce: str, expires_at: float, now: float) -> bool:
        with self._lock:
            try:
                cursor = self._connection.execute(
                    "INSERT INTO nonces (hotkey, nonce, expires_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (hotkey, nonce) DO UPDATE SET expires_at = excluded.expires_at "
                    "WHERE nonces.expires_at < ?",
                    (hotkey, nonce, expires_at, now),
                )
                claimed = cursor.rowcount == 1
                self._claims += 1
                if self._claims % PURGE_EVERY == 0:
                    self._connection.execute("DELETE FROM nonces WHERE expires_at < ?", (now,))
            except sqlite3.Error as exc:
                raise NonceStoreUnavailable(f"nonce store {self.path}: {exc}") from exc
        return claimed

    def close(self) -> None:
        with self._lock:
            self._connection.close()


class RedisNonceStore:
    """Redis (`redis://host:port/db`): one key per nonce under `prefix`, expiring by itself; what
    several arena servers behind a load balancer share."""

    def __init__(self, url: str, prefix: str = DEFAULT_REDIS_PREFIX):
        import redis

        self.url = url
        self.prefix = prefix
        self._errors = (redis.RedisError,)
        try:
            self._client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        except ValueError as exc:
            raise ArenaConfigError(f"nonce store {url!r}: {exc}") from None

    def key(self, hotkey: str, nonce: str) -> str:
        return f"{self.prefix}nonce:{hotkey}:{nonce}"

    def claim(self, hotkey: str, nonce: str, expires_at: float, now: float) -> bool:
        ttl_ms = max(1, int((expires_at - now) * 1000) + 1)
        try:
            return bool(self._client.set(self.key(hotkey, nonce), b"1", nx=True, px=ttl_ms))
        except self._errors as exc:
            raise NonceStoreUnavailable(f"nonce store {self.url}: {exc}") from exc

    def close(self) -> None:
        self._client.close()


def open_nonce_store(spec: str, arena_dir: Path, prefix: str = DEFAULT_REDIS_PREFIX) -> NonceStore:
    """`sqlite` (the file `nonces.db` in the arena directory), a SQLite file path, or a `redis://` /
    `rediss://` / `unix://` URL."""
    if spec.startswith(("redis://", "rediss://", "unix://")):
        return RedisNonceStore(spec, prefix)
    if "://" in spec:
        raise ArenaConfigError(
            f"nonce store {spec!r}: use `sqlite` (a file in the arena directory), a file path, or redis://host:port"
        )
    path = Path(arena_dir) / "nonces.db" if spec == "sqlite" else Path(spec)
    return SQLiteNonceStore(path)
