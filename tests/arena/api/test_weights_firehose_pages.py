"""The HTML views beside `/v1/weights` and `/v1/trajectories`: `/weights` says what the weights are, or
why there are none and what starts them; `/firehose` shows the records as a table with the JSONL link.
The JSON endpoints answer as before. Real server on loopback, real validators' records."""

from __future__ import annotations

import re

from shoparena.arena.competition.models import LeaderboardEntry, WeightVector
from tests.arena.api.public_fixtures import MemoryCompetition
from tests.arena.job_helpers import client, submit
from tests.arena.jobs.test_jobs import post_for

MARKUP = '<script>alert("x")</script>'


def html(server, path: str, status: int = 200) -> str:
    response = server.http.get(path)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("text/html")
    return " ".join(response.text.split())


def scored(server, miner, validator, records) -> str:
    """A submission evaluated by `validator`, which posts `records` re-cast for its job."""
    submission_id = submit(server, miner)
    with client(server, validator) as arena:
        offer = arena.claim()
        arena.post_result(post_for(offer, records, validator.hotkey))
    return submission_id


def test_the_nav_links_the_html_views(server):
    nav = re.search(r"<nav>.*?</nav>", server.http.get("/").text, re.S).group(0)
    assert 'href="/weights"' in nav and 'href="/firehose"' in nav and 'href="/v1/leaderboard"' in nav


def test_no_weights_says_why_and_what_starts_them(job_arena, server_factory):
    server = server_factory(job_arena)
    text = html(server, "/weights")
    assert "No weights yet" in text and "no race bank" in text
    assert "shoparena arena bank add --dir arena --n 200 --seed 1" in text
    missing = server.http.get("/v1/weights")  # the JSON endpoint is unchanged
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"


def test_weights_name_the_agent_holding_each_uid(arena, server_factory):
    reader = MemoryCompetition()
    reader.weight = WeightVector(race_id="race-0001", uids=[0, 3], weights=[0.75, 0.25], source="consensus")
    reader.entries = [
        LeaderboardEntry(
            rank=1,
            hotkey="5Champion",
            uid=3,
            submission_id="a" * 32,
            name=MARKUP,
            score=0.7,
            success_rate=0.8,
            judge_coefficient=0.9,
            incumbent=True,
            races=1,
            weight=0.25,
        )
    ]
    server = server_factory(arena, competition=reader)
    text = html(server, "/weights")
    assert "race-0001" in text and "75.0%" in text and "25.0%" in text and "burn" in text
    assert f'href="/agents/{"a" * 32}"' in text and "<script>alert" not in text
    assert text.index("75.0%") < text.index("25.0%")
    assert WeightVector.model_validate(server.http.get("/v1/weights").json()) == reader.weight


def test_the_firehose_page_shows_records_with_the_jsonl_beside(
    job_arena, server_factory, miner, validator, raw_records
):
    server = server_factory(job_arena)
    assert "No trajectories yet" in html(server, "/firehose")
    hostile = [
        raw_records[0].model_copy(
            update={"outcome": raw_records[0].outcome.model_copy(update={"error": MARKUP})}
        )
    ]
    submission_id = scored(server, miner, validator, hostile + raw_records[1:])
    text = html(server, "/firehose")
    rows = re.search(r"<tbody>(.*?)</tbody>", text).group(1)
    assert rows.count("<tr") == len(raw_records)
    assert f'href="/agents/{submission_id}"' in rows and raw_records[1].problem.problem_id[:20] in rows
    name = server.http.get(f"/v1/agents/{submission_id}").json()["name"]
    assert rows.count(f'href="/agents/{submission_id}">{name}</a>') == len(raw_records)  # by name, not id
    assert "<script>alert" not in text and "&lt;script&gt;alert" in text
    jsonl = re.search(r'id="jsonl" href="([^"]+)"', text).group(1).replace("&amp;", "&")
    page = server.http.get(jsonl)
    assert page.headers["content-type"].startswith("application/x-ndjson")
    assert len(page.content.splitlines()) == len(raw_records)
    assert page.content == server.http.get("/v1/trajectories").content  # the endpoint is unchanged
    mine = html(server, f"/firehose?agent=arena:{submission_id}")
    assert mine.count("<tr") == len(raw_records) + 1 and "all records" in mine
    assert "<tbody>" not in html(server, "/firehose?agent=arena:" + "0" * 32)
    after = page.headers["X-Next-Cursor"]
    assert "No more records after this cursor yet" in html(server, f"/firehose?since={after}")
    assert "not a firehose cursor" in html(server, "/firehose?since=nonsense", 400)
    agent = server.http.get(f"/agents/{submission_id}").text
    assert f'href="/firehose?agent=arena:{submission_id}"' in agent


def test_the_firehose_end_column_shows_the_scored_outcome_not_the_agents_word(
    job_arena, server_factory, miner, validator, raw_records
):
    """An agent that terminates "with status success" on a problem it failed: the End column says it
    failed (the arena's score), and the agent's own words appear only labelled as the agent's."""
    server = server_factory(job_arena)
    first = raw_records[0]
    boast = first.model_copy(
        update={
            "outcome": first.outcome.model_copy(
                update={
                    "terminated": "success",
                    "end_reason": "terminated with status success",
                    "error": None,
                }
            ),
            "score": first.score.model_copy(update={"success": False}),
        }
    )
    scored(server, miner, validator, [boast, *raw_records[1:]])
    text = html(server, "/firehose")
    rows = re.findall(r"<tr>(.*?)</tr>", re.search(r"<tbody>(.*?)</tbody>", text).group(1))
    cells = re.findall(
        r"<td[^>]*>(.*?)</td>", next(row for row in rows if first.problem.problem_id[:20] in row)
    )
    end = cells[7]
    assert re.sub(r"<[^>]+>", "", end).strip().startswith("failed"), end
    assert "agent said: terminated with status success" in end
    assert not re.sub(r"<[^>]+>", "", end).strip().startswith("terminated")
    record = next(
        line
        for line in server.http.get("/v1/trajectories").text.splitlines()
        if first.problem.problem_id in line
    )
    assert '"end_reason":"terminated with status success"' in record  # the JSONL record is as posted
