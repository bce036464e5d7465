"""Race fixtures: a small race bank with leak clusters, and one real run of the benign miner over it
(the validators in these tests post those records, re-cast for their jobs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from tests.arena.competition.race_helpers import make_racing
from tests.arena.job_helpers import BENIGN_AGENT


@pytest.fixture(scope="session")
def race_bank(small_catalog, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("race-bank") / "race_bank.jsonl"
    problems = ProblemGenerator(small_catalog, seed=11).generate(8, buckets=("product", "shop", "voucher"))
    write_problems(path, problems)
    return path


@pytest.fixture(scope="session")
def race_records(small_catalog_dir, race_bank, tmp_path_factory):
    from shoparena.eval.config import EvalConfig
    from shoparena.eval.run_dir import TRAJECTORIES_FILE, read_trajectories
    from shoparena.eval.runner import run_eval
    from shoparena.judge import OfflineJudge

    out = tmp_path_factory.mktemp("race-run") / "run"
    config = EvalConfig(
        catalog=small_catalog_dir,
        problems=race_bank,
        agent=f"file:{BENIGN_AGENT}",
        out=out,
        mode="strict",
        similarity="lexical",
        timeout=60,
        bootstrap=0,
        sandbox="none",
    )
    run_eval(config, judge=OfflineJudge())
    return read_trajectories(out / TRAJECTORIES_FILE).records


@pytest.fixture
def racing(tmp_path, small_catalog_dir, job_bank, race_bank, race_records):
    """Three miners (uids 1–3), three validators (uids 100–102, equal stake), a race bank, 2 problems a race."""
    made = make_racing(tmp_path, small_catalog_dir, job_bank, race_bank, race_records)
    yield made
    made.arena.close()
