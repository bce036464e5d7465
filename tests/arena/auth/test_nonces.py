"""Nonce stores on SQLite and the real Redis: single use while live, atomic under concurrency."""

from __future__ import annotations

import time

import pytest

from shoparena.arena.auth.nonces import RedisNonceStore, SQLiteNonceStore, open_nonce_store
from shoparena.arena.errors import ArenaConfigError, NonceStoreUnavailable
from tests.arena.arena_helpers import REDIS_URL, parallel


@pytest.fixture(params=["sqlite", "redis"])
def store(request, tmp_path):
    if request.param == "sqlite":
        opened = SQLiteNonceStore(tmp_path / "nonces.db")
    else:
        opened = RedisNonceStore(REDIS_URL, request.getfixturevalue("redis_prefix"))
    yield opened
    opened.close()


def test_a_nonce_is_single_use_per_hotkey(store):
    now = time.time()
    assert store.claim("5Alice", "n1", now + 60, now)
    assert not store.claim("5Alice", "n1", now + 60, now)
    assert store.claim("5Bob", "n1", now + 60, now)  # another hotkey's nonce space
    assert store.claim("5Alice", "n2", now + 60, now)


def test_an_expired_nonce_can_be_claimed_again(store):
    now = time.time()
    assert store.claim("5Alice", "n1", now + 0.2, now)
    assert not store.claim("5Alice", "n1", now + 60, now + 0.1)
    time.sleep(0.35)  # Redis expires by its own clock
    later = time.time()
    assert store.claim("5Alice", "n1", later + 60, later)


def test_concurrent_claims_of_one_nonce_have_one_winner(store):
    now = time.time()
    results = parallel(16, lambda _i: store.claim("5Alice", "same", now + 60, now))
    assert results.count(True) == 1


def test_sqlite_store_is_shared_between_openers(tmp_path):
    now = time.time()
    first, second = SQLiteNonceStore(tmp_path / "n.db"), SQLiteNonceStore(tmp_path / "n.db")
    try:
        assert first.claim("5A", "x", now + 60, now)
        assert not second.claim("5A", "x", now + 60, now)
    finally:
        first.close()
        second.close()


def test_sqlite_store_sweeps_expired_entries(tmp_path, monkeypatch):
    import sqlite3

    from shoparena.arena.auth import nonces

    monkeypatch.setattr(nonces, "PURGE_EVERY", 10)
    store = SQLiteNonceStore(tmp_path / "n.db")
    now = time.time()
    for i in range(9):
        store.claim("5A", f"old{i}", now - 1, now - 2)
    store.claim("5A", "fresh", now + 60, now)  # the tenth claim sweeps
    with sqlite3.connect(tmp_path / "n.db") as connection:
        assert connection.execute("SELECT nonce FROM nonces").fetchall() == [("fresh",)]
    store.close()


def test_unreachable_redis_refuses_instead_of_letting_requests_through():
    store = RedisNonceStore("redis://127.0.0.1:9/0", "x:")
    with pytest.raises(NonceStoreUnavailable, match=r"127\.0\.0\.1:9"):
        store.claim("5A", "n", time.time() + 60, time.time())


def test_open_nonce_store_specs(tmp_path):
    assert isinstance(open_nonce_store("sqlite", tmp_path), SQLiteNonceStore)
    assert (tmp_path / "nonces.db").exists()
    assert isinstance(open_nonce_store(REDIS_URL, tmp_path), RedisNonceStore)
    with pytest.raises(ArenaConfigError, match="redis://"):
        open_nonce_store("memcached://x", tmp_path)
