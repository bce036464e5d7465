"""Result intake: a validator's posted result, parsed, checked against the job its lease is for, and
stored with its trajectory records in one transaction (SPEC §6).

A result is the job's canonical records (`canonical.record_problems`: every problem of the job once,
named as the job names its suite and pipeline, by this validator) and the outcomes they imply. It is
kept only while its lease is live and open, checked again under the job layer's lock, so a lapse and a
result for the same lease never both happen; results are idempotent per (job, validator).
"""

from __future__ import annotations

from pydantic import ValidationError
from sqlalchemy import Connection, select

from shoparena.arena.canonical import outcome_problems, problem_outcome, record_problems
from shoparena.arena.errors import JobRefused, ResultConflictError
from shoparena.arena.jobs.board import JobBoard
from shoparena.arena.jobs.leases import at, lease_event, lock, own_lease
from shoparena.arena.models import JobRef, ResultAccepted, ResultIn, ResultPost
from shoparena.arena.tables import JOBS, SUBMISSIONS
from shoparena.store.errors import StoreError

SHOWN_PROBLEMS = 5


def _refusal_list(problems: list[str]) -> str:
    more = f" (+{len(problems) - SHOWN_PROBLEMS} more)" if len(problems) > SHOWN_PROBLEMS else ""
    return "; ".join(problems[:SHOWN_PROBLEMS]) + more


def parse_post(body: bytes) -> ResultPost:
    """A posted body as a `ResultPost`, or a 400 naming the first few problems."""
    try:
        return ResultPost.model_validate_json(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        shown = [f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in errors]
        raise JobRefused(400, "bad_body", f"not a result: {_refusal_list(shown)}") from None


class ResultIntake:
    """Takes the results posted to one board's leases (thread-safe)."""

    def __init__(self, board: JobBoard):
        self.board = board

    def post(self, hotkey: str, body: bytes) -> tuple[ResultAccepted, bool]:
        """Check a posted result against its job and store it with its records in one transaction."""
        board = self.board
        post = parse_post(body)
        with board.engine.connect() as connection:
            lease = own_lease(connection, post.lease_id, hotkey)
            job = connection.execute(select(JOBS).where(JOBS.c.job_id == lease.job_id)).one()
            submission = connection.execute(
                select(SUBMISSIONS).where(SUBMISSIONS.c.submission_id == lease.submission_id)
            ).one()
        if post.job_id != lease.job_id:
            raise JobRefused(
                409, "wrong_job", f"lease {post.lease_id} is for job {lease.job_id}, not job {post.job_id}"
            )
        problems = board.specs.job_problems(job).problems
        ref = JobRef(
            job_id=job.job_id,
            submission_id=submission.submission_id,
            miner_hotkey=submission.miner_hotkey,
            code_sha256=submission.code_sha256,
            suite=job.suite,
            suite_version=job.suite_version,
            scoring_pipeline_version=job.scoring_pipeline_version,
        )
        found = record_problems(post.records, ref, problems, hotkey)
        found += outcome_problems(post.outcomes, post.records) if not found else []
        if found:
            raise JobRefused(422, "bad_result", f"not job {job.job_id}'s result: {_refusal_list(found)}")
        order = {problem.problem_id: position for position, problem in enumerate(problems)}
        records = sorted(post.records, key=lambda record: order[record.problem.problem_id])
        result = ResultIn(
            submission_id=submission.submission_id,
            job_id=job.job_id,
            validator_hotkey=hotkey,
            suite=job.suite,
            suite_version=job.suite_version,
            scoring_pipeline_version=job.scoring_pipeline_version,
            problems=[problem_outcome(record) for record in records],
        )
        now = board.now()

        def store_with_result(connection: Connection) -> None:
            lock(connection)
            current = own_lease(connection, post.lease_id, hotkey)
            if current.ended is not None:
                raise JobRefused(409, "lease_ended", f"lease {post.lease_id} has ended ({current.ended})")
            if current.expires_at <= now:
                raise JobRefused(
                    409,
                    "lease_lapsed",
                    f"lease {post.lease_id} ran out at {at(current.expires_at)}; the job went back to the "
                    "queue and this result is not kept",
                )
            try:
                board.arena.store.add_within(connection, records)
            except StoreError as exc:
                raise JobRefused(422, "bad_result", f"the store cannot keep a record: {exc}") from None
            lease_event(connection, current, "completed", now, detail=f"{len(records)} records stored")

        try:
            view, created = board.ledger.add_result(result, now, within=store_with_result)
        except ResultConflictError as exc:
            raise JobRefused(409, "conflict", str(exc)) from None
        record_ids = [record.record_id for record in records]
        return ResultAccepted(created=created, result=view, record_ids=record_ids), created
