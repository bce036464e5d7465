"""Qualifying needs a quorum (issue 22, attack 6): one low-stake validator posting "all success" for the
qualifying job it claimed must not decide the submission's qualifying score. The score stands once
`qualifying_quorum` validators (or a stake share) have reported, as their stake-weighted median, and
`miner status`, the public API and the page name the reports behind it."""

from __future__ import annotations

import httpx
import orjson
import pytest
from typer.testing import CliRunner

from shoparena.arena.api.app import create_app, running
from shoparena.arena.auth.keys import write_key_file
from shoparena.arena.competition.engine import RaceEngine
from shoparena.arena.competition.qualifying import qualifying_quorum, standing
from shoparena.arena.config import CompetitionConfig
from shoparena.arena.models import QualifyingReport
from shoparena.cli import app
from tests.arena.competition.race_helpers import make_racing, success

runner = CliRunner()


@pytest.fixture
def staked(tmp_path, small_catalog_dir, job_bank, race_bank, race_records):
    """One miner; two honest validators of stake 100 and a liar of stake 1; one validator per
    submission (the arena's default) and a threshold of 0.3 (the liar's report alone clears it)."""
    made = make_racing(
        tmp_path, small_catalog_dir, job_bank, race_bank, race_records, miners=1, validators=3,
        qualify_threshold=0.3,
    )  # fmt: skip
    honest_a, honest_b, liar = made.validators
    for key, stake in ((honest_a, 100.0), (honest_b, 100.0), (liar, 1.0)):
        made.arena.metagraph.register(key.hotkey, "validator", stake)
    yield made
    made.arena.close()


def all_success(_offer, _validator, record):
    return success(True)(record)


def all_failure(_offer, _validator, record):
    return success(False)(record)


def test_a_stake_one_validator_alone_does_not_decide_a_qualifying_score(staked, tmp_path):
    (miner,) = staked.miners
    honest_a, _honest_b, liar = staked.validators
    submission_id = staked.submit(miner)
    assert staked.evaluate(liar, all_success) is not None  # the liar claims first and lies
    engine = RaceEngine(staked.arena, clock=staked.clock, board=staked.board)
    with staked.arena.store.engine.connect() as connection:
        assert submission_id not in engine.qualifying_scores(connection)  # one report: no score yet
    assert engine.qualifiers() == []
    # the job goes to a second validator, whose honest report makes the quorum
    assert staked.evaluate(honest_a, all_failure) is not None
    with staked.arena.store.engine.connect() as connection:
        scores = engine.qualifying_scores(connection)
    assert scores[submission_id] == 0.0  # the stake-weighted median: the liar's 1 stake moves nothing
    assert engine.qualifiers() == []

    with running(create_app(staked.arena, clock=staked.clock)) as url:
        detail = httpx.get(f"{url}/v1/agents/{submission_id}", timeout=30).json()
        page = httpx.get(f"{url}/agents/{submission_id}", timeout=30).text
        key_file = tmp_path / "miner.json"
        write_key_file(key_file, miner.file)
        shown = runner.invoke(
            app, ["miner", "status", "--arena", url, "--key", str(key_file), submission_id, "--json"]
        )
        said = runner.invoke(app, ["miner", "status", "--arena", url, "--key", str(key_file), submission_id])
    assert detail["qualifying_score"] == 0.0 and detail["qualified"] is False
    reports = {r["validator_hotkey"]: (r["stake"], r["score"]) for r in detail["qualifying"]["reports"]}
    assert reports[liar.hotkey][0] == 1.0 and reports[liar.hotkey][1] >= 0.3
    assert reports[honest_a.hotkey] == (100.0, 0.0)
    assert liar.hotkey in page and honest_a.hotkey in page and "stake-weighted median" in page
    assert shown.exit_code == 0, shown.output
    status = orjson.loads(shown.stdout)
    assert status["qualifying"]["stands"] and status["qualifying"]["score"] == 0.0
    assert {r["validator_hotkey"] for r in status["qualifying"]["reports"]} == {liar.hotkey, honest_a.hotkey}
    assert "qualifying score 0.000" in said.stdout and liar.hotkey in said.stdout


def test_the_quorum_defaults_to_two_and_a_stake_share_can_stand_in():
    config = CompetitionConfig()
    assert qualifying_quorum(config, 3) == (2, False)
    assert qualifying_quorum(config, 1) == (1, True)
    assert qualifying_quorum(CompetitionConfig(qualifying_quorum=3), 5) == (3, False)
    stakes = {"a": 100.0, "b": 100.0, "whale": 500.0}
    one = [QualifyingReport(validator_hotkey="a", stake=100.0, score=0.9)]
    assert (
        standing(one, stakes, config).score is None
        and "waiting for 2" in standing(one, stakes, config).detail
    )
    whale = [QualifyingReport(validator_hotkey="whale", stake=500.0, score=0.4)]
    assert standing(whale, stakes, config).score == 0.4  # 71 % of the stake ≥ 66 %
    alone = standing(one, {"a": 100.0}, config)
    assert alone.stands and alone.single_validator and "one validator decides" in alone.detail
