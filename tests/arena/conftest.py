"""Arena fixtures: a real arena directory over the session's generated catalogue, real sr25519 keys, the
real server on a loopback port, the real PostgreSQL and Redis (unique names, cleaned up), and the race
fixtures of the competition and the public API (helpers in arena_helpers, job_helpers, race_helpers).

PostgreSQL is shared with the store tests' fixtures (one database per session, one schema per test);
Redis tests each get a key prefix of their own and delete their keys afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoparena.arena.api.app import create_app, running
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from tests.arena.arena_helpers import REDIS_URL, Clock, Key, Server, make_arena
from tests.arena.competition.race_helpers import make_racing
from tests.arena.job_helpers import BENIGN_AGENT, EVALUATION, LEASE_S, NO_COOLDOWN
from tests.store.conftest import pg_database, pg_store_url  # noqa: F401  (fixtures shared with the store tests)


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
    return benign_run(small_catalog_dir, job_bank, tmp_path_factory.mktemp("benign-run") / "run")


def benign_run(catalog_dir: Path, problems: Path, out: Path):
    """The benign miner's records on `problems`, run once as a validator would (strict, judged)."""
    from shoparena.eval.config import EvalConfig
    from shoparena.eval.run_dir import TRAJECTORIES_FILE, read_trajectories
    from shoparena.eval.runner import run_eval
    from shoparena.judge import OfflineJudge

    config = EvalConfig(
        catalog=catalog_dir,
        problems=problems,
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


# -- the competition: a small race bank with leak clusters, one real run of the benign miner over it (the
# validators post those records, re-cast for their jobs), and an arena racing on it ----------------------


@pytest.fixture(scope="session")
def race_bank(small_catalog, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("race-bank") / "race_bank.jsonl"
    problems = ProblemGenerator(small_catalog, seed=11).generate(8, buckets=("product", "shop", "voucher"))
    write_problems(path, problems)
    return path


@pytest.fixture(scope="session")
def race_records(small_catalog_dir, race_bank, tmp_path_factory):
    return benign_run(small_catalog_dir, race_bank, tmp_path_factory.mktemp("race-run") / "run")


@pytest.fixture
def racing(tmp_path, small_catalog_dir, job_bank, race_bank, race_records):
    """Three miners (uids 1–3), three validators (uids 100–102, equal stake), a race bank, 2 problems a race."""
    made = make_racing(tmp_path, small_catalog_dir, job_bank, race_bank, race_records)
    yield made
    made.arena.close()
