"""The leaderboard page as HTML over a real arena on a loopback port: what it shows for a season, for
an empty arena, and that attacker-chosen names and hotkeys are text, never markup."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from markupsafe import escape

from shoparena.arena.api.web.pages import BAR_WIDTH, quality_chart
from tests.arena.api.public_fixtures import T0, XSS_HOTKEY, XSS_NAME, MemoryCompetition, build_season


@pytest.fixture
def season(arena, miner):
    return build_season(arena, miner.hotkey, XSS_HOTKEY, "5Rookie")


@pytest.fixture
def site(arena, season, server_factory, clock):
    clock.offset = (T0 + timedelta(hours=2)).timestamp() - time.time()
    return server_factory(arena, competition=season.reader)


def page(server, path: str, status: int = 200) -> str:
    response = server.http.get(path)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    return response.text


def section(text: str, section_id: str) -> str:
    """The element with this id (a section, or the agent page's `dd` of its code)."""
    match = re.search(rf'<(section|dd)[^>]*id="{section_id}".*?</\1>', text, re.S)
    assert match, f"no element {section_id}"
    return match.group(0)


def test_the_front_page_shows_the_crown_the_ranking_and_the_races(site, season, miner):
    text = page(site, "/")
    crown = section(text, "incumbent")
    assert "steady-pipeline" in crown and f"/agents/{season.champion}" in crown and "0.710" in crown
    ranking = section(text, "ranking")
    assert ranking.count("<tr") == 3  # header + two agents
    assert "0.900" in ranking and "0.850" in ranking  # judge coefficients
    assert f'width="{round(0.71 * BAR_WIDTH)}"' in ranking
    races = section(text, "races")
    assert "RACE_COMPLETE" in races and "RACE_RUNNING" in races
    assert season.reader.race_list[1].seed_commitment[:15] in races
    assert "3 revealed" in races and "sealed until close" in races
    assert season.running_seed not in text and "p-secret" not in text


def test_attacker_chosen_names_and_hotkeys_are_escaped(site, season):
    for path in ("/", f"/agents/{season.challenger}", "/races/race-0001"):
        text = page(site, path)
        assert "<script>alert" not in text and "<img src=x" not in text and "onerror=alert(2)>" not in text
        assert "<script" not in text.replace('<script src="/static/site.js" defer></script>', "")
    assert str(escape(XSS_NAME)) in page(site, "/")
    assert str(escape(XSS_NAME)) in page(site, f"/agents/{season.challenger}")
    assert "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" in page(site, "/races/race-0001")


def test_an_agent_page_has_bars_the_quality_distribution_and_links(site, season):
    text = page(site, f"/agents/{season.champion}")
    buckets = section(text, "buckets")
    assert "product" in buckets and "voucher" in buckets
    assert f'width="{round(0.9 * BAR_WIDTH)}"' in buckets and f'width="{round(0.4 * BAR_WIDTH)}"' in buckets
    assert "relevance" in section(text, "axes")
    quality = section(text, "quality")
    assert [re.sub(r"\s+", " ", t) for t in re.findall(r"<title>(.*?)</title>", quality)] == [
        "quality 0.1: 1 episode",
        "quality 0.5: 3 episodes",
        "quality 0.9: 6 episodes",
    ]
    assert "embargoed until" in section(text, "code") and "/code" not in section(text, "code")
    assert f'href="/v1/trajectories?agent=arena:{season.champion}"' in text


def test_code_links_follow_the_embargo(site, season, clock):
    clock.offset = (season.release_at + timedelta(minutes=1)).timestamp() - time.time()
    code = section(page(site, f"/agents/{season.champion}"), "code")
    assert f'href="/v1/agents/{season.champion}/code"' in code
    assert site.http.get(f"/v1/agents/{season.champion}/code").status_code == 200
    never = section(page(site, f"/agents/{season.rookie}"), "code")
    assert "never crowned" in never and "href" not in never
    rookie = page(site, f"/agents/{season.rookie}")
    assert "not yet scored" in rookie and "Not raced yet" in rookie


def test_a_race_page(site, season):
    text = page(site, "/races/race-0001")
    assert season.complete_seed in text and "p-002" in text and "promoted" in text
    sealed = page(site, "/races/race-0002")
    assert season.running_seed not in sealed and "p-secret" not in sealed
    assert "Sealed until the race closes" in sealed


def test_unknown_pages_are_friendly_404s(site):
    assert "No such agent" in page(site, f"/agents/{'f' * 32}", 404)
    assert "No such agent" in page(site, "/agents/%3Cscript%3E", 404)
    assert "No such race" in page(site, "/races/nope", 404)


def test_an_empty_arena_renders_a_friendly_page(arena, server_factory):
    server = server_factory(arena, competition=MemoryCompetition())
    text = page(server, "/")
    assert "No agent holds the crown yet" in text
    assert "Nobody is ranked yet" in text and "No race has opened yet" in text


def test_static_files_are_served_from_here(site):
    css = site.http.get("/static/site.css")
    js = site.http.get("/static/site.js")
    assert css.status_code == js.status_code == 200
    assert css.headers["content-type"].startswith("text/css") and "bar-fill" in css.text
    assert js.headers["content-type"].startswith("text/javascript") and "data-relative" in js.text
    assert site.http.get("/static/../server.py").status_code == 404
    assert site.http.get("/static/nope.css").status_code == 404
    for text in (css.text, js.text, page(site, "/")):
        assert "http://" not in text.replace("http://www.w3.org", "") and "https://" not in text


def test_quality_columns_are_in_numeric_order_and_scaled_to_the_tallest():
    columns = quality_chart({"0.9": 2, "0.10": 4, "0.3": 0})
    assert [c["level"] for c in columns] == ["0.10", "0.3", "0.9"]
    assert [c["height"] for c in columns] == [80, 0, 40]
    assert quality_chart({}) == []
