"""`arena serve` as a person runs it: its ticker advances the competition by itself, and its public
reads stay answered under many concurrent clients."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.arena.test_arena_cli import free_port


def test_serve_opens_a_race_on_its_own(racing):
    arena_dir = racing.arena.dir
    port = free_port()
    server = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("shoparena")),
            "arena",
            "serve",
            "--dir",
            str(arena_dir),
            "--port",
            str(port),
            "--tick-s",
            "0.3",
            "--log-level",
            "warning",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        races: list = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not races:
            with contextlib.suppress(httpx.TransportError):
                races = httpx.get(f"http://127.0.0.1:{port}/v1/races", timeout=5).json()
            time.sleep(0.3)
        if not races:
            server.terminate()
            raise AssertionError(
                f"no race opened within 60 s; server said: {server.communicate(timeout=20)[0]!r}"
            )
        assert races[0]["state"] == "QUALIFYING_OPEN"
        assert races[0]["seed"] is None and len(races[0]["seed_commitment"]) == 64
    finally:
        server.terminate()
        output = server.communicate(timeout=20)[0].decode()
    assert "races: opened race-00001" in output


def test_many_concurrent_leaderboard_reads_all_answer(racing):
    """50 concurrent clients, as the public bench runs them: every read answers."""
    from concurrent.futures import ThreadPoolExecutor

    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("shoparena")), "arena", "serve", "--dir", str(racing.arena.dir),
         "--port", str(port), "--tick-s", "0", "--log-level", "warning"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=5).status_code == 200:
                    break
            time.sleep(0.2)

        def read(_: int) -> int:
            return httpx.get(f"http://127.0.0.1:{port}/v1/leaderboard", timeout=25).status_code

        with ThreadPoolExecutor(60) as pool:
            statuses = list(pool.map(read, range(240)))
        assert statuses == [200] * 240
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_standings_take_one_pooled_connection_at_a_time(racing):
    """A read that holds a pooled connection while taking a second (the metagraph's) deadlocks a busy
    server: with every pooled connection held by a request waiting for its second, each waits out the
    pool timeout into a 500 (seen at 50 clients). With a pool of one, such a read fails at once."""
    from dataclasses import replace

    from sqlalchemy import create_engine
    from sqlalchemy.pool import QueuePool

    from shoparena.arena.auth.metagraph import Metagraph
    from shoparena.arena.competition.engine import RaceEngine
    from shoparena.arena.competition.view import CompetitionView

    tight = create_engine(
        racing.arena.store.engine.url, poolclass=QueuePool, pool_size=1, max_overflow=0, pool_timeout=2
    )
    try:
        store = racing.arena.store
        original = store.engine
        store.engine = tight
        arena = replace(racing.arena, metagraph=Metagraph(tight))
        try:
            view = CompetitionView(arena, RaceEngine(arena))
            assert view.leaderboard() == []
            assert RaceEngine(arena).qualifiers() == []
        finally:
            store.engine = original
    finally:
        tight.dispose()
