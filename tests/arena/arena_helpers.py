"""Helpers of the arena tests (their fixtures are in conftest): real sr25519 keys, a clock the server
reads, an arena made over a catalogue with keys registered, a signed client of the real server, threads
released at once, and the miner files the gate admits and refuses."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import httpx

from shoparena.arena import init_arena
from shoparena.arena.auth.keys import keypair_from_seed, new_key_file
from shoparena.arena.auth.signing import signed_headers

REDIS_URL = os.environ.get("SHOPARENA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
BENIGN = b'''"""A plain agent: search for the query, recommend the first hit."""

import json
import re


def agent_main(problem_data):
    query = re.sub(r"\\s+", " ", problem_data["query"]).strip()
    return [{"tool": "find_product", "args": {"q": query}}, {"note": json.dumps({"len": len(query)})}]
'''
BANNED = b"""import subprocess


def agent_main(problem_data):
    return subprocess.run(["cat", "/etc/passwd"], capture_output=True).stdout
"""


class Clock:
    """Unix seconds the server reads; tests move it instead of sleeping."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


class Key:
    """A real sr25519 keypair (what `keys new` writes)."""

    def __init__(self) -> None:
        self.file = new_key_file()
        self.keypair = keypair_from_seed(self.file.secret_seed)
        self.hotkey = self.keypair.ss58_address

    def headers(
        self, body: bytes = b"", method: str = "GET", target: str = "/v1/whoami", **overrides
    ) -> dict[str, str]:
        """Signed for `method target` (by default `GET /v1/whoami`) with `body`."""
        return signed_headers(self.keypair, method, target, body, **overrides)


def arena_schema_differences(engine) -> list:
    """What autogenerate finds between the arena's tables in this database and the arena's models ([]
    when the migrations at head and the models agree); the trajectory store's tables are left out."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from shoparena.arena.schema import VERSION_TABLE, Base

    def arena_tables_only(name, type_, _parent):
        return type_ != "table" or name in Base.metadata.tables

    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"version_table": VERSION_TABLE, "include_name": arena_tables_only}
        )
        return compare_metadata(context, Base.metadata)


def make_arena(arena_dir: Path, catalog: Path, problems: Path, keys: dict[str, list[Key]], **settings):
    arena = init_arena(arena_dir, catalog, problems, **settings)
    for role, role_keys in keys.items():
        for key in role_keys:
            arena.metagraph.register(key.hotkey, role, 10.0 if role == "validator" else 0.0)
    return arena


class Server:
    def __init__(self, url: str, arena, clock: Clock):
        self.url = url
        self.arena = arena
        self.clock = clock
        self.http = httpx.Client(base_url=url, timeout=30, trust_env=False)

    def signed(self, method: str, path: str, key: Key, body: bytes = b"", **overrides) -> httpx.Response:
        """A request signed now by the server's clock (unless `timestamp` says otherwise)."""
        overrides.setdefault("timestamp", int(self.clock()))
        headers = key.headers(body, method, path, **overrides)
        return self.http.request(method, path, content=body, headers=headers)


def parallel(n: int, action) -> list:
    """Run `action(i)` on n threads released at the same instant; results in index order."""
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        results[i] = action(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results
