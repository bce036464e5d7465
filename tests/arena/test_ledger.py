"""The ledger and metagraph on SQLite and the real PostgreSQL: append-only submissions, events and
results; cooldowns decided atomically; idempotent results; schema equal to the migrations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from shoparena.admission import Violation
from shoparena.arena import (
    ArenaError,
    CooldownActive,
    CooldownPolicy,
    ProblemResultIn,
    ResultConflictError,
    ResultIn,
    UnknownSubmissionError,
)
from tests.arena.arena_helpers import Key, arena_schema_differences, make_arena, parallel

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
SECURITY = Violation(rule="security.banned_import", kind="security", line=1, col=0, message="no")
INTEGRITY = Violation(rule="integrity.answer_table", kind="integrity", line=3, col=4, message="ids")
FORMAT = Violation(rule="format.syntax", kind="format", line=2, col=1, message="does not parse")


@pytest.fixture(params=["sqlite", "postgresql"])
def state(request, tmp_path, small_catalog_dir, problems_file):
    store = None if request.param == "sqlite" else request.getfixturevalue("pg_store_url")
    arena = make_arena(tmp_path / "arena", small_catalog_dir, problems_file, {}, store=store)
    yield arena
    arena.close()


def submit(state, hotkey: str, at: datetime, violations=(), name: str = "agent") -> str:
    cooldown = state.config.cooldown.for_violations(list(violations))
    return state.ledger.record(
        hotkey=hotkey,
        name=name,
        code_sha256="ab" * 32,
        code_size=10,
        violations=list(violations),
        cooldown_s=cooldown,
        now=at,
    )


def result(submission_id: str, job: str = "job-1", validator: str = "5Validator", **changes) -> ResultIn:
    problems = [
        ProblemResultIn(
            problem_id="p1", bucket="product", success=True, rule_score=1.0, judge_quality=0.9, record_id="r1"
        ),
        ProblemResultIn(problem_id="p2", bucket="shop", success=False, rule_score=0.5, judge_quality=0.5),
        ProblemResultIn(problem_id="p3", success=False, error="timeout after 300 s"),
    ]
    values = {
        "submission_id": submission_id,
        "job_id": job,
        "validator_hotkey": validator,
        "suite": "qualifying",
        "suite_version": "v1",
        "scoring_pipeline_version": "prod-strict-1",
        "problems": problems,
    }
    return ResultIn(**{**values, **changes})


def test_policy_orders_kinds():
    policy = CooldownPolicy(full_s=100, security_s=10, format_s=1)
    assert policy.for_violations([]) == 100
    assert policy.for_violations([FORMAT]) == 1
    assert policy.for_violations([FORMAT, SECURITY]) == 10
    assert policy.for_violations([SECURITY, INTEGRITY, FORMAT]) == 100


def test_submission_lifecycle_is_a_chain_of_events(state):
    ledger = state.ledger
    sid = submit(state, "5Miner", T0)
    view = ledger.get(sid)
    assert (view.status, view.miner_hotkey, view.code_size) == ("queued", "5Miner", 10)
    assert ledger.by_status("queued")[0].submission_id == sid
    ledger.add_event(sid, "running", actor="5Validator", job_id="job-1", now=T0 + timedelta(seconds=5))
    ledger.add_event(sid, "queued", detail="lease lapsed", now=T0 + timedelta(seconds=65))
    ledger.add_event(sid, "running", actor="5Validator", job_id="job-2", now=T0 + timedelta(seconds=70))
    view = ledger.get(sid)
    assert [e.status for e in view.events] == ["queued", "running", "queued", "running"]
    assert view.status == "running" and view.status_at == T0 + timedelta(seconds=70)
    assert ledger.by_status("queued") == [] and [s.submission_id for s in ledger.by_status("running")] == [
        sid
    ]
    assert [s.submission_id for s in ledger.list_for("5Miner")] == [sid]
    with pytest.raises(UnknownSubmissionError):
        ledger.add_event("f" * 32, "running")
    with pytest.raises(ArenaError, match="cannot be appended"):
        ledger.add_event(sid, "rejected")


def test_rejected_submissions_keep_violations_and_are_final(state):
    sid = submit(state, "5Miner", T0, [SECURITY, FORMAT])
    view = state.ledger.get(sid)
    assert view.status == "rejected" and view.violations == [SECURITY, FORMAT]
    with pytest.raises(ArenaError, match="never evaluated"):
        state.ledger.add_event(sid, "running")
    with pytest.raises(ArenaError, match="rejected at admission"):
        state.ledger.add_result(result(sid))


@pytest.mark.parametrize(
    ("violations", "seconds"),
    [((), 43200), ((SECURITY,), 3600), ((INTEGRITY, SECURITY), 43200), ((FORMAT,), 300)],
)
def test_cooldown_follows_the_newest_submission(state, violations, seconds):
    sid = submit(state, "5Miner", T0, violations)
    cooldown = state.ledger.cooldown("5Miner", T0 + timedelta(seconds=1))
    assert cooldown.submission_id == sid and cooldown.retry_after_s == seconds - 1
    with pytest.raises(CooldownActive):
        submit(state, "5Miner", T0 + timedelta(seconds=seconds - 1))
    assert state.ledger.cooldown("5Miner", T0 + timedelta(seconds=seconds)) is None
    assert state.ledger.cooldown("5Other", T0) is None
    submit(state, "5Miner", T0 + timedelta(seconds=seconds))


def test_concurrent_submissions_of_one_hotkey_record_exactly_one(state):
    def attempt(i: int):
        try:
            return submit(state, "5Racer", T0, name=f"v{i}")
        except CooldownActive:
            return None

    outcomes = parallel(8, attempt)
    assert sum(o is not None for o in outcomes) == 1
    assert len(state.ledger.list_for("5Racer")) == 1


def test_results_are_aggregated_by_the_arena_and_idempotent(state):
    sid = submit(state, "5Miner", T0)
    view, created = state.ledger.add_result(result(sid), now=T0 + timedelta(minutes=5))
    assert created
    assert (view.problems, view.successes) == (3, 1)
    assert view.asr == pytest.approx(1 / 3)
    assert view.mean_rule_score == pytest.approx(0.75)
    # q: the two judged problems and the timed-out one, not judged but counted at the floor (0.1)
    assert view.judge_quality == pytest.approx((0.9 + 0.5 + 0.1) / 3)
    assert view.coefficient == pytest.approx(0.3 + 0.7 * 0.5 / 0.8)
    assert view.final_score == pytest.approx(view.asr * view.coefficient)
    assert [p.problem_id for p in view.per_problem] == ["p1", "p2", "p3"]
    assert view.per_problem[2].error == "timeout after 300 s"
    again, created = state.ledger.add_result(result(sid), now=T0 + timedelta(minutes=9))
    assert not created and again == view
    with pytest.raises(ResultConflictError, match="different result"):
        state.ledger.add_result(result(sid, suite_version="v2"))
    _second, created = state.ledger.add_result(result(sid, job="job-2", validator="5Other"))
    assert created
    stored = state.ledger.get(sid)
    assert stored.status == "scored" and [r.job_id for r in stored.results] == ["job-1", "job-2"]
    assert [e.status for e in stored.events] == ["queued", "scored", "scored"]
    with pytest.raises(UnknownSubmissionError):
        state.ledger.add_result(result("e" * 32, job="job-9"))


def test_result_without_judged_problems_has_no_final_score(state):
    sid = submit(state, "5Miner", T0)
    unjudged = [ProblemResultIn(problem_id="p1", success=True)]
    view, _ = state.ledger.add_result(result(sid, problems=unjudged))
    assert (view.asr, view.judge_quality, view.coefficient, view.final_score) == (1.0, None, None, None)


def test_result_input_is_validated():
    with pytest.raises(ValueError, match="listed twice"):
        result("a" * 32, problems=[ProblemResultIn(problem_id="p", success=True)] * 2)
    with pytest.raises(ValueError):
        ProblemResultIn(problem_id="p", success=True, judge_quality=1.5)


APPEND_ONLY = ["submissions", "submission_events", "submission_results", "problem_results", "audit"]


def test_append_only_tables_refuse_update_and_delete(state):
    from shoparena.arena.auth.audit import AuditRecord

    sid = submit(state, "5Miner", T0)
    state.ledger.add_result(result(sid))
    state.audit.write(AuditRecord(created_at=T0, method="GET", path="/x", status=401, reason="skew"))
    for table in APPEND_ONLY:
        for statement in (f"UPDATE {table} SET id = id", f"DELETE FROM {table}"):
            with pytest.raises(DBAPIError, match="append-only"), state.store.engine.begin() as connection:
                connection.execute(text(statement))
    with state.store.engine.begin() as connection:  # the metagraph is the one mutable table
        connection.execute(text("DELETE FROM neurons"))


def test_metagraph_register_update_remove(state):
    key = Key()
    registered = state.metagraph.register(key.hotkey, "miner")
    assert state.metagraph.get(key.hotkey) == registered
    state.metagraph.register(key.hotkey, "validator", 12.5, uid=7)
    neuron = state.metagraph.get(key.hotkey)
    assert (neuron.role, neuron.stake, neuron.uid) == ("validator", 12.5, 7)
    assert [n.hotkey for n in state.metagraph.all()] == [key.hotkey]
    assert state.metagraph.remove(key.hotkey) and state.metagraph.get(key.hotkey) is None
    assert not state.metagraph.remove(key.hotkey)
    for hotkey, role, stake, match in (
        ("5abc", "miner", 0, "SS58"),
        (key.hotkey, "owner", 0, "--role"),
        (key.hotkey, "miner", -1, "--stake"),
        (key.hotkey, "miner", float("nan"), "--stake"),
    ):
        with pytest.raises(ArenaError, match=match):
            state.metagraph.register(hotkey, role, stake)


def test_a_uid_names_one_hotkey(state):
    """Weights are set per uid: a local registration may not give a held uid to a second hotkey; a chain
    sync moves it (the chain reassigned it)."""
    first, second = Key(), Key()
    state.metagraph.register(first.hotkey, "miner", uid=3)
    with pytest.raises(ArenaError, match=f"--uid 3 belongs to {first.hotkey}"):
        state.metagraph.register(second.hotkey, "miner", uid=3)
    assert state.metagraph.get(second.hotkey) is None
    state.metagraph.register(first.hotkey, "miner", 5.0, uid=3)  # the holder itself may re-register
    state.metagraph.register(second.hotkey, "miner", uid=3, source="chain")
    assert state.metagraph.get(second.hotkey).uid == 3 and state.metagraph.get(first.hotkey).uid is None
    assert sorted(n.uid for n in state.metagraph.all() if n.uid is not None) == [3]


def test_migrations_match_the_models(state):
    assert arena_schema_differences(state.store.engine) == []
