"""Subnet miners run unchanged (issue 23): a miner shaped like SN15's template agent and two in its
style go through `miner try` and through the arena round trip (submitted, evaluated by a validator
in the bwrap sandbox, scored) with no edit."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoparena.arena.models import EvaluationSettings
from shoparena.arena.participants.tryout import TryoutSettings, try_agent
from tests.arena.job_helpers import client
from tests.arena.participants.test_validator import validating

SUBNET_MINERS = Path(__file__).parents[2] / "agents" / "miners" / "subnet"
MINERS = ("template_shaped_miner", "minimal_subnet_miner", "native_subnet_miner")
FAST = EvaluationSettings(similarity="lexical", timeout_s=60)
pytestmark = pytest.mark.usefixtures("sandbox_ready")


@pytest.mark.parametrize("name", MINERS)
def test_a_subnet_miner_runs_unchanged_through_miner_try(name, tmp_path, small_catalog_dir, job_bank):
    settings = TryoutSettings(
        out=tmp_path / "try", catalog=small_catalog_dir, problems=job_bank, evaluation=FAST
    )
    report = try_agent(SUBNET_MINERS / f"{name}.py", settings)
    assert report.admitted and report.violations == []
    assert len(report.outcomes) == 3
    assert [o.error for o in report.outcomes] == [None, None, None]
    assert all(not o.end_reason.startswith("agent error") for o in report.outcomes)
    assert report.scores is not None and report.scores.final_score is not None
    if name != "minimal_subnet_miner":  # the model-driven ones solve problems offline
        assert report.scores.asr > 0, [(o.problem_id, o.end_reason) for o in report.outcomes]


def test_subnet_miners_make_the_arena_round_trip(job_arena, server_factory, miner, validator):
    server = server_factory(job_arena)
    submitted = {}
    with client(server, miner) as session:
        for name in MINERS:
            code = (SUBNET_MINERS / f"{name}.py").read_text()
            submitted[name] = session.submit(f"{name}.py", code).submission_id
    with validating(server, validator, sandbox="bwrap") as evaluator:
        reports = [evaluator.run_once() for _ in MINERS]
    assert [report.status for report in reports] == ["posted"] * 3
    for name, submission_id in submitted.items():
        view = job_arena.ledger.get(submission_id)
        (result,) = view.results
        assert view.status == "scored" and result.problems == 3, name
        assert all(p.error is None for p in result.per_problem), (
            name,
            [p.end_reason for p in result.per_problem],
        )
        assert result.final_score is not None
    template = job_arena.ledger.get(submitted["template_shaped_miner"]).results[0]
    assert template.asr > 0
