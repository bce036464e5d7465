"""What a job evaluates: one submission on a list of problems (with rewards), on the arena's catalogue,
under its evaluation settings and scoring pipeline. A job's id is a hash of exactly that, so every
validator evaluating the same thing names the same job, and results are idempotent per (job, validator).

Three kinds: a bank job evaluates the arena's own problem bank (the gate alone, before the competition);
a qualifying job the open problems the job source draws for the submission; a race job the problems its
race drew. Qualifying and race jobs pin their problem ids and the hash of the problems, so a job is
refused, not silently changed, when the race bank no longer holds them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sqlalchemy import Connection, insert, select

from shoparena.arena.config import ArenaConfig
from shoparena.arena.errors import JobRefused
from shoparena.arena.jobs.inputs import Bank, SharedInputs, common
from shoparena.arena.jobs.source import JobSource
from shoparena.arena.tables import JOBS
from shoparena.problems.canonical import canonical_json
from shoparena.problems.models import Problem
from shoparena.records.trajectory import SCORING_PIPELINE_VERSION


@dataclass(frozen=True)
class JobSpec:
    """What one job evaluates: its kind, its problems (with rewards) and how records name its suite."""

    job_id: str
    kind: str
    """bank, qualifying or race."""
    problems: list[Problem]
    problems_sha256: str
    suite: str | None
    suite_version: str | None
    race_id: str | None = None

    @property
    def problem_ids(self) -> list[str] | None:
        return None if self.kind == "bank" else [problem.problem_id or "" for problem in self.problems]


def problems_sha256(problems: Iterable[Problem]) -> str:
    """The hash of an explicit problem list (rewards included): what a qualifying or race job pins."""
    return hashlib.sha256(canonical_json([problem.to_record() for problem in problems])).hexdigest()


class JobSpecs:
    """The jobs of one arena: bank jobs from its shared inputs, qualifying and race jobs from the race
    problems its job source holds (thread-safe)."""

    def __init__(self, config: ArenaConfig, source: JobSource | None = None):
        self.config = config
        self.settings = config.evaluation
        self.inputs = SharedInputs(config)
        self.source = source

    def _race_problems(self) -> Mapping[str, Problem]:
        """The race bank's problems; none without a job source (every race problem is then missing)."""
        return {} if self.source is None else self.source.race_problems()

    def _hash(self, what: dict) -> str:
        what |= {
            "scoring_pipeline_version": SCORING_PIPELINE_VERSION,
            "settings": self.settings.model_dump(mode="json"),
        }
        return hashlib.sha256(canonical_json(what)).hexdigest()[:32]

    def bank_spec(self, submission_id: str, bank: Bank, fingerprint: str) -> JobSpec:
        """A submission's job on the arena's whole bank."""
        job_id = self._hash(
            {
                "submission_id": submission_id,
                "problems_sha256": bank.sha256,
                "catalog": fingerprint,
                "suite": [bank.suite, bank.suite_version],
            }
        )
        return JobSpec(
            job_id=job_id,
            kind="bank",
            problems=bank.problems,
            problems_sha256=bank.sha256,
            suite=bank.suite,
            suite_version=bank.suite_version,
        )

    def spec(
        self,
        kind: str,
        submission_id: str,
        problem_ids: list[str],
        fingerprint: str,
        race_id: str | None = None,
    ) -> JobSpec:
        """A qualifying or race job on `problem_ids` of the race bank; its id hashes all of it."""
        by_id = self._race_problems()
        missing = [problem_id for problem_id in problem_ids if problem_id not in by_id]
        if missing:
            raise JobRefused(
                409,
                "bank_changed",
                f"{kind} job of submission {submission_id}: problem(s) {', '.join(missing[:5])} are not in "
                "the race bank any more",
            )
        problems = [by_id[problem_id] for problem_id in problem_ids]
        digest = problems_sha256(problems)
        suite = self.settings.suite or common(p.suite for p in problems) or "race_bank"
        version = self.settings.suite_version or common(p.suite_version for p in problems) or digest[:16]
        job_id = self._hash(
            {
                "kind": kind,
                "race_id": race_id,
                "submission_id": submission_id,
                "problems_sha256": digest,
                "catalog": fingerprint,
                "suite": [suite, version],
            }
        )
        return JobSpec(
            job_id=job_id,
            kind=kind,
            problems=problems,
            problems_sha256=digest,
            suite=suite,
            suite_version=version,
            race_id=race_id,
        )

    def job_problems(self, job) -> JobSpec:
        """A stored job's problems, checked to be the ones it was made on."""
        if job.kind in (None, "bank"):
            bank = self.inputs.bank()
            if job.problems_sha256 != bank.sha256:
                raise JobRefused(409, "bank_changed", f"job {job.job_id} was made on another problem bank")
            return JobSpec(job.job_id, "bank", bank.problems, bank.sha256, job.suite, job.suite_version)
        by_id = self._race_problems()
        problems = [by_id.get(problem_id) for problem_id in job.problem_ids or []]
        if any(problem is None for problem in problems) or problems_sha256(problems) != job.problems_sha256:
            raise JobRefused(409, "bank_changed", f"job {job.job_id}'s problems changed in the race bank")
        return JobSpec(
            job.job_id, job.kind, problems, job.problems_sha256, job.suite, job.suite_version, job.race_id
        )

    def insert_job(self, connection: Connection, spec: JobSpec, submission_id: str, fingerprint: str, now):
        """Write a job's row unless it exists (the first claim of a job, or the race engine at start)."""
        known = connection.execute(select(JOBS.c.id).where(JOBS.c.job_id == spec.job_id)).first()
        if known is not None:
            return
        connection.execute(
            insert(JOBS).values(
                job_id=spec.job_id,
                submission_id=submission_id,
                problems_sha256=spec.problems_sha256,
                catalog_fingerprint=fingerprint,
                suite=spec.suite,
                suite_version=spec.suite_version,
                scoring_pipeline_version=SCORING_PIPELINE_VERSION,
                settings=self.settings.model_dump(mode="json"),
                created_at=now,
                kind=None if spec.kind == "bank" else spec.kind,
                race_id=spec.race_id,
                problem_ids=spec.problem_ids,
            )
        )
