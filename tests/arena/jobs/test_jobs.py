"""The job layer through the real server on loopback, on SQLite and the real PostgreSQL: claims under
leases, heartbeats, lapses and re-claims, results checked against their job and stored with one
canonical record per problem, idempotent re-posts."""

from __future__ import annotations

import hashlib

import orjson
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from shoparena.arena.canonical import canonical_record, problem_outcome
from shoparena.arena.models import JobOffer, ResultPost
from shoparena.arena.participants.client import ArenaRefused
from shoparena.eval.runner import catalog_fingerprint
from shoparena.records.trajectory import SCORING_PIPELINE_VERSION
from tests.arena.arena_helpers import Key, make_arena, parallel
from tests.arena.job_helpers import BENIGN_AGENT, EVALUATION, LEASE_S, NO_COOLDOWN, client, submit

VALIDATOR_PATHS = (
    ("GET", "/v1/validator/arena"),
    ("POST", "/v1/validator/claim"),
    ("POST", "/v1/validator/heartbeat"),
    ("POST", "/v1/validator/code"),
    ("POST", "/v1/validator/release"),
    ("POST", "/v1/validator/result"),
)


def post_for(offer: JobOffer, records, hotkey: str, **changes) -> ResultPost:
    """The result a validator with `hotkey` posts for `offer` from the benign run's records."""
    canonical = [canonical_record(record, offer, hotkey) for record in records]
    values = {
        "lease_id": offer.lease_id,
        "job_id": offer.job_id,
        "outcomes": [problem_outcome(record) for record in canonical],
        "records": canonical,
    }
    return ResultPost(**{**values, **changes})


def refusal(call) -> ArenaRefused:
    with pytest.raises(ArenaRefused) as caught:
        call()
    return caught.value


def statuses(arena, submission_id: str) -> list[str]:
    return [event.status for event in arena.ledger.get(submission_id).events]


@pytest.fixture(params=["sqlite", "postgresql"])
def any_arena(request, tmp_path, small_catalog_dir, job_bank, miner, validator, validator2):
    store = None if request.param == "sqlite" else request.getfixturevalue("pg_store_url")
    opened = make_arena(
        tmp_path / "arena",
        small_catalog_dir,
        job_bank,
        {"miner": [miner], "validator": [validator, validator2]},
        store=store,
        evaluation=EVALUATION,
        jobs={"lease_s": LEASE_S, "max_lapses": 2},
        cooldown=NO_COOLDOWN,
    )
    yield opened
    opened.close()


def test_validator_endpoints_refuse_miners_and_strangers(job_arena, server_factory, miner):
    server = server_factory(job_arena)
    stranger = Key()
    for method, path in VALIDATOR_PATHS:
        body = b"" if method == "GET" else b"{}"
        answer = server.signed(method, path, miner, body)
        assert (answer.status_code, answer.json()["reason"]) == (401, "wrong_role"), path
        answer = server.signed(method, path, stranger, body)
        assert (answer.status_code, answer.json()["reason"]) == (401, "unknown_hotkey"), path
    reasons = [entry.reason for entry in job_arena.audit.entries(limit=100)]
    assert reasons.count("wrong_role") == len(VALIDATOR_PATHS)


def test_arena_info_names_the_catalogue_and_the_bank(job_arena, server_factory, validator, small_catalog_dir):
    server = server_factory(job_arena)
    with client(server, validator) as arena:
        info = arena.arena_info()
    assert info.catalog_fingerprint == catalog_fingerprint(small_catalog_dir)
    assert info.problems_sha256 == job_arena.config.problems_sha256 and info.problems_count == 3
    assert info.scoring_pipeline_version == SCORING_PIPELINE_VERSION
    assert (info.evaluation.mode, info.evaluation.similarity, info.lease_s) == ("strict", "lexical", LEASE_S)
    assert (info.suite, info.suite_version) == ("bank", info.problems_sha256[:16])


def test_claims_hand_out_the_oldest_job_with_its_rewards(
    job_arena, server_factory, miner, validator, validator2, small_catalog_dir
):
    server = server_factory(job_arena)
    first, second = submit(server, miner), submit(server, miner)
    with client(server, validator) as one, client(server, validator2) as two:
        offer = one.claim()
        assert offer.submission_id == first and offer.miner_hotkey == miner.hotkey
        assert offer.code_sha256 == hashlib.sha256(BENIGN_AGENT.read_bytes()).hexdigest()
        assert offer.catalog_fingerprint == catalog_fingerprint(small_catalog_dir)
        assert len(offer.problems) == 3 and all("reward" in problem for problem in offer.problems)
        assert offer.evaluation.mode == "strict" and offer.heartbeat_s == pytest.approx(LEASE_S / 3)
        assert statuses(job_arena, first) == ["queued", "running"]
        running = job_arena.ledger.get(first).events[-1]
        assert (running.actor, running.job_id) == (validator.hotkey, offer.job_id)
        assert one.claim().submission_id == second  # the first is held: the next one
        assert two.claim() is None  # nothing left
    with client(server, miner) as own:
        assert own.submission(first).status == "running"


