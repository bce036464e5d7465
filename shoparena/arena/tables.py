"""The arena's tables as SQLAlchemy Core sees them, named once for every query of the ledger, the job
layer, the competition and the operator's view (`schema` holds the mapped classes and the SQL names)."""

from __future__ import annotations

from shoparena.arena.schema import (
    AuditEntry,
    Job,
    JobLease,
    LeaseEvent,
    Neuron,
    ProblemResult,
    Race,
    RaceEntry,
    RaceEvent,
    RaceOutcome,
    Submission,
    SubmissionEvent,
    SubmissionResult,
    WeightVectorRow,
)

NEURONS = Neuron.__table__
SUBMISSIONS = Submission.__table__
SUBMISSION_EVENTS = SubmissionEvent.__table__
SUBMISSION_RESULTS = SubmissionResult.__table__
PROBLEM_RESULTS = ProblemResult.__table__
AUDIT = AuditEntry.__table__
JOBS = Job.__table__
JOB_LEASES = JobLease.__table__
LEASE_EVENTS = LeaseEvent.__table__
RACES = Race.__table__
RACE_EVENTS = RaceEvent.__table__
RACE_ENTRIES = RaceEntry.__table__
RACE_OUTCOMES = RaceOutcome.__table__
WEIGHT_VECTORS = WeightVectorRow.__table__
