"""`arena status` under the competition: the newest race's state beside the queue (`arena.overview`)."""

from __future__ import annotations

from shoparena.arena.competition.engine import RaceEngine
from shoparena.arena.overview import arena_overview
from tests.arena.competition.race_helpers import by_miner


def test_the_overview_names_the_newest_race_and_its_state(racing):
    a, b, _c = racing.miners
    before = arena_overview(racing.arena, racing.board)
    assert before.competition and before.latest_race is None
    for miner in (a, b):
        racing.submit(miner)
    racing.drain(outcome=by_miner({}))
    engine = RaceEngine(racing.arena, clock=racing.clock, board=racing.board)
    opened = engine.open_race(seed="overview")
    running = arena_overview(racing.arena, racing.board).latest_race
    assert (running.race_id, running.state) == (opened.race_id, "QUALIFYING_OPEN")
    engine.start_race()
    racing.drain(outcome=by_miner({a.hotkey: 1.0, b.hotkey: 0.5}))
    racing.clock.advance(minutes=5)
    engine.close_race()
    closed = arena_overview(racing.arena, racing.board).latest_race
    assert closed.state == "RACE_COMPLETE" and closed.winner == a.hotkey and closed.closed_at is not None