def test_one_validator_gets_a_job_however_many_claim_at_once(any_arena, server_factory, miner):
    validators = [Key() for _ in range(6)]
    for key in validators:
        any_arena.metagraph.register(key.hotkey, "validator", 1.0)
    server = server_factory(any_arena)
    submission_id = submit(server, miner)

    def claim(i: int):
        with client(server, validators[i]) as arena:
            return arena.claim()

    offers = [offer for offer in parallel(len(validators), claim) if offer is not None]
    assert len(offers) == 1 and offers[0].submission_id == submission_id
    assert statuses(any_arena, submission_id) == ["queued", "running"]


def test_a_lapsed_lease_goes_back_to_the_queue_and_another_validator_finishes(
    any_arena, server_factory, clock, miner, validator, validator2, raw_records
):
    server = server_factory(any_arena)
    submission_id = submit(server, miner)
    with client(server, validator) as dead, client(server, validator2) as alive:
        lost = dead.claim()  # ... and the validator dies: no heartbeat ever comes
        clock.advance(LEASE_S + 1)
        offer = alive.claim()
        assert offer.job_id == lost.job_id and offer.lease_id != lost.lease_id
        events = any_arena.ledger.get(submission_id).events
        assert [e.status for e in events] == ["queued", "running", "queued", "running"]
        assert "lapsed" in events[2].detail and lost.lease_id in events[2].detail
        assert events[3].actor == validator2.hotkey
        # The dead validator comes back: its lease is gone, and so is everything it would do.
        assert refusal(lambda: dead.heartbeat(lost.lease_id)).error == "lease_ended"
        assert refusal(lambda: dead.code(lost.lease_id)).error == "lease_ended"
        late = refusal(lambda: dead.post_result(post_for(lost, raw_records, validator.hotkey)))
        assert (late.status, late.error) == (409, "lease_ended")
        assert any_arena.store.count() == 0
        accepted = alive.post_result(post_for(offer, raw_records, validator2.hotkey))
    assert accepted.created and accepted.result.validator_hotkey == validator2.hotkey
    view = any_arena.ledger.get(submission_id)
    assert view.status == "scored" and [r.validator_hotkey for r in view.results] == [validator2.hotkey]
    assert {r.validator_hotkey for r in any_arena.store.records()} == {validator2.hotkey}
    assert any_arena.store.count() == 3


def test_heartbeats_keep_a_lease_alive(job_arena, server_factory, clock, miner, validator, validator2):
    server = server_factory(job_arena)
    submit(server, miner)
    with client(server, validator) as holder, client(server, validator2) as other:
        offer = holder.claim()
        clock.advance(LEASE_S * 0.7)
        renewed = holder.heartbeat(offer.lease_id)
        assert renewed.expires_at > offer.lease_expires_at
        clock.advance(LEASE_S * 0.7)  # past the claim's own expiry, not the heartbeat's
        assert other.claim() is None
        clock.advance(LEASE_S * 0.5)  # past the heartbeat's too
        assert other.claim().job_id == offer.job_id
        assert refusal(lambda: holder.heartbeat(offer.lease_id)).error == "lease_ended"


def test_a_heartbeat_after_the_lease_ran_out_is_refused_and_requeues(
    job_arena, server_factory, clock, miner, validator
):
    server = server_factory(job_arena)
    submission_id = submit(server, miner)
    with client(server, validator) as holder:
        offer = holder.claim()
        clock.advance(LEASE_S + 1)
        late = refusal(lambda: holder.heartbeat(offer.lease_id))
    assert (late.status, late.error) == (409, "lease_lapsed")
    assert statuses(job_arena, submission_id) == ["queued", "running", "queued"]


def test_release_puts_the_job_back_at_once(job_arena, server_factory, miner, validator, validator2):
    server = server_factory(job_arena)
    submission_id = submit(server, miner)
    with client(server, validator) as giver, client(server, validator2) as taker:
        offer = giver.claim()
        giver.release(offer.lease_id, "catalogue missing here")
        events = job_arena.ledger.get(submission_id).events
        assert events[-1].status == "queued" and "catalogue missing here" in events[-1].detail
        assert taker.claim().job_id == offer.job_id
        assert refusal(lambda: giver.release(offer.lease_id, "again")).error == "lease_ended"
        assert refusal(lambda: taker.release(offer.lease_id, "not mine")).error == "not_your_lease"


