"""Store fixtures: every store test runs on SQLite and on the PostgreSQL server at 127.0.0.1:5432.

PostgreSQL is not optional: the store must be proven on both, so an unreachable server fails the tests
(with how to point them elsewhere) instead of skipping them. Each test gets a fresh schema inside one
database created for the session and dropped at its end, so parallel and repeated runs never collide.

Records are real: scripted episodes through the harness over a generated catalogue, scored by the
RuleScorer, assembled into `TrajectoryRecord`s the way the eval runner does.
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import psycopg
import pytest

from shoparena import __version__
from shoparena.harness.episode import Episode, load_shops
from shoparena.problems.generator import ProblemGenerator
from shoparena.records.trajectory import (
    AgentInfo,
    HarnessInfo,
    Outcome,
    ProblemInfo,
    Timings,
    TokenUsage,
    TrajectoryRecord,
)
from shoparena.records.verdict import JudgeVerdict
from shoparena.scoring import RuleScorer, make_similarity
from shoparena.store import open_store

PG_ADMIN_URL = os.environ.get("SHOPARENA_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
DIALECTS = ("sqlite", "postgresql")
EPOCH = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
AGENTS = (
    AgentInfo(agent_id="reference-pipeline@1", kind="reference", version="1", spec="reference:pipeline"),
    AgentInfo(
        agent_id="miner-abc@3",
        kind="file",
        version="3",
        spec="file:miner.py",
        miner_hotkey="5Fminer" + "a" * 40,
    ),
)


@pytest.fixture(scope="session")
def pg_database():
    """A database of our own on the local PostgreSQL, dropped when the session ends."""
    name = f"shoparena_test_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"PostgreSQL at {PG_ADMIN_URL} is unreachable ({exc}). The store tests must run on PostgreSQL "
            "too: start the server, or set SHOPARENA_TEST_PG_URL to an admin URL of a reachable one.",
            pytrace=False,
        )
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        base = PG_ADMIN_URL.rsplit("/", 1)[0]
        try:
            yield f"{base}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_store_url(pg_database):
    """A fresh, empty schema in the session database, selected through the connection's search_path."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_database, autocommit=True) as connection:
        connection.execute(f'CREATE SCHEMA "{schema}"')
    return f"{pg_database}?options={quote(f'-csearch_path={schema}')}"


@pytest.fixture(params=DIALECTS)
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    return request.getfixturevalue("pg_store_url")


@pytest.fixture
def store(store_url):
    with open_store(store_url) as opened:
        yield opened


# -- real records --------------------------------------------------------------------------------------


def play(problem, catalog, shops, variant: int) -> Episode:
    """A scripted agent: search (the query's first line, or a shortened one), look, recommend, stop."""
    episode = Episode.for_problem(problem, catalog, profile="oro7", shops=shops)
    first_line = problem.query.split("\n")[0]
    query = first_line[:120] if variant % 2 == 0 else " ".join(first_line.split()[:6])
    hits = episode.call("find_product", {"q": query}, origin="llm" if variant < 2 else "code")
    ids = [hit["product_id"] for hit in (hits.result or [])][: len(problem.rewards)]
    if ids:
        episode.call("view_product_information", {"product_ids": ",".join(ids)}, origin="llm")
    episode.call("recommend_product", {"product_ids": ",".join(ids)}, origin="llm")
    episode.call("terminate", {"status": "success" if ids else "failure"}, origin="llm")
    return episode


def assemble(problem, index, episode, scorer, *, run_id, sample, agent, started_at, judge=None, suite=None):
    score = scorer.score(
        problem,
        episode.recommended_product_ids or [],
        index=index,
        sample=sample,
        steps=episode.steps_used,
        terminated=episode.terminated is not None,
    )
    summary = score.summary().model_copy(
        update={"format_ok": True, "steps": episode.steps_used, "terminated": episode.terminated is not None}
    )
    return TrajectoryRecord(
        record_id=TrajectoryRecord.make_id(run_id, problem.problem_id, sample),
        run_id=run_id,
        sample=sample,
        agent=agent,
        validator_hotkey="5Fvalidator" + "b" * 30 if agent.miner_hotkey else None,
        problem=ProblemInfo(
            problem_id=problem.problem_id,
            bucket=problem.bucket or "product",
            query=problem.query,
            suite=suite,
            suite_version="2025.03" if suite else None,
            leak_cluster_id=problem.leak_cluster_id,
            index=index,
        ),
        harness=HarnessInfo(profile="oro7", protocol="openai", step_cap=episode.step_cap),
        messages=episode.messages,
        tools=episode.tools,
        calls=episode.calls,
        outcome=Outcome(
            recommended_product_ids=episode.recommended_product_ids,
            terminated=episode.terminated,
            steps_used=episode.steps_used,
            end_reason=episode.end_reason,
        ),
        score=summary,
        scoring_mode="upstream",
        judge=judge,
        usage=TokenUsage(prompt_tokens=900 + 37 * index, completion_tokens=120 + index, model_calls=4),
        timings=Timings(started_at=started_at.isoformat(timespec="seconds"), wall_s=1.5 + index / 10),
        shoparena_version=__version__,
    )


@pytest.fixture(scope="session")
def records(small_catalog, small_catalog_dir) -> list[TrajectoryRecord]:
    """24 records: 12 generated problems (product/shop/voucher) × 2 agents, over 24 hours, some judged,
    the miner's on a suite."""
    problems = ProblemGenerator(small_catalog, seed=5).generate(12)
    shops = load_shops(small_catalog_dir)
    scorer = RuleScorer(small_catalog, make_similarity("lexical"), mode="upstream")
    out = []
    for a, agent in enumerate(AGENTS):
        for index, problem in enumerate(problems):
            episode = play(problem, small_catalog, shops, variant=(index + a) % 4)
            judge = None
            if index % 3 != 2:
                quality = (0.1, 0.3, 0.5, 0.7, 0.9)[(index + a) % 5]
                judge = JudgeVerdict(
                    quality=quality,
                    gate=f"gate_{int(quality * 10)}",
                    explanation="the trace compares two candidates by price",
                    judge_model="offline",
                    judge_version="offline-rules-1",
                )
            out.append(
                assemble(
                    problem,
                    index,
                    episode,
                    scorer,
                    run_id=f"run-{agent.kind}",
                    sample=0,
                    agent=agent,
                    started_at=EPOCH + timedelta(hours=2 * index + a),
                    judge=judge,
                    suite="qualifying" if agent.miner_hotkey else None,
                )
            )
    return out


def copies(record: TrajectoryRecord, n: int, run_prefix: str = "bulk") -> list[TrajectoryRecord]:
    """`n` records of the same episode as samples of other runs (what repeated evaluation stores)."""
    out = []
    for i in range(n):
        run_id = f"{run_prefix}-{i // 50}"
        sample = i % 50
        out.append(
            record.model_copy(
                update={
                    "run_id": run_id,
                    "sample": sample,
                    "record_id": TrajectoryRecord.make_id(run_id, record.problem.problem_id, sample),
                }
            )
        )
    return out


def write_jsonl(path, records) -> None:
    from shoparena.store.records import canonical_bytes

    with path.open("wb") as handle:
        for record in records:
            handle.write(canonical_bytes(record) + b"\n")
