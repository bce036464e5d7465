"""Arena fixtures: a real arena directory over the session's generated catalogue, real sr25519 keys, the
real server on a loopback port, and the real PostgreSQL and Redis (unique names, cleaned up).

PostgreSQL is shared with the store tests' fixtures (one database per session, one schema per test);
Redis tests each get a key prefix of their own and delete their keys afterwards.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from shoparena.arena import init_arena
from shoparena.arena.api.app import create_app, running
from shoparena.arena.auth.keys import keypair_from_seed, new_key_file
from shoparena.arena.auth.signing import signed_headers
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from tests.arena.job_helpers import BENIGN_AGENT, EVALUATION, LEASE_S, NO_COOLDOWN
from tests.store.conftest import pg_database, pg_store_url  # noqa: F401  (fixtures shared with the store tests)

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

    def headers(self, body: bytes = b"", **overrides) -> dict[str, str]:
        return signed_headers(self.keypair, body, **overrides)


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


@pytest.fixture(scope="session")
def problems_file(small_catalog, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bank") / "bank.jsonl"
    write_problems(path, ProblemGenerator(small_catalog, seed=3).generate(6))
    return path


@pytest.fixture
def miner() -> Key:
    return Key()


@pytest.fixture
def miner2() -> Key:
    return Key()


@pytest.fixture
def validator() -> Key:
    return Key()


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make_arena(arena_dir: Path, catalog: Path, problems: Path, keys: dict[str, list[Key]], **settings):
    arena = init_arena(arena_dir, catalog, problems, **settings)
    for role, role_keys in keys.items():
        for key in role_keys:
            arena.metagraph.register(key.hotkey, role, 10.0 if role == "validator" else 0.0)
    return arena


@pytest.fixture
def arena(tmp_path, small_catalog_dir, problems_file, miner, miner2, validator):
    """A fresh SQLite arena with two miners and a validator registered."""
    opened = make_arena(
        tmp_path / "arena",
        small_catalog_dir,
        problems_file,
        {"miner": [miner, miner2], "validator": [validator]},
        cooldown={"full_s": 43200, "security_s": 600, "format_s": 60},
    )
    yield opened
    opened.close()


class Server:
    def __init__(self, url: str, arena, clock: Clock):
        self.url = url
        self.arena = arena
        self.clock = clock
        self.http = httpx.Client(base_url=url, timeout=30, trust_env=False)

    def signed(self, method: str, path: str, key: Key, body: bytes = b"", **overrides) -> httpx.Response:
        """A request signed now by the server's clock (unless `timestamp` says otherwise)."""
        overrides.setdefault("timestamp", int(self.clock()))
        return self.http.request(method, path, content=body, headers=key.headers(body, **overrides))


@pytest.fixture
def server_factory(clock) -> Iterator:
    """Start the real server over an arena (optionally with another admission checker)."""
    started = []

    def start(arena, **options) -> Server:
        context = running(create_app(arena, clock=clock, **options))
        url = context.__enter__()
        server = Server(url, arena, clock)
        started.append((context, server))
        return server

    yield start
    for context, server in reversed(started):
        server.http.close()
        context.__exit__(None, None, None)


@pytest.fixture
def server(arena, server_factory) -> Server:
    return server_factory(arena)


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix of this test's own on the real Redis; its keys are deleted afterwards."""
    import redis

    prefix = f"shoparena-test:{uuid.uuid4().hex[:12]}:"
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.fail(
            f"Redis at {REDIS_URL} is unreachable ({exc}); the nonce store must be tested on Redis too: start "
            "it, or set SHOPARENA_TEST_REDIS_URL",
            pytrace=False,
        )
    yield prefix
    keys = list(client.scan_iter(match=prefix + "*"))
    if keys:
        client.delete(*keys)
    client.close()


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


# -- the job layer: a small bank, an arena scoring it lexically with short leases, one real run ------


@pytest.fixture(scope="session")
def job_bank(small_catalog, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("job-bank") / "bank.jsonl"
    problems = ProblemGenerator(small_catalog, seed=7).generate(3, buckets=("product", "shop", "voucher"))
    write_problems(path, problems)
    return path


@pytest.fixture
def validator2() -> Key:
    return Key()


@pytest.fixture
def job_arena(tmp_path, small_catalog_dir, job_bank, miner, validator, validator2):
    """A SQLite arena over the session catalogue and the 3-problem bank; one miner, two validators."""
    opened = make_arena(
        tmp_path / "arena",
        small_catalog_dir,
        job_bank,
        {"miner": [miner], "validator": [validator, validator2]},
        evaluation=EVALUATION,
        jobs={"lease_s": LEASE_S, "max_lapses": 2},
        cooldown=NO_COOLDOWN,
    )
    yield opened
    opened.close()


@pytest.fixture(scope="session")
def raw_records(small_catalog_dir, job_bank, tmp_path_factory):
    """The benign miner's records on the bank as the eval runner wrote them (not yet any job's): tests
    re-cast them for their job with `canonical_record`, so they post real trajectories without running
    the miner again."""
    from shoparena.eval.config import EvalConfig
    from shoparena.eval.run_dir import TRAJECTORIES_FILE, read_trajectories
    from shoparena.eval.runner import run_eval
    from shoparena.judge import OfflineJudge

    out = tmp_path_factory.mktemp("benign-run") / "run"
    config = EvalConfig(
        catalog=small_catalog_dir,
        problems=job_bank,
        agent=f"file:{BENIGN_AGENT}",
        out=out,
        mode="strict",
        similarity="lexical",
        timeout=60,
        bootstrap=0,
        sandbox="none",
    )
    run_eval(config, judge=OfflineJudge())
    return read_trajectories(out / TRAJECTORIES_FILE).records
