"""Fresh races in a season (issue 22): three days over two rotation periods on a race bank that holds
one race's worth of fresh problems. The season's operator adds problems before each period freezes,
every day races, and no race problem was public before its race (`reused_problems` is 0)."""

from __future__ import annotations

from shoparena.arena import open_arena
from shoparena.arena.competition.bank import read_bank
from shoparena.season.driver import Season
from shoparena.season.setup import SeasonSettings


def test_the_operator_keeps_the_bank_fresh_and_no_problem_is_raced_twice(tmp_path, sandbox_ready):
    settings = SeasonSettings(
        miners=1, validators=1, days=3, seed=4, sandbox="bwrap", race_problems=3, qualifying_problems=1,
        qualifying_bank=3, race_bank=6, dishonest=False,
    )  # fmt: skip
    season = Season(tmp_path / "arena", settings).run()
    assert season.reused_problems == 0
    assert [day.state for day in season.progress] != ["POSTPONED"] * 3
    assert all(day.state in ("RACE_COMPLETE", "CANCELLED") for day in season.progress)
    # the first 3 of the 6 tasks are the arena's own suite's (same seed: never-touch), 2 of the other 3 are
    # held out, less than one race: the operator added before period 0 froze and again before period 1
    assert [top_up.period for top_up in season.bank_top_ups] == [0, 1]
    assert all(top_up.fresh_after >= 2 * settings.race_problems for top_up in season.bank_top_ups)
    with open_arena(tmp_path / "arena") as arena:
        bank = read_bank(arena.dir)
    raced: set[str] = set()
    for race in season.races:
        clusters = {bank.cluster_of[pid] for pid in race.problem_ids}
        assert len(race.problem_ids) == 3 and not clusters & raced
        raced |= clusters
