"""The public API and the page over the arena's own competition (`CompetitionView`, what `arena serve`
mounts): a real race run through the job layer, then read back over HTTP by anyone."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import httpx

from shoparena.arena.api.app import create_app, running
from shoparena.arena.competition.engine import RaceEngine
from shoparena.arena.competition.models import AgentDetail, LeaderboardEntry, Race, WeightVector
from shoparena.records.trajectory import TrajectoryRecord
from tests.arena.competition.race_helpers import by_miner

NAMES = {"winner_name": True, "incumbent_before_name": True, "results": {"__all__": {"name"}}}
"""What the view adds to a race as the engine closed it: the submissions' names."""


def test_a_real_race_read_back_over_the_public_api(racing):
    a, b, c = racing.miners
    ids = [racing.submit(miner, tweak=f"\n# {n}\n") for n, miner in enumerate((a, b, c))]
    racing.drain()
    engine = RaceEngine(racing.arena, clock=racing.clock, board=racing.board)
    with running(create_app(racing.arena, clock=racing.clock)) as url, httpx.Client(base_url=url) as http:
        opened = engine.open_race(seed="public seed")
        engine.start_race()
        live = Race.model_validate(http.get(f"/v1/races/{opened.race_id}").json())
        assert live.state == "RACE_RUNNING" and live.seed is None and live.problem_ids is None
        assert live.seed_commitment == hashlib.sha256(b"public seed").hexdigest()
        assert "public seed" not in http.get("/").text

        racing.drain(outcome=by_miner({a.hotkey: 1.0, b.hotkey: 0.5, c.hotkey: 0.0}))
        racing.clock.advance(minutes=5)
        race = engine.close_race()

        served = Race.model_validate(http.get(f"/v1/races/{race.race_id}").json())
        assert served.model_dump(exclude=NAMES) == race.model_dump(exclude=NAMES)
        assert served.seed == "public seed" and served.problem_ids and served.winner_name == "agent.py"
        board = [LeaderboardEntry.model_validate(e) for e in http.get("/v1/leaderboard").json()]
        assert [entry.hotkey for entry in board] == [a.hotkey, b.hotkey, c.hotkey]
        assert board[0].incumbent and board[0].submission_id == ids[0]
        weights = WeightVector.model_validate(http.get("/v1/weights").json())
        assert weights.source == "consensus" and 1 in weights.uids

        detail = AgentDetail.model_validate(http.get(f"/v1/agents/{ids[0]}").json())
        assert detail.incumbent and detail.code_release_at == race.code_release_at
        assert detail.by_bucket and detail.judge_quality
        embargoed = http.get(f"/v1/agents/{ids[0]}/code")
        assert embargoed.status_code == 403 and embargoed.json()["error"] == "embargoed"
        assert http.get(f"/v1/agents/{ids[1]}/code").json()["error"] == "not_released"
        racing.clock.at = race.code_release_at + timedelta(seconds=1)
        code = http.get(f"/v1/agents/{ids[0]}/code")
        assert code.status_code == 200 and code.text == racing.code + "\n# 0\n"

        page = http.get("/").text
        assert "RACE_COMPLETE" in page and f"/agents/{ids[0]}" in page and "incumbent" in page
        agent_page = http.get(f"/agents/{ids[0]}").text
        assert f'href="/v1/agents/{ids[0]}/code"' in agent_page and 'class="bar-fill"' in agent_page

        mine = http.get("/v1/trajectories", params={"agent": f"arena:{ids[0]}", "limit": 500})
        records = [TrajectoryRecord.model_validate_json(line) for line in mine.content.splitlines()]
        assert records and all(record.agent.spec == f"arena:{ids[0]}" for record in records)
        assert {record.problem.problem_id for record in records} >= set(race.problem_ids or [])


def test_race_counts_names_and_the_qualifying_bar_agree_across_the_pages(racing):
    """A season with a resubmission and a cancelled race: the leaderboard's `races` is the number of
    rows on the agent's page (each with its race id), people read names rather than hotkeys, and the
    agent page says which bar its qualifying score met."""
    from shoparena.arena.competition.view import CompetitionView

    a, b, c = racing.miners
    first = {miner.hotkey: racing.submit(miner, name=f"{n}-agent.py", tweak=f"\n# {n}\n")
             for n, miner in zip("abc", (a, b, c), strict=True)}  # fmt: skip
    racing.drain()
    engine = RaceEngine(racing.arena, clock=racing.clock, board=racing.board)

    def race(outcome=None):
        racing.clock.advance(minutes=5)
        engine.open_race()
        engine.start_race()
        if outcome is not None:
            racing.drain(outcome=outcome)
        racing.clock.advance(minutes=5)
        return engine.close_race()

    one = race(by_miner({a.hotkey: 1.0, b.hotkey: 0.5, c.hotkey: 0.0}))
    newer = racing.submit(a, name="a-agent-v2.py", tweak="\n# a2\n")  # a's hotkey now has two submissions
    racing.drain(outcome=by_miner({a.hotkey: 1.0}))
    two = race(by_miner({a.hotkey: 0.2, b.hotkey: 1.0, c.hotkey: 0.0}))
    cancelled = race()  # nobody evaluates it: cancelled, nobody has a result in it
    assert (one.state, two.state, cancelled.state) == ("RACE_COMPLETE", "RACE_COMPLETE", "CANCELLED")
    raced_by = {sid for r in (one, two) for sid in (x.submission_id for x in r.results)}
    assert newer in raced_by or first[a.hotkey] in raced_by

    view = CompetitionView(racing.arena, engine)
    board = view.leaderboard()
    assert board
    for entry in board:
        detail = view.agent(entry.submission_id)
        assert entry.races == len(detail.race_scores), (entry.name, entry.races, detail.race_scores)
        assert all(r.race_id in (one.race_id, two.race_id) for r in detail.race_scores)
    assert {r.race_id for r in view.agent(first[b.hotkey]).race_scores} == {one.race_id, two.race_id}

    served = {r.race_id: r for r in view.races(10)}
    assert [x.name for x in served[one.race_id].results] == ["a-agent.py", "b-agent.py", "c-agent.py"]
    assert served[two.race_id].winner_name == "b-agent.py"
    assert served[two.race_id].incumbent_before_name == "a-agent.py"

    with running(create_app(racing.arena, clock=racing.clock)) as url, httpx.Client(base_url=url) as http:
        front = http.get("/").text.replace("<wbr>", "")  # names may break at their parts
        assert re.search(r'title="[^"]+">b-agent\.py</a> \d\.\d{3}</li>', front)  # race results by name
        assert a.hotkey[:13] + "…</code></a>" not in front  # not by a truncated hotkey
        page = http.get(f"/agents/{first[b.hotkey]}").text
        assert f'href="/races/{one.race_id}">{one.race_id}</a>' in page
        assert f'href="/races/{two.race_id}">{two.race_id}</a>' in page
        assert "2 races with a result for this submission" in page
        assert "is at or above the arena's bar of 0.000 (a bar of 0 lets every scored agent race)" in page
        race_page = http.get(f"/races/{two.race_id}").text.replace("<wbr>", "")
        assert "b-agent.py" in race_page and "a-agent.py" in race_page
