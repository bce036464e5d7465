"""The season's small parts: the simulated clock, the seeded ids and race seeds, the season file's
comparable form, the command's refusals of bad options and of directories that are not a season's own
(no season is played here)."""

from __future__ import annotations

import re
import shutil
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from shoparena.arena import open_arena
from shoparena.cli import app
from shoparena.season.clock import SEASON_EPOCH, SimClock
from shoparena.season.driver import race_seed, seeded_ids
from shoparena.season.setup import SIMULATED_MARKER, SeasonSettings, open_or_init
from tests.arena.arena_helpers import Key

runner = CliRunner()


def test_the_clock_stands_still_until_moved_and_never_goes_back():
    clock = SimClock()
    assert clock() == clock() == SEASON_EPOCH.timestamp()
    clock.advance(90)
    assert clock.now() == SEASON_EPOCH + timedelta(seconds=90)
    clock.set(SEASON_EPOCH + timedelta(days=1))
    with pytest.raises(ValueError, match="does not go back"):
        clock.set(SEASON_EPOCH)
    with pytest.raises(ValueError, match="does not go back"):
        clock.advance(-1)


@given(st.integers(min_value=0, max_value=2**31))
def test_ids_and_race_seeds_follow_the_season_seed(seed):
    first, again, other = seeded_ids(seed), seeded_ids(seed), seeded_ids(seed + 1)
    ids = [first() for _ in range(5)]
    assert ids == [again() for _ in range(5)]
    assert len(set(ids)) == 5 and all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    assert not set(ids) & {other() for _ in range(5)}
    assert race_seed(seed, 1) != race_seed(seed, 2) and race_seed(seed, 1) == race_seed(seed, 1)


def test_the_competition_config_a_season_runs_with_is_small_and_recorded():
    config = SeasonSettings(validators=3).competition()
    assert (config.race_problems, config.qualifying_problems) == (3, 3)
    assert config.min_validators == 2
    assert SeasonSettings(validators=1).competition().min_validators == 1


@pytest.mark.parametrize("similarity", ["minilm", "lexical"])
def test_the_season_arena_scores_with_the_title_similarity_asked_for(tmp_path, similarity):
    small = {"products": 200, "qualifying_bank": 3, "race_bank": 4}
    with open_or_init(tmp_path / "arena", SeasonSettings(similarity=similarity, **small)) as arena:
        assert arena.config.evaluation.similarity == similarity
    assert SeasonSettings().similarity == "lexical"  # a small CPU season's default; production is minilm


def test_the_season_arena_races_with_the_tool_profile_asked_for(tmp_path):
    """configs/loop/learn.yaml races with upstream4's tools, the ones its distilled model learned."""
    small = {"products": 200, "qualifying_bank": 3, "race_bank": 4}
    with open_or_init(tmp_path / "arena", SeasonSettings(profile="upstream4", **small)) as arena:
        assert arena.config.evaluation.profile == "upstream4"
    assert SeasonSettings().profile == "oro7"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--miners", "13"], "--miners"),
        (["--miners", "0"], "--miners"),
        (["--days", "0"], "--days"),
        (["--sandbox", "docker"], "--sandbox"),
        (["--similarity", "cosine"], "similarity"),
        (["--profile", "oro9"], "--profile"),
    ],
)
def test_bad_options_are_refused_before_anything_runs(tmp_path, options, message):
    arena = tmp_path / "arena"
    result = runner.invoke(
        app, ["arena", "simulate", "--dir", str(arena), "--json", str(tmp_path / "o.json"), *options]
    )
    assert result.exit_code != 0
    assert message in result.output
    assert not arena.exists()


