"""The canonical form of an arena evaluation's records, for any job and validator: idempotent, accepted
as the job's own, and refused as soon as any piece of provenance is another job's."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.arena.canonical import canonical_record, outcome_problems, problem_outcome, record_problems
from shoparena.arena.models import JobRef
from shoparena.problems.io import read_problems
from shoparena.records.trajectory import SCORING_PIPELINE_VERSION

ids = st.text(alphabet="0123456789abcdef", min_size=32, max_size=32)
hotkeys = st.text(
    alphabet="123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", min_size=48, max_size=48
)
labels = st.none() | st.text(min_size=1, max_size=40)
jobs = st.builds(
    JobRef,
    job_id=ids,
    submission_id=ids,
    miner_hotkey=hotkeys,
    code_sha256=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    suite=labels,
    suite_version=labels,
    scoring_pipeline_version=st.just(SCORING_PIPELINE_VERSION),
)
CHANGES = ("job_id", "submission_id", "miner_hotkey", "code_sha256")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(job=jobs, validator=hotkeys, other=hotkeys, change=st.sampled_from(CHANGES))
def test_canonical_records_are_the_jobs_and_only_its(raw_records, job_bank, job, validator, other, change):
    problems = read_problems(job_bank).problems
    canonical = [canonical_record(record, job, validator) for record in raw_records]
    assert [canonical_record(record, job, validator) for record in canonical] == canonical
    assert record_problems(canonical, job, problems, validator) == []
    outcomes = [problem_outcome(record) for record in canonical]
    assert outcome_problems(outcomes, canonical) == []
    assert len({record.record_id for record in canonical}) == len(canonical)
    if other != validator:
        assert record_problems(canonical, job, problems, other)  # another validator's records
    altered = job.model_copy(update={change: getattr(job, change)[::-1] + "0"})
    assert record_problems(canonical, altered, problems, validator)  # another job's records
    assert record_problems(canonical[1:], job, problems, validator)  # a problem left out
    assert record_problems([*canonical, canonical[0]], job, problems, validator)  # one twice


def test_crashing_where_the_reasoning_is_poor_cannot_lift_q():
    """The attack: a miner that crashes on purpose wherever its reasoning would be graded low, to leave
    those problems out of q. A crash is not judged (its verdict is dropped even when a record carries
    one), but it counts in q at the floor, so q is what honest failure would have earned."""
    from shoparena.arena.canonical import result_scores
    from shoparena.arena.models import ProblemResultIn
    from shoparena.scoring.judge_summary import ERRORED_QUALITY

    good = ProblemResultIn(problem_id="p1", success=True, judge_quality=0.9, judge_gate="passed")
    honest = ProblemResultIn(problem_id="p2", success=False, judge_quality=0.1, judge_gate="reasoned")
    crashed = ProblemResultIn(problem_id="p2", success=False, error="agent_main failed: RuntimeError: dodge")
    dodged = result_scores([good, crashed])
    assert dodged.judge_quality == result_scores([good, honest]).judge_quality == (0.9 + ERRORED_QUALITY) / 2
    assert dodged.coefficient < 1 and dodged.final_score == result_scores([good, honest]).final_score
    # nothing judged at all (every problem crashed): no q, and the score is 0
    assert result_scores([crashed]).judge_quality is None and (result_scores([crashed]).final_score or 0) == 0
