"""`arena serve` advances the competition by itself: with a race bank, its ticker opens a race on the
server's clock, visible at once on the public API (no `arena race tick` needed)."""

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