def test_a_season_that_asks_for_bwrap_where_it_cannot_run_stops_before_it_starts(monkeypatch):
    import shoparena.sandbox as sandbox
    from shoparena.arena.errors import ArenaError
    from shoparena.season.driver import resolve_sandbox

    def broken(policy=None):
        raise sandbox.SandboxUnavailable("bwrap: setting up uid map: Permission denied")

    monkeypatch.setattr(sandbox, "check_sandbox", broken)
    with pytest.raises(ArenaError, match=r"bubblewrap cannot run here.*Permission denied"):
        resolve_sandbox("bwrap")
    with pytest.warns(UserWarning, match="WITHOUT a sandbox"):
        assert resolve_sandbox("auto") == "none"
    assert resolve_sandbox("none") == "none"


# -- where a season may play -------------------------------------------------------------------------------
SMALL = {"products": 200, "qualifying_bank": 3, "race_bank": 4}


def simulate_in(where, tmp_path):
    return runner.invoke(
        app,
        ["arena", "simulate", "--dir", str(where), "--json", str(tmp_path / "season.json"), "--miners", "1",
         "--days", "1", "--sandbox", "none"],
    )  # fmt: skip


def contents(directory) -> dict[str, int]:
    return {str(p.relative_to(directory)): p.stat().st_size for p in sorted(directory.rglob("*"))}


def test_simulate_refuses_a_directory_that_is_not_empty_and_not_a_seasons(tmp_path, small_catalog_dir):
    catalog = tmp_path / "cat"
    shutil.copytree(small_catalog_dir, catalog)
    before = contents(catalog)
    result = simulate_in(catalog, tmp_path)
    assert result.exit_code == 2
    flat = " ".join(result.output.split())
    assert str(catalog) in flat and "is not empty and is not an arena the season simulator made" in flat
    assert "validators with stake and chain weights" in flat and "new or empty directory" in flat
    assert contents(catalog) == before  # nothing written: no arena.db, world/, keys/, chain/
    assert not (tmp_path / "season.json").exists()
    a_file = tmp_path / "notes.txt"
    a_file.write_text("hello\n")
    result = simulate_in(a_file, tmp_path)
    assert result.exit_code == 2 and "is not a directory" in result.output
    assert a_file.read_text() == "hello\n"


def test_simulate_refuses_an_arena_it_did_not_make(tmp_path, small_catalog_dir, problems_file):
    arena = tmp_path / "arena"
    made = runner.invoke(
        app,
        ["arena", "init", "--dir", str(arena), "--catalog", str(small_catalog_dir), "--problems", str(problems_file)],
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    hotkey = Key().hotkey
    registered = runner.invoke(
        app, ["arena", "register", "--dir", str(arena), "--hotkey", hotkey, "--role", "miner"]
    )
    assert registered.exit_code == 0, registered.output
    before = contents(arena)
    result = simulate_in(arena, tmp_path)
    assert result.exit_code == 2
    flat = " ".join(result.output.split())
    assert str(arena) in flat and "is an arena the season simulator did not make" in flat
    assert "validators with stake and chain weights" in flat
    assert contents(arena) == before
    with open_arena(arena) as opened:
        assert [(n.hotkey, n.role) for n in opened.metagraph.all()] == [(hotkey, "miner")]


def test_a_season_makes_an_empty_directory_its_arena_and_reopens_only_its_own(tmp_path):
    arena_dir = tmp_path / "arena"
    arena_dir.mkdir()
    with open_or_init(arena_dir, SeasonSettings(**SMALL)) as arena:
        created_at = arena.config.created_at
    assert (arena_dir / SIMULATED_MARKER).is_file()
    with open_or_init(arena_dir, SeasonSettings(**SMALL)) as arena:  # a second season goes on in it
        assert arena.config.created_at == created_at
    # an arena a season made before seasons marked theirs (created on the season's clock) is the
    # simulator's too, and is marked now
    (arena_dir / SIMULATED_MARKER).unlink()
    with open_or_init(arena_dir, SeasonSettings(**SMALL)) as arena:
        assert arena.config.created_at == created_at
    assert (arena_dir / SIMULATED_MARKER).is_file()
