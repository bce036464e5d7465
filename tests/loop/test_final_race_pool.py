"""How many problems the loop's final race draws: the season's `race_problems`, the whole pool when it
holds fewer (the arena would otherwise postpone the race), and the whole pool whatever its size with
`final_race_whole_pool` (configs/loop/learn.yaml: the comparison of the distilled agent and the random
baseline is the final race, and a 6-problem race could not tell them apart)."""

from __future__ import annotations

import pytest

from shoparena.arena.config import read_config
from shoparena.loop.config import LoopConfig, ProofRecipe
from shoparena.loop.final_race import fit_race_to_pool
from shoparena.loop.layout import LoopLayout
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from shoparena.season.setup import SeasonSettings, open_or_init


@pytest.fixture(scope="module")
def pool_problems(small_catalog):
    return ProblemGenerator(small_catalog, seed=4).generate(8, buckets=("product",))


@pytest.mark.parametrize(
    ("pool", "whole_pool", "races"),
    [(8, False, 5), (8, True, 8), (3, False, 3), (3, True, 3), (5, True, 5), (0, True, 5)],
)
def test_the_final_race_races_the_pool_when_asked_or_when_it_is_short(
    tmp_path, pool_problems, pool, whole_pool, races
):
    arena_dir = tmp_path / "arena"
    settings = SeasonSettings(products=200, qualifying_bank=3, race_bank=4, race_problems=5)
    open_or_init(arena_dir, settings).close()
    layout = LoopLayout(out=tmp_path / "loop")
    layout.firehose_dir.mkdir(parents=True)
    if pool:
        write_problems(layout.firehose_dir / "final_race_pool.jsonl", pool_problems[:pool])
    said: list[str] = []
    fit_race_to_pool(arena_dir, layout, said.append, whole_pool=whole_pool)
    assert read_config(arena_dir).competition.race_problems == races
    assert bool(said) == (races != 5)


def test_the_learn_config_races_the_whole_pool_with_the_proofs_tools():
    from shoparena.loop.config import TINY_PIPELINE

    learn = LoopConfig.from_file(TINY_PIPELINE.parent.parent / "loop" / "learn.yaml")
    assert learn.final_race_whole_pool and learn.season.profile == "upstream4"
    assert LoopConfig().final_race_whole_pool is False
    # budgeted in epochs (the learning-rate schedule runs over them), minutes only a ceiling; twice the
    # preset's distinct rows, each seen twice (three epochs over the preset's rows memorised ids)
    sizes = learn.train.proof.sizes()
    assert sizes.max_epochs == 2 and sizes.minutes >= 120
    assert sizes.train_problems == 2 * ProofRecipe(preset="cpu").sizes().train_problems
    assert ProofRecipe(preset="cpu").sizes().max_epochs is None  # the cpu preset's own budget: minutes
