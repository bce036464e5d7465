"""The competition's public read API over a real arena on a loopback port: unsigned reads of the
leaderboard, races (sealed until they close), agents, weights, and the code embargo."""

from __future__ import annotations

import hashlib
import os
import time
from datetime import datetime, timedelta

import pytest

from shoparena.arena.api.public import MAX_RACES
from shoparena.arena.competition.models import AgentDetail, LeaderboardEntry, Race, WeightVector
from tests.arena.api.public_fixtures import T0, XSS_HOTKEY, XSS_NAME, MemoryCompetition, build_season


def at(clock, moment: datetime) -> None:
    """Set the server's clock to `moment`."""
    clock.offset = moment.timestamp() - time.time()


@pytest.fixture
def season(arena, miner):
    return build_season(arena, miner.hotkey, XSS_HOTKEY, "5Rookie")


@pytest.fixture
def public(arena, season, server_factory, clock):
    at(clock, T0 + timedelta(hours=2))
    return server_factory(arena, competition=season.reader)


def test_leaderboard_is_public_and_is_the_readers_ranking(public, season):
    response = public.http.get("/v1/leaderboard")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    entries = [LeaderboardEntry.model_validate(item) for item in response.json()]
    assert entries == season.reader.entries
    assert [entry.name for entry in entries] == ["steady-pipeline", XSS_NAME]


def test_races_list_newest_first_and_the_limit_is_capped(public, season):
    listed = public.http.get("/v1/races").json()
    assert [race["race_id"] for race in listed] == ["race-0002", "race-0001"]
    assert public.http.get("/v1/races", params={"limit": 1}).json()[0]["race_id"] == "race-0002"
    assert public.http.get("/v1/races", params={"limit": 10**6}).status_code == 200
    assert season.reader.asked_limits[-1] == MAX_RACES
    assert public.http.get("/v1/races", params={"limit": 0}).status_code == 422


def test_a_complete_race_shows_seed_problems_and_results_and_the_seed_matches_the_commitment(public):
    race = Race.model_validate(public.http.get("/v1/races/race-0001").json())
    assert race.state == "RACE_COMPLETE"
    assert race.seed is not None
    assert hashlib.sha256(race.seed.encode()).hexdigest() == race.seed_commitment
    assert race.problem_ids == ["p-001", "p-002", "p-003"]
    assert [result.score for result in race.results] == [0.71, 0.64]
    assert race.winner is not None and race.promoted


def test_a_running_race_withholds_its_secrets_even_when_the_reader_has_them(public, season):
    for race in (
        Race.model_validate(public.http.get("/v1/races/race-0002").json()),
        Race.model_validate(public.http.get("/v1/races").json()[0]),
    ):
        assert race.state == "RACE_RUNNING"
        assert race.seed_commitment == hashlib.sha256(season.running_seed.encode()).hexdigest()
        assert race.seed is None and race.problem_ids is None and race.race_clusters is None
    raw = public.http.get("/v1/races").text
    assert season.running_seed not in raw and "p-secret-1" not in raw and "c-secret" not in raw


def test_unknown_race_and_agent_are_404_naming_them(public):
    response = public.http.get("/v1/races/no-such-race")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found" and "no-such-race" in response.json()["message"]
    for submission_id in ("0" * 32, "not-an-id", "A" * 32):
        assert public.http.get(f"/v1/agents/{submission_id}").status_code == 404
        assert public.http.get(f"/v1/agents/{submission_id}/code").status_code == 404


def test_agent_detail(public, season):
    detail = AgentDetail.model_validate(public.http.get(f"/v1/agents/{season.champion}").json())
    assert detail == season.reader.agents[season.champion]
    assert detail.by_bucket[0].bucket == "product" and detail.judge_quality["0.9"] == 6
    assert detail.by_axis == {"relevance": 0.8, "price": 0.6}


def test_code_is_embargoed_until_release_then_served_sha_checked(public, season, clock):
    url = f"/v1/agents/{season.champion}/code"
    refused = public.http.get(url)
    assert refused.status_code == 403
    body = refused.json()
    assert body["error"] == "embargoed"
    assert datetime.fromisoformat(body["release_at"]) == season.release_at
    wait = int(refused.headers["Retry-After"])
    assert body["retry_after_s"] == wait
    assert abs(wait - (season.release_at - (T0 + timedelta(hours=2))).total_seconds()) <= 2
    at(clock, season.release_at - timedelta(seconds=1))
    assert public.http.get(url).status_code == 403
    at(clock, season.release_at)
    released = public.http.get(url)
    assert released.status_code == 200
    assert released.headers["content-type"].startswith("text/x-python")
    assert released.content == season.codes[season.champion]
    assert released.headers["X-Code-Sha256"] == hashlib.sha256(released.content).hexdigest()


def test_code_of_an_agent_never_crowned_is_not_released(public, season, clock):
    at(clock, T0 + timedelta(days=365))
    for submission_id in (season.challenger, season.rookie):
        response = public.http.get(f"/v1/agents/{submission_id}/code")
        assert response.status_code == 403
        assert response.json()["error"] == "not_released"
        assert "never crowned" in response.json()["message"]
        assert response.json()["release_at"] is None and "Retry-After" not in response.headers


def test_altered_code_is_refused_not_served(public, season, arena, clock):
    at(clock, season.release_at + timedelta(hours=1))
    sha256 = arena.ledger.get(season.champion).code_sha256
    path = arena.code.path(sha256)
    os.chmod(path, 0o644)
    path.write_bytes(b"import os\nos.system('rm -rf /')\n")
    response = public.http.get(f"/v1/agents/{season.champion}/code")
    assert response.status_code == 503
    assert response.json()["error"] == "unavailable" and "altered" in response.json()["message"]
    assert b"rm -rf" not in response.content


def test_weights_before_and_after_the_first_race(arena, server_factory):
    reader = MemoryCompetition()
    server = server_factory(arena, competition=reader)
    missing = server.http.get("/v1/weights")
    assert missing.status_code == 404 and "first complete race" in missing.json()["message"]
    reader.weight = WeightVector(race_id="r", uids=[0, 3], weights=[0.75, 0.25])
    assert WeightVector.model_validate(server.http.get("/v1/weights").json()) == reader.weight


def test_an_empty_arena_answers_empty_lists(arena, server_factory):
    server = server_factory(arena, competition=MemoryCompetition())
    assert server.http.get("/v1/leaderboard").json() == []
    assert server.http.get("/v1/races").json() == []


def test_the_signed_endpoints_stay_signed(public, miner):
    assert public.http.get("/v1/miner/submissions").status_code == 401
    assert public.http.post("/v1/validator/claim", content=b"{}").status_code == 401
    assert public.signed("GET", "/v1/miner/submissions", miner).status_code == 200
    assert public.http.get("/v1/health").json()["status"] == "ok"


def test_by_default_the_server_reads_the_arenas_own_competition(server):
    """`create_app(arena)` mounts the public reads over `CompetitionView`: a fresh arena has nothing."""
    assert server.http.get("/v1/leaderboard").json() == []
    assert server.http.get("/v1/races").json() == []
    assert server.http.get("/v1/weights").status_code == 404
    assert server.http.get(f"/v1/agents/{'0' * 32}").status_code == 404
    assert "No agent holds the crown yet" in server.http.get("/").text
