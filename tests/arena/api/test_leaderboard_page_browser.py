"""The leaderboard page in a real headless browser (Debian `chromium`, see tests/browser.py): it renders,
its script runs under the page's Content-Security-Policy, an attacker's name stays text, and screenshots
are written (to `$SHOPARENA_SHOTS` when set).
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from tests.arena.api.public_fixtures import T0, XSS_HOTKEY, XSS_NAME, MemoryCompetition, build_season
from tests.browser import Elements, dom, screenshot


def no_injected_markup(serialised: str) -> Elements:
    """The DOM holds no element an attacker's string could have made: no img, no script but ours, no
    event-handler attribute anywhere."""
    parsed = Elements(serialised)
    assert not [tag for tag, _ in parsed.found if tag == "img"]
    assert [attrs.get("src") for tag, attrs in parsed.found if tag == "script"] == ["/static/site.js"]
    assert not [(tag, a) for tag, attrs in parsed.found for a in attrs if a.startswith("on")]
    return parsed


@pytest.fixture
def site(arena, miner, server_factory, clock):
    season = build_season(arena, miner.hotkey, XSS_HOTKEY, "5Rookie")
    clock.offset = (T0 + timedelta(hours=2)).timestamp() - time.time()
    return season, server_factory(arena, competition=season.reader)


def test_the_leaderboard_and_an_agent_page_in_chromium(chromium, shots, site, tmp_path):
    season, server = site
    front = dom(chromium, f"{server.url}/", tmp_path / "profile")
    assert 'data-js="ready"' in front  # the page's own script ran under its CSP
    assert "steady-pipeline" in front and "RACE_RUNNING" in front
    assert "(2 h ago)" in front  # it labelled the times, by the server's clock (race-0001 closed at T0)
    assert XSS_NAME in "".join(no_injected_markup(front).text)  # the attacker's name is text, not elements
    podium = front[front.index('<ol class="podium">') : front.index("</ol>")].replace("<wbr>", "")
    assert "steady-pipeline" in podium and 'class="hotkey"' not in podium  # racers by name, not hotkey
    agent = dom(chromium, f"{server.url}/agents/{season.champion}", tmp_path / "profile")
    assert 'data-js="ready"' in agent and 'class="bar-fill"' in agent and "quality 0.9" in agent
    assert "(in 22 h)" in agent  # the embargo lifts a day after T0
    assert f"/v1/trajectories?agent=arena:{season.champion}" in agent
    assert "yes: its qualifying score 0.660 is at or above the arena's bar of 0.200" in agent
    assert '<a href="/races/race-0001">race-0001</a>' in agent
    hostile = dom(chromium, f"{server.url}/agents/{season.challenger}", tmp_path / "profile")
    assert XSS_NAME in "".join(no_injected_markup(hostile).text)

    screenshot(chromium, f"{server.url}/", tmp_path / "profile", shots / "arena-leaderboard.png")
    screenshot(
        chromium,
        f"{server.url}/agents/{season.champion}",
        tmp_path / "profile",
        shots / "arena-agent.png",
        height=1400,
    )


def test_an_empty_arena_in_chromium(chromium, arena, server_factory, tmp_path):
    server = server_factory(arena, competition=MemoryCompetition())
    front = dom(chromium, f"{server.url}/", tmp_path / "profile")
    assert "No agent holds the crown yet" in front and 'data-js="ready"' in front
