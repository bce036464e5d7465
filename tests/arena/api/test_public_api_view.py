"""The public API and the page over the arena's own competition (`CompetitionView`, what `arena serve`
mounts): a real race run through the job layer, then read back over HTTP by anyone."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import httpx

from shoparena.arena.api.app import create_app, running
from shoparena.arena.competition.engine import RaceEngine
from shoparena.arena.competition.models import AgentDetail, LeaderboardEntry, Race, WeightVector
from shoparena.records.trajectory import TrajectoryRecord
from tests.arena.competition.race_helpers import by_miner


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
        assert served == race and served.seed == "public seed" and served.problem_ids
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