def test_lapses_without_a_result_fail_the_submission(
    job_arena, server_factory, clock, miner, validator, validator2
):
    server = server_factory(job_arena)
    submission_id = submit(server, miner)
    with client(server, validator) as one, client(server, validator2) as two:
        one.claim()
        clock.advance(LEASE_S + 1)
        two.claim()  # lapse 1 of max_lapses 2: back in the queue, and taken
        clock.advance(LEASE_S + 1)
        assert one.claim() is None  # lapse 2: failed, not offered again
    view = job_arena.ledger.get(submission_id)
    assert view.status == "failed" and "2 lapsed leases" in view.events[-1].detail


def test_code_goes_to_the_lease_holder_only(job_arena, server_factory, miner, validator, validator2):
    server = server_factory(job_arena)
    submit(server, miner)
    with client(server, validator) as holder, client(server, validator2) as other:
        offer = holder.claim()
        code, sha256 = holder.code(offer.lease_id)
        assert code == BENIGN_AGENT.read_bytes() and sha256 == offer.code_sha256
        assert refusal(lambda: other.code(offer.lease_id)).status == 403
        assert refusal(lambda: other.code("0" * 32)).status == 404
        holder.release(offer.lease_id, "done looking")
        assert refusal(lambda: holder.code(offer.lease_id)).error == "lease_ended"
    bad = server.signed("POST", "/v1/validator/code", validator, b'{"lease_id": "../../etc"}')
    assert bad.status_code == 400


def test_results_must_be_the_jobs(job_arena, server_factory, miner, validator, validator2, raw_records):
    server = server_factory(job_arena)
    first, _second = submit(server, miner), submit(server, miner)
    with client(server, validator) as mine, client(server, validator2) as theirs:
        offer = mine.claim()
        other = theirs.claim()
        good = post_for(offer, raw_records, validator.hotkey)

        def refused_with(post) -> ArenaRefused:
            return refusal(lambda: mine.post_result(post))

        assert refused_with(good.model_copy(update={"job_id": other.job_id})).error == "wrong_job"
        assert refused_with(good.model_copy(update={"lease_id": other.lease_id})).error == "not_your_lease"
        another_job = refused_with(
            post_for(other, raw_records, validator.hotkey).model_copy(
                update={"lease_id": offer.lease_id, "job_id": offer.job_id}
            )
        )
        assert another_job.error == "bad_result" and "run_id" in another_job.message
        impostor = refused_with(post_for(offer, raw_records, validator2.hotkey))
        assert "validator_hotkey" in impostor.message
        altered = refused_with(
            post_for(offer.model_copy(update={"code_sha256": "0" * 64}), raw_records, validator.hotkey)
        )
        assert "agent" in altered.message
        short = refused_with(post_for(offer, raw_records[:2], validator.hotkey))
        assert "no record for problem" in short.message
        stray = [
            raw_records[0].model_copy(
                update={"problem": raw_records[0].problem.model_copy(update={"problem_id": "p-x"})}
            )
        ]
        assert (
            "not one of job"
            in refused_with(post_for(offer, stray + raw_records[1:], validator.hotkey)).message
        )
        lenient = [record.model_copy(update={"scoring_mode": "upstream"}) for record in raw_records]
        assert "scoring_mode" in refused_with(post_for(offer, lenient, validator.hotkey)).message
        outcomes = list(good.outcomes)
        outcomes[1] = outcomes[1].model_copy(update={"success": not outcomes[1].success})
        lie = refused_with(good.model_copy(update={"outcomes": outcomes}))
        assert lie.status == 422 and "outcome for problem" in lie.message
        garbage = server.signed("POST", "/v1/validator/result", validator, b'{"lease_id": 1}')
        assert garbage.status_code == 400 and garbage.json()["error"] == "bad_body"
        assert job_arena.store.count() == 0 and statuses(job_arena, first) == ["queued", "running"]
        assert mine.post_result(good).created
    assert job_arena.ledger.get(first).status == "scored"


