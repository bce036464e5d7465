"""`arena status` / `arena.overview`: the queue in the order claims take it, open leases with their
expiry (overdue ones flagged, nothing written), counts by status and the latest failures' reasons."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from typer.testing import CliRunner

from shoparena.arena.jobs.board import JobBoard
from shoparena.arena.overview import arena_overview
from shoparena.cli import app
from tests.arena.arena_helpers import Key, make_arena

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def record(arena, hotkey: str, name: str, at: datetime, violations=()) -> str:
    code = f"# {name}\ndef agent_main(problem_data):\n    return []\n".encode()
    return arena.ledger.record(
        hotkey=hotkey,
        name=name,
        code_sha256=hashlib.sha256(code).hexdigest(),
        code_size=len(code),
        violations=list(violations),
        cooldown_s=0,
        now=at,
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def any_arena(request, tmp_path, small_catalog_dir, problems_file, miner, miner2, validator):
    store = None if request.param == "sqlite" else request.getfixturevalue("pg_store_url")
    opened = make_arena(
        tmp_path / "arena",
        small_catalog_dir,
        problems_file,
        {"miner": [miner, miner2], "validator": [validator]},
        **({"store": store} if store else {}),
    )
    yield opened
    opened.close()


def test_the_queue_is_the_claim_order_and_leases_show_their_expiry(any_arena, miner, miner2, validator):
    arena = any_arena
    third = Key()
    arena.metagraph.register(third.hotkey, "miner", 0.0)
    ids = [
        record(arena, hotkey, name, T0 + timedelta(minutes=i))
        for i, (hotkey, name) in enumerate([(miner2.hotkey, "b"), (miner.hotkey, "a"), (third.hotkey, "c")])
    ]
    now = [T0 + timedelta(hours=1)]
    board = JobBoard(arena, clock=lambda: now[0].timestamp())
    before = arena_overview(arena, board)
    assert [q.submission_id for q in before.queue] == ids and before.queue_shown_of == 3
    assert before.statuses == {"queued": 3, "running": 0, "scored": 0, "failed": 0, "rejected": 0}
    assert (before.miners, before.validators, before.leases) == (3, 1, [])

    offer = board.claim(validator.hotkey)
    assert offer.submission_id == before.queue[0].submission_id  # position 1 is what the claim took
    during = arena_overview(arena, board, queue_limit=1)
    assert [q.submission_id for q in during.queue] == ids[1:2] and during.queue_shown_of == 2
    assert during.statuses["running"] == 1 and during.statuses["queued"] == 2
    [lease] = during.leases
    assert (lease.lease_id, lease.validator_hotkey, lease.job_kind) == (
        offer.lease_id,
        validator.hotkey,
        "bank",
    )
    assert 0 < lease.seconds_left <= arena.config.jobs.lease_s

    now[0] += timedelta(seconds=arena.config.jobs.lease_s + 30)
    late = arena_overview(arena, board)
    assert late.leases[0].seconds_left < 0  # overdue, shown, not lapsed: the overview writes nothing
    assert arena_overview(arena, board).leases == late.leases


def test_failures_carry_their_reason_and_rejections_are_counted(arena, miner, miner2):
    from shoparena.admission import Violation

    failed = record(arena, miner.hotkey, "hangs", T0)
    arena.ledger.add_event(
        failed, "failed", detail="3 leases lapsed without a result", now=T0 + timedelta(hours=2)
    )
    record(
        arena,
        miner2.hotkey,
        "bad",
        T0,
        [Violation(rule="security.banned_import", kind="security", message="x")],
    )
    overview = arena_overview(arena)
    assert overview.statuses["failed"] == 1 and overview.statuses["rejected"] == 1
    [failure] = overview.failures
    assert (failure.submission_id, failure.name, failure.detail) == (
        failed,
        "hangs",
        "3 leases lapsed without a result",
    )
    assert overview.queue == []


def test_arena_status_command(arena, miner, tmp_path):
    record(arena, miner.hotkey, "a", T0)
    arena_dir = arena.dir
    result = CliRunner().invoke(app, ["arena", "status", "--dir", str(arena_dir), "--json"])
    assert result.exit_code == 0, result.output
    answer = orjson.loads(result.stdout)
    assert answer["statuses"]["queued"] == 1 and answer["queue"][0]["name"] == "a"
    result = CliRunner().invoke(app, ["arena", "status", "--dir", str(arena_dir)], env={"COLUMNS": "160"})
    assert (
        result.exit_code == 0 and "queue: 1 waiting" in result.output and "open leases: none" in result.output
    )
    result = CliRunner().invoke(app, ["arena", "status", "--dir", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "not an arena directory" in result.output
