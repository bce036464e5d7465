"""The job source: what the job layer asks of whoever decides the competition's jobs.

The gate (auth, ledger, the job layer) sits below the competition and never imports it. Once the
competition is on, what a new submission is evaluated on — its qualifying problems — and which race
problems a job may pin are the competition's to say, so the job layer asks a `JobSource`, which the
competition implements (`competition.job_source.CompetitionJobSource`) and the app injects into the
`JobBoard`. A board without a source runs the gate alone: every job is a bank job.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from shoparena.problems.models import Problem


class JobSource(Protocol):
    def competition_on(self) -> bool:
        """Whether new evaluations are qualifying runs (the competition has its race bank)."""
        ...

    def race_problems(self) -> Mapping[str, Problem]:
        """The race bank's problems by id: what qualifying and race jobs are made of."""
        ...

    def competition_start(self, now: datetime) -> int:
        """The competition's first rotation period, asked once per claim and handed back to
        `qualifying_problem_ids` (it only ever becomes fixed, never moves)."""
        ...

    def qualifying_problem_ids(self, submission_id: str, submitted_at: datetime, start: int) -> list[str]:
        """The race problems a submission qualifies on: the same for every validator and every retry."""
        ...

    def qualifying_validators(self, registered: int) -> int:
        """How many validators the competition needs on each qualifying job, `registered` being how many
        are registered (its qualifying quorum: no single validator decides a qualifying score)."""
        ...