def test_a_result_is_idempotent_per_job_and_validator(
    job_arena, server_factory, miner, validator, raw_records
):
    server = server_factory(job_arena)
    submission_id = submit(server, miner)
    with client(server, validator) as arena:
        offer = arena.claim()
        post = post_for(offer, raw_records, validator.hotkey)
        first = arena.post_result(post)
        again = arena.post_result(post)  # a retried post (the answer to the first was lost, say)
        assert first.created and not again.created
        assert again.result == first.result and again.record_ids == first.record_ids
        changed = [
            record.model_copy(update={"outcome": record.outcome.model_copy(update={"steps_used": 99})})
            for record in raw_records
        ]
        conflict = refusal(lambda: arena.post_result(post_for(offer, changed, validator.hotkey)))
        assert (conflict.status, conflict.error) == (409, "conflict")
    view = job_arena.ledger.get(submission_id)
    assert len(view.results) == 1 and statuses(job_arena, submission_id) == ["queued", "running", "scored"]
    assert job_arena.store.count() == 3
    assert sorted(job_arena.store.record_ids()) == sorted(first.record_ids)
    with job_arena.store.engine.connect() as connection:
        kinds = connection.execute(text("SELECT kind FROM lease_events ORDER BY id")).scalars().all()
    assert kinds.count("completed") == 1


def test_the_store_holds_one_canonical_record_per_problem(
    job_arena, server_factory, miner, validator, raw_records
):
    server = server_factory(job_arena)
    submission_id = submit(server, miner)
    with client(server, validator) as arena:
        offer = arena.claim()
        accepted = arena.post_result(post_for(offer, raw_records, validator.hotkey))
    records = {record.problem.problem_id: record for record in job_arena.store.records()}
    assert sorted(records) == sorted(record.problem.problem_id for record in raw_records)
    for problem in accepted.result.per_problem:
        record = records[problem.problem_id]
        assert record.record_id == problem.record_id
        assert (record.run_id, record.validator_hotkey) == (offer.job_id, validator.hotkey)
        assert record.agent.spec == f"arena:{submission_id}" and record.agent.version == offer.code_sha256
        assert record.agent.miner_hotkey == miner.hotkey and record.agent.agent_id == f"miner:{miner.hotkey}"
        assert (record.problem.suite, record.problem.suite_version) == (offer.suite, offer.suite_version)
        assert record.scoring_pipeline_version == SCORING_PIPELINE_VERSION and record.scoring_mode == "strict"
        assert (problem.success, problem.rule_score) == (bool(record.score.success), record.score.rule)
        assert problem.judge_quality == record.judge.quality
    from shoparena.store.query import RecordFilter

    assert job_arena.store.count(RecordFilter(agent=f"arena:{submission_id}")) == 3
    assert job_arena.store.count(RecordFilter(miner=miner.hotkey, run=offer.job_id)) == 3


def test_a_changed_problem_bank_stops_the_jobs(
    tmp_path, small_catalog_dir, job_bank, server_factory, validator
):
    bank = tmp_path / "bank.jsonl"
    bank.write_bytes(job_bank.read_bytes())
    arena = make_arena(
        tmp_path / "arena", small_catalog_dir, bank, {"validator": [validator]}, evaluation=EVALUATION
    )
    try:
        server = server_factory(arena)
        bank.write_bytes(
            job_bank.read_bytes()
            + orjson.dumps({"query": "one more", "reward": {"product_id": "1", "title": ["x"]}})
            + b"\n"
        )
        with client(server, validator) as arena_client:
            changed = refusal(arena_client.claim)
    finally:
        arena.close()
    assert (changed.status, changed.error) == (503, "bank_changed")


def test_job_tables_are_append_only(job_arena, server_factory, miner, validator):
    server = server_factory(job_arena)
    submit(server, miner)
    with client(server, validator) as arena:
        offer = arena.claim()
        arena.heartbeat(offer.lease_id)
    for table in ("jobs", "job_leases", "lease_events"):
        for statement in (f"UPDATE {table} SET id = id", f"DELETE FROM {table}"):
            with pytest.raises(DBAPIError, match="append-only"), job_arena.store.engine.begin() as connection:
                connection.execute(text(statement))


def test_a_result_over_the_size_cap_is_refused_unread(
    tmp_path, small_catalog_dir, job_bank, server_factory, miner, validator, raw_records
):
    arena = make_arena(
        tmp_path / "arena",
        small_catalog_dir,
        job_bank,
        {"miner": [miner], "validator": [validator]},
        evaluation=EVALUATION,
        jobs={"max_result_bytes": 4096},
    )
    try:
        server = server_factory(arena)
        submit(server, miner)
        with client(server, validator) as holder:
            offer = holder.claim()
            too_large = refusal(lambda: holder.post_result(post_for(offer, raw_records, validator.hotkey)))
        assert (too_large.status, too_large.error) == (413, "too_large") and arena.store.count() == 0
    finally:
        arena.close()
