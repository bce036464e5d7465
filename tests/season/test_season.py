"""A season end to end (`shoparena arena simulate`): 5 miners, 2 validators (one dishonest), 2 days
through the real API on loopback, admission, the bubblewrap sandbox, strict scoring, the offline judge,
the race engine, the weights and the local chain. Then: the season file says what happened, the
dishonest validator's favourite gained nothing, the store's firehose builds a corpus with both axes,
and the same seed plays the same season."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from shoparena.arena import open_arena
from shoparena.arena.competition.models import SEASON_SCHEMA
from shoparena.arena.competition.rules import seed_commitment
from shoparena.cli import app
from shoparena.season.driver import Season, race_seed
from shoparena.season.roster import FAVOURITE_SLOT, ROSTER
from shoparena.season.seasonfile import SeasonFile, read_season
from shoparena.season.setup import SeasonSettings

runner = CliRunner()
MINERS, VALIDATORS, DAYS, SEED = 5, 2, 2, 1


@pytest.fixture(scope="module")
def played(tmp_path_factory, sandbox_ready) -> tuple[Path, SeasonFile, str]:
    where = tmp_path_factory.mktemp("season")
    out = where / "season.json"
    result = runner.invoke(
        app,
        [
            "arena", "simulate", "--dir", str(where / "arena"), "--miners", str(MINERS), "--validators",
            str(VALIDATORS), "--days", str(DAYS), "--seed", str(SEED), "--sandbox", "bwrap", "--race-problems", "2", "--json", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return where / "arena", read_season(out), result.output


def test_the_season_file_records_the_config_submissions_races_and_weights(played):
    _arena, season, output = played
    raw = season.model_dump(mode="json", by_alias=True)
    assert raw["schema"] == SEASON_SCHEMA
    assert {"winner_share", "tail_share", "margin", "qualify_threshold", "burn_uid", "time_zone"} <= set(
        raw["config"]
    )
    for day in range(1, DAYS + 1):
        assert f"day {day}/{DAYS}" in output  # progress per day
    # the progress line adds up: the refused retry is an attempt, not a submission
    days = {line.split(" · ")[0]: line for line in output.splitlines() if line.startswith("day ")}
    assert " · 5 submitted (4 admitted, 1 rejected), 1 refused by the cooldown · " in days[f"day 1/{DAYS}"]
    assert " · 1 submitted (1 admitted, 0 rejected) · " in days[f"day 2/{DAYS}"]
    crowned = next(
        s.miner for s in season.submissions if s.submission_id == season.races[0].winner_submission_id
    )
    assert f" · crown {crowned}" in days[f"day 1/{DAYS}"]  # by its name, not a truncated hotkey
    assert all(r.name for race in season.races for r in race.results)  # the season file names its racers
    # every roster miner submitted on day 1; the crashing miner resubmitted its fix on day 2
    first = [s for s in season.submissions if s.day == 1]
    assert [s.miner for s in first] == [spec.name for spec in ROSTER[:MINERS]]
    assert [(s.miner, s.file) for s in season.submissions if s.day == 2] == [("04-crashing", "crash_fixed")]
    for submission, spec in zip(first, ROSTER[:MINERS], strict=True):
        if spec.admitted:
            assert submission.violations == [] and submission.status in ("scored", "failed")
        else:
            assert submission.status == "rejected"
            assert spec.rule in {v["rule"] for v in submission.violations}
    # the rejected miner's immediate retry met its cooldown at the API
    assert [(r.miner, r.status, r.error) for r in season.refusals] == [("03-network_exfil", 429, "cooldown")]
    assert len(season.races) == DAYS
    for day, race in enumerate(season.races, start=1):
        assert race.state == "RACE_COMPLETE"
        assert race.seed == race_seed(SEED, day) and race.seed_commitment == seed_commitment(race.seed)
        assert len(race.problem_ids) == season.config.race_problems
        assert not set(race.race_clusters) & set(race.open_clusters)  # the leak-cluster guard
        assert race.results, "nobody raced"
        scores = [r.score for r in race.results]
        assert scores == sorted(scores, reverse=True)
        assert race.winner is not None
    assert season.reused_problems == 0  # no race problem was public before its race (issue 22)
    for submission in season.submissions:  # a qualifying score names the quorum of reports behind it
        if submission.qualifying_score is not None:
            assert len(submission.qualifying_reports) == VALIDATORS
            assert {r.validator_hotkey for r in submission.qualifying_reports} == {
                p["hotkey"] for p in season.participants if p["role"] == "validator"
            }
    assert season.races[0].incumbent_before is None and season.races[0].promoted
    assert season.races[1].incumbent_before == season.races[0].winner
    assert season.races[0].code_release_at is not None
    assert [w.race_id for w in season.weights] == [r.race_id for r in season.races]
    for vector in season.weights:
        assert abs(sum(vector.weights) - 1) < 1e-9 and min(vector.weights) >= 0
        assert vector.chain_block is not None
    timing = season.timing
    assert timing is not None and timing.episodes > 0 and set(timing.phases) >= {"qualifying", "race"}


def test_the_arena_holds_what_the_season_file_says(played):
    arena_dir, season, _output = played
    with open_arena(arena_dir) as arena:
        for submission in season.submissions:
            view = arena.ledger.get(submission.submission_id)
            assert view is not None and view.miner_hotkey == submission.hotkey
            assert view.status == submission.status
    pushed = [json.loads(line) for line in (arena_dir / "chain" / "weights.jsonl").read_text().splitlines()]
    assert [(p["race_id"], p["weights"]) for p in pushed] == [(w.race_id, w.weights) for w in season.weights]


def test_the_dishonest_validator_is_accepted_but_its_favourite_gains_nothing(played):
    _arena, season, _output = played
    liar = season.dishonest
    assert liar is not None
    favourite = next(p for p in season.participants if p.get("miner") == ROSTER[FAVOURITE_SLOT - 1].name)
    assert liar.favourite_hotkey == favourite["hotkey"]
    assert liar.lies > 0 and liar.accepted_results > 0  # it lied, and the arena stored its results
    raced = [lie for lie in liar.races if lie.raced]
    assert raced, "the favourite never raced: nothing to show"
    for lie in raced:
        assert lie.reported_by_liar == 1.0
        assert lie.honest_median is not None and lie.honest_median < 1.0
        assert lie.combined == pytest.approx(lie.honest_median)
        assert lie.consensus_weight <= lie.honest_weight + 1e-9
    assert liar.gained_nothing
    # the favourite's race score is the honest validator's, not the lie
    for race in season.races:
        for result in race.results:
            if result.hotkey == liar.favourite_hotkey:
                lied = next(v for v in result.by_validator if v.validator_hotkey == liar.validator_hotkey)
                honest = next(v for v in result.by_validator if v.validator_hotkey != liar.validator_hotkey)
                assert lied.score == 1.0 and result.score == pytest.approx(honest.score)


def test_the_seasons_firehose_builds_a_corpus_with_both_axes(played, tmp_path):
    arena_dir, season, _output = played
    export = tmp_path / "firehose.jsonl"
    result = runner.invoke(
        app, ["store", "export", "--store", str(arena_dir / "arena.db"), "--out", str(export)]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    assert len(rows) == season.timing.episodes
    assert {row["validator_hotkey"] for row in rows} == {
        p["hotkey"] for p in season.participants if p["role"] == "validator"
    }
    corpus = tmp_path / "corpus"
    result = runner.invoke(
        app,
        [
            "corpus", "build", "-i", str(export), "-o", str(corpus), "--catalog", str(arena_dir / "world" / "catalog"),
            "--no-parquet", "--workers", "1", "--json",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    counts = json.loads((corpus / "manifest.json").read_text())["counts"]
    assert counts["train"] + counts["eval"] > 0, counts  # axis A: the model-driven miner's episodes
    assert counts["axis_b"] > 0, counts  # axis B: the pipelines' episodes


def _small_season(where: Path) -> SeasonFile:
    """One day: a second day adds suite time and no new source of randomness (race seeds per day are
    `race_seed`'s, tested above; the five-miner season plays two days)."""
    settings = SeasonSettings(
        miners=2, validators=2, days=1, seed=SEED, sandbox="bwrap", race_problems=1, qualifying_problems=3
    )
    return Season(where, settings).run()


def test_the_same_seed_plays_the_same_season(tmp_path, sandbox_ready):
    first = _small_season(tmp_path / "a")
    second = _small_season(tmp_path / "b")
    assert first.timing is not None and second.timing is not None
    assert first.comparable() == second.comparable()
    assert first.races and all(race.results for race in first.races)


def test_arena_serve_shows_the_seasons_leaderboard(played):
    """What the README tells a person to do next: serve the season's arena and open the leaderboard."""
    import httpx

    from shoparena.arena.api.app import create_app, running

    arena_dir, season, _output = played
    crowned = season.races[-1].winner
    with open_arena(arena_dir) as arena, running(create_app(arena)) as url:
        board = httpx.get(f"{url}/v1/leaderboard", timeout=30).json()
        page = httpx.get(f"{url}/", timeout=30)
        races = httpx.get(f"{url}/v1/races", timeout=30).json()
    assert [entry["hotkey"] for entry in board if entry["incumbent"]] == [crowned]
    assert page.status_code == 200 and crowned[:8] in page.text
    assert {race["race_id"] for race in races} == {race.race_id for race in season.races}


def test_a_second_season_in_the_same_arena_goes_on_where_the_first_ended(tmp_path, sandbox_ready):
    settings = SeasonSettings(
        miners=1, validators=1, days=1, seed=SEED, sandbox="bwrap", race_problems=1, qualifying_problems=1
    )
    first = Season(tmp_path / "arena", settings).run()
    second = Season(tmp_path / "arena", settings).run()
    assert [r.race_id for r in first.races] == ["race-00001"]
    assert [r.race_id for r in second.races] == ["race-00002"]
    assert second.races[0].opened_at == first.races[0].opened_at + timedelta(days=1)
    assert second.races[0].seed_commitment != first.races[0].seed_commitment
    assert not {s.submission_id for s in first.submissions} & {s.submission_id for s in second.submissions}


def test_arena_serve_of_a_seasons_arena_opens_no_race_on_todays_clock(tmp_path, sandbox_ready, monkeypatch):
    """`make demo` ends by telling the user to `arena serve` the season's arena to see its leaderboard.
    Its races ran on the season's clock (March 2026): a race scheduler on the real clock would find every
    race day long past and open a new race. Served as told (no --tick-s), it shows the season's races and
    opens none, and says how to run races; asked for (--tick-s), the scheduler runs. Served for real on
    loopback, with the scheduler's period shortened so a tick would come within the test."""
    import threading

    import httpx

    from shoparena.arena.api import app as app_module
    from shoparena.harness.loopback import AppThread

    settings = SeasonSettings(
        miners=1, validators=1, days=1, seed=SEED, sandbox="bwrap", race_problems=1, qualifying_problems=1
    )
    season = Season(tmp_path / "arena", settings).run()
    assert season.races

    class FastScheduler(app_module.RaceScheduler):
        def __init__(self, engine, period_s):
            super().__init__(engine, 0.1)
            self.ticked = threading.Event()

        def tick(self):
            done = super().tick()
            self.ticked.set()
            return done

    class WithLifespan(AppThread):
        # the scheduler starts with the app, as under `arena serve`
        FIXED: ClassVar[dict[str, str]] = {"lifespan": "on"}

    seen: dict[str, list] = {}
    schedulers: list[FastScheduler] = []

    def scheduler(engine, period_s):
        made = FastScheduler(engine, period_s)
        schedulers.append(made)
        return made

    def serve(app, host="127.0.0.1", port=8742, log_level="info", **options):
        server = WithLifespan(app, host, 0, name="served arena")
        server.start()
        try:
            if schedulers:  # a tick done (it sets the event once the engine's tick returned)
                assert schedulers[0].ticked.wait(10), "the race scheduler never ticked"
            seen["races"] = httpx.get(f"{server.url}/v1/races", timeout=30).json()
        finally:
            server.stop()

    monkeypatch.setattr(app_module, "RaceScheduler", scheduler)
    monkeypatch.setattr(app_module, "serve", serve)
    season_races = {race.race_id for race in season.races}
    result = runner.invoke(app, ["arena", "serve", "--dir", str(tmp_path / "arena")])
    assert result.exit_code == 0, result.output
    assert {race["race_id"] for race in seen["races"]} == season_races, "serving it opened a race"
    assert not schedulers and "made by a simulated season" in result.output and "--tick-s" in result.output
    # asked for, the scheduler runs on the real clock (and opens the race the season's clock never reached)
    result = runner.invoke(app, ["arena", "serve", "--dir", str(tmp_path / "arena"), "--tick-s", "30"])
    assert result.exit_code == 0, result.output
    assert schedulers and {race["race_id"] for race in seen["races"]} > season_races
