"""An arena without a race bank runs no competition, yet its validators score submissions on its problem
bank: `/` and `/v1/leaderboard` rank them provisionally — labelled so, with no weight and no crown, never
qualifiers — until the operator adds a race bank. Real server on loopback, real validators' results."""

from __future__ import annotations

import re

from shoparena.arena.canonical import problem_outcome, result_scores
from shoparena.arena.competition.bank import add_to_bank
from shoparena.arena.competition.engine import RaceEngine
from shoparena.arena.competition.models import LeaderboardEntry
from tests.arena.job_helpers import client, submit
from tests.arena.jobs.test_jobs import post_for


def solved(records, success: bool):
    """The same trajectories, every problem solved (or failed): a stronger (weaker) miner's run."""
    return [r.model_copy(update={"score": r.score.model_copy(update={"success": success})}) for r in records]


def evaluate(server, validators, records) -> None:
    """Each validator claims the next bank job and posts `records` re-cast for it."""
    for validator in validators:
        with client(server, validator) as arena:
            offer = arena.claim()
            assert offer is not None and offer.kind == "bank"
            arena.post_result(post_for(offer, records, validator.hotkey))


def board(server) -> list[LeaderboardEntry]:
    response = server.http.get("/v1/leaderboard")
    assert response.status_code == 200
    return [LeaderboardEntry.model_validate(entry) for entry in response.json()]


def section(text: str, section_id: str) -> str:
    match = re.search(rf'<section[^>]*id="{section_id}".*?</section>', text, re.S)
    assert match, f"no section {section_id}"
    return match.group(0)


def test_scored_submissions_are_ranked_provisionally_without_weight_or_crown(
    job_arena, server_factory, miner, miner2, validator, validator2, raw_records
):
    job_arena.metagraph.register(miner2.hotkey, "miner", 0.0, uid=7)
    server = server_factory(job_arena)
    weak = submit(server, miner2)
    assert board(server) == []  # submitted, not scored yet
    evaluate(server, [validator], solved(raw_records, False))
    strong = submit(server, miner)
    evaluate(server, [validator2], solved(raw_records, True))

    expected = result_scores([problem_outcome(r) for r in solved(raw_records, True)]).final_score
    entries = board(server)
    assert [(e.rank, e.submission_id, e.provisional) for e in entries] == [(1, strong, True), (2, weak, True)]
    assert entries[0].score == expected > 0 and entries[1].score == 0.0 and entries[1].uid == 7
    assert all(e.weight == 0.0 and not e.incumbent and e.races == 0 for e in entries)
    assert RaceEngine(job_arena).qualifiers() == []  # a race would enter none of them
    assert server.http.get("/v1/weights").status_code == 404

    page = server.http.get("/").text
    ranked = section(page, "provisional")
    assert "not a race result" in ranked and "no weight and no crown" in ranked
    assert ranked.index(f"/agents/{strong}") < ranked.index(f"/agents/{weak}")
    assert "shoparena arena bank add --dir arena" in ranked
    assert "Nobody is ranked by a race yet" in section(page, "ranking")
    assert "No agent holds the crown yet" in section(page, "incumbent")
    agent = server.http.get(f"/agents/{strong}").text
    assert "Bank score" in agent and f"{expected:.3f}" in agent and "provisional" in agent
    qualified = re.search(r'<dd id="qualified">(.*?)</dd>', agent, re.S).group(1)
    assert "not yet scored" not in qualified  # it is scored: on the bank, as the page says beside it
    assert "no race bank" in qualified

    add_to_bank(job_arena.dir, 6, 1)  # the competition starts: bank scores are not qualifying scores
    assert board(server) == [] and RaceEngine(job_arena).qualifiers() == []
    assert "provisional" not in server.http.get("/").text
    detail = server.http.get(f"/v1/agents/{strong}").json()
    assert detail["provisional_score"] is None and detail["qualifying_score"] is None
