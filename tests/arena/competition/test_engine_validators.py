"""A race end to end with real validators: miners submit over the signed API, `Validator` processes
claim the qualifying and race jobs through the real server, run the miner file on the race bank's
problems and post canonical records; the engine closes the race from what they posted."""

from __future__ import annotations

import pytest

from shoparena.arena.competition.engine import RaceEngine
from shoparena.arena.participants.client import ArenaClient
from shoparena.arena.participants.validator import Validator, ValidatorSettings
from tests.arena.competition.race_helpers import make_racing
from tests.arena.job_helpers import submit


def run_all(server, keys, catalog) -> list:
    reports = []
    for key in keys:
        with (
            ArenaClient(server.url, key.keypair) as client,
            Validator(client, ValidatorSettings(catalog=catalog, sandbox="none")) as validator,
        ):
            while (report := validator.run_once()) is not None:
                assert report.status == "posted", report.detail
                reports.append(report)
    return reports


class Recorder:
    def __init__(self) -> None:
        self.vectors = []

    def set_weights(self, vector) -> None:
        self.vectors.append(vector)


@pytest.mark.parametrize("validator_stake", [10.0, 0.0], ids=["staked", "no-stake"])
def test_real_validators_qualify_and_race_two_miners(
    tmp_path, small_catalog_dir, job_bank, race_bank, race_records, server_factory, validator_stake
):
    """With no stake behind any validator (a local arena registered without --stake), the race still
    closes: every validator counts equally, in the scores and in the consensus weights alike."""
    racing = make_racing(
        tmp_path,
        small_catalog_dir,
        job_bank,
        race_bank,
        race_records,
        miners=2,
        validators=2,
        race_problems=1,
        qualifying_problems=1,
    )
    try:
        server = server_factory(racing.arena)
        submissions = [submit(server, miner) for miner in racing.miners]
        qualifying = run_all(server, racing.validators, small_catalog_dir)
        # the qualifying quorum: both validators evaluate each submission's qualifying run
        assert sorted(r.submission_id for r in qualifying) == sorted(submissions * 2)
        assert [r.problems for r in qualifying] == [1] * 4  # qualifying_problems of the open partition

        chain = Recorder()
        engine = RaceEngine(racing.arena, chain=chain)
        opened = engine.open_race()
        engine.start_race()
        raced = run_all(server, racing.validators, small_catalog_dir)
        for uid, key in enumerate(racing.validators, start=100):
            racing.arena.metagraph.register(key.hotkey, "validator", validator_stake, uid=uid)
        assert len(raced) == 2 * 2  # every validator evaluated every racer
        assert {r.job_id for r in raced} == set(_race_jobs(racing.arena, opened.race_id))
        assert engine.complete(opened.race_id)
        race = engine.close_race()
        assert race.state == "RACE_COMPLETE"
        assert sorted(r.submission_id for r in race.results) == sorted(submissions)
        assert all(len(r.by_validator) == 2 for r in race.results)
        # the benign miner is the same code for both: the tie goes to the earlier submission
        assert race.results[0].submission_id == submissions[0] and race.winner == racing.miners[0].hotkey
        assert len(chain.vectors) == 1 and abs(sum(chain.vectors[0].weights) - 1.0) < 1e-12
        # the race's records are in the store under their race job: one per problem and validator
        from shoparena.store.query import RecordFilter

        for job_id in _race_jobs(racing.arena, opened.race_id):
            assert racing.arena.store.count(RecordFilter(run=job_id)) == 1 * 2
    finally:
        racing.arena.close()


def _race_jobs(arena, race_id: str) -> list[str]:
    from sqlalchemy import select

    from shoparena.arena.tables import JOBS

    with arena.store.engine.connect() as connection:
        return list(connection.execute(select(JOBS.c.job_id).where(JOBS.c.race_id == race_id)).scalars())
