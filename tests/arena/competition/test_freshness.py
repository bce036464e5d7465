"""Fresh races (issue 22, attack 1): a problem whose answer is public — raced and revealed, or run in a
qualifying job whose trajectories the firehose serves — is never raced again. A miner that records
every published answer and replays it gains nothing over an honest one; when the bank runs out of
fresh held-out problems the engine postpones the race and says why."""

from __future__ import annotations

import hashlib

import httpx
import orjson
import pytest
from typer.testing import CliRunner

from shoparena.arena.api.app import create_app, running
from shoparena.arena.competition.bank import read_bank
from shoparena.arena.competition.engine import RaceEngine
from shoparena.arena.competition.firehose import read_page
from shoparena.arena.competition.freshness import arena_freshness
from shoparena.arena.competition.models import Freshness
from shoparena.arena.competition.view import CompetitionView, recompute_draw
from shoparena.cli import app
from shoparena.store import RecordFilter
from tests.arena.competition.race_helpers import make_racing, success

HOUR_S = 3600
runner = CliRunner()


@pytest.fixture
def rotating(tmp_path, small_catalog_dir, job_bank, race_bank, race_records):
    """Two miners, one validator; one problem a race, hourly races, a new rotation every two hours."""
    made = make_racing(
        tmp_path, small_catalog_dir, job_bank, race_bank, race_records, miners=2, validators=1,
        race_problems=1, qualifying_problems=2, rotation_cadence_s=2 * HOUR_S, heldout_fraction=0.5,
    )  # fmt: skip
    yield made
    made.arena.close()


def published(racing) -> set[str]:
    """Every problem whose answer anyone can read now: the firehose's trajectories and the problems of
    every race the public API has revealed."""
    seen: set[str] = set()
    since = None
    while True:
        page = read_page(racing.arena.store, since, 500, RecordFilter())
        for line in page.body.splitlines():
            seen.add(orjson.loads(line)["problem"]["problem_id"])
        since = page.next_cursor
        if not page.more:
            break
    for race in CompetitionView(racing.arena).races(limit=1000):
        seen.update(race.problem_ids or [])
    return seen


def honest_success(problem_id: str) -> bool:
    return hashlib.sha256(problem_id.encode()).digest()[0] % 2 == 0


def play(racing, engine, races: int) -> list[str]:
    """Up to `races` hourly races through `tick`, the memoriser (miner 0) replaying every published answer
    and the honest miner (miner 1) solving what it solves; what each tick did."""
    memoriser = racing.miners[0]
    done: list[str] = []
    for _ in range(races):
        done += engine.tick()
        racing.clock.advance(minutes=30)
        done += engine.tick()
        known = published(racing)

        def outcome(offer, _validator, record, known=known):
            pid = record.problem.problem_id
            solved = honest_success(pid) or (offer.miner_hotkey == memoriser.hotkey and pid in known)
            return success(solved)(record)

        racing.drain(outcome=outcome)
        done += engine.tick()
        racing.clock.advance(minutes=30)
    return done


def test_a_memorising_miner_gains_nothing_and_no_problem_is_raced_twice(rotating):
    memoriser, honest = rotating.miners
    for miner in (memoriser, honest):
        rotating.submit(miner)
    rotating.drain(outcome=lambda _o, _v, record: success(True)(record))
    engine = RaceEngine(rotating.arena, clock=rotating.clock, board=rotating.board)
    done = play(rotating, engine, races=6)
    races = sorted(CompetitionView(rotating.arena).races(limit=100), key=lambda race: race.opened_at)
    assert len(races) >= 3
    bank = read_bank(rotating.arena.dir)
    seen: set[str] = set()
    for race in races:
        scores = {result.hotkey: result.score for result in race.results}
        assert scores[memoriser.hotkey] == scores[honest.hotkey], f"{race.race_id}: the memoriser gained"
        clusters = {bank.cluster_of[pid] for pid in race.problem_ids}
        assert not clusters & seen, f"{race.race_id} races clusters raced before: {sorted(clusters & seen)}"
        seen |= clusters
        assert recompute_draw(rotating.arena, race.race_id)[2], f"{race.race_id}: the draw does not recompute"
    # 8 one-problem clusters: 4 held out in period 0; 2 raced there, the other 2 in period 1; period 2
    # holds nothing fresh (the open 4 were published by qualifying runs), so the races wait
    assert len(races) == 4
    postponed = [line for line in done if line.startswith("race postponed")]
    assert (
        postponed and "0 fresh held-out problem(s) left in rotation period 2, a race needs 1" in postponed[0]
    )
    assert "shoparena arena bank add" in postponed[0]
    fresh = CompetitionView(rotating.arena, engine).freshness()
    assert (fresh.postponed, fresh.fresh_problems, fresh.retired_problems) == (True, 0, 4)
    assert fresh.reason.startswith("race postponed: 0 fresh held-out problem(s)")


def test_a_dry_bank_postpones_the_race_everywhere_and_bank_add_brings_it_back(rotating):
    """Races nobody qualified for still reveal (and retire) their problems. Once none is fresh, `arena
    status`, `GET /v1/freshness` and the page say why the next race waits and how to add problems; the
    operator's `arena bank add` lets the next period's race open on the new clusters only."""
    engine = RaceEngine(rotating.arena, clock=rotating.clock, board=rotating.board)
    done = play(rotating, engine, races=6)
    assert [line for line in done if line.startswith("opened")] == [
        f"opened race-0000{i}" for i in range(1, 5)
    ]
    arena_dir = rotating.arena.dir

    status = runner.invoke(app, ["arena", "status", "--dir", str(arena_dir), "--json"])
    assert status.exit_code == 0, status.output
    fresh = orjson.loads(status.stdout)["freshness"]
    assert fresh["postponed"] and fresh["fresh_problems"] == 0 and "arena bank add" in fresh["reason"]
    said = runner.invoke(app, ["arena", "status", "--dir", str(arena_dir)])
    assert "next race postponed" in said.stdout and "0 fresh held-out problem(s)" in said.stdout
    with running(create_app(rotating.arena, clock=rotating.clock)) as url, httpx.Client(base_url=url) as http:
        served = Freshness.model_validate(http.get("/v1/freshness").json())
        assert served.postponed and served.retired_problems == 4 and "arena bank add" in served.reason
        page = http.get("/").text
        assert "Next race postponed." in page and "shoparena arena bank add" in page

    raced = {pid for race in CompetitionView(rotating.arena).races(limit=100) for pid in race.problem_ids}
    view = CompetitionView(rotating.arena, engine)  # its cached answer follows every change below
    assert view.freshness().postponed and view.freshness() == arena_freshness(rotating.arena, engine.now())
    added = runner.invoke(app, ["arena", "bank", "add", "--dir", str(arena_dir), "--n", "8", "--seed", "77"])
    assert added.exit_code == 0, added.output
    assert view.freshness() == arena_freshness(rotating.arena, engine.now())
    rotating.clock.advance(seconds=2 * HOUR_S)  # the new problems join at the next rotation period
    ahead = view.freshness()
    assert not ahead.postponed and not ahead.frozen and ahead.fresh_problems >= 1
    opened = [line for line in engine.tick() if line.startswith("opened")]
    assert opened, "the race did not open after `bank add`"
    assert view.freshness() == arena_freshness(rotating.arena, engine.now())
    assert view.freshness().frozen and view.freshness().fresh_problems == ahead.fresh_problems - 1
    race = engine.current()
    bank = read_bank(arena_dir)
    assert not {bank.cluster_of[pid] for pid in race.row.problem_ids} & {bank.cluster_of[p] for p in raced}
