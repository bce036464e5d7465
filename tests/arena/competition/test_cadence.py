"""Weights on a cadence (issue 23): the last race's weights are set again every `weights_interval_s`
by the race scheduler; a failed push is retried with backoff and shown by `arena status`."""

from __future__ import annotations

from shoparena.arena.competition.cadence import read_push_status
from shoparena.arena.competition.scheduler import RaceScheduler
from tests.arena.competition.race_helpers import by_miner
from tests.arena.competition.test_engine import engine_for, qualify, run_race
from tests.arena.competition.test_race_cli import invoke


class FlakyChain:
    """A chain adapter whose first `failures` pushes fail (a node that is down, say)."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.vectors = []

    def set_weights(self, vector) -> None:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("the chain node is unreachable")
        self.vectors.append(vector)


def test_the_weights_are_set_again_on_their_cadence_and_a_failed_push_retries(racing):
    a, b, _ = racing.miners
    qualify(racing, a, b)
    chain = FlakyChain(failures=2)
    engine = engine_for(racing, chain=chain)
    scheduler = RaceScheduler(engine, period_s=1)
    race = run_race(racing, engine, outcome=by_miner({a.hotkey: 1.0, b.hotkey: 0.5}))
    assert race.state == "RACE_COMPLETE" and chain.vectors == []  # the push at close failed
    status = read_push_status(racing.arena.dir)
    assert (status.race_id, status.failures, status.last_success_at) == (race.race_id, 1, None)
    assert "unreachable" in status.last_error

    shown = invoke("arena", "status", "--dir", racing.arena.dir)
    assert shown.exit_code == 0 and "1 failed push(es) in a row" in shown.output, shown.output

    assert scheduler.tick() == []  # the retry waits its backoff (10 s)
    racing.clock.advance(seconds=10)
    assert scheduler.tick() == [f"failed to set the weights of {race.race_id} again"]
    assert read_push_status(racing.arena.dir).failures == 2
    racing.clock.advance(seconds=19)
    assert scheduler.tick() == []  # the backoff doubled: 20 s
    racing.clock.advance(seconds=1)
    assert scheduler.tick() == [f"set the weights of {race.race_id} again"]
    assert chain.vectors == [engine.latest_weights()]
    status = read_push_status(racing.arena.dir)
    assert status.failures == 0 and status.last_error is None

    racing.clock.advance(seconds=299)
    assert scheduler.tick() == []
    racing.clock.advance(seconds=1)  # weights_interval_s (300) after the last push: set again
    assert scheduler.tick() == [f"set the weights of {race.race_id} again"]
    assert len(chain.vectors) == 2 and chain.vectors[0] == chain.vectors[1]
    shown = invoke("arena", "status", "--dir", racing.arena.dir)
    assert f"weights: {race.race_id} set at" in shown.output and "again at" in shown.output
