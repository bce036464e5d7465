"""`problems.world.generated_world`: made once, reused while it matches, remade when it does not."""

from __future__ import annotations

import threading

from shoparena.index.catalog_dir import read_meta
from shoparena.problems.io import read_problems
from shoparena.problems.world import generated_world


def test_reused_while_it_matches_and_remade_when_it_does_not(tmp_path):
    world = tmp_path / "world"
    first = generated_world(world, products=200, seed=1, problems=4)
    assert first.rebuilt and read_meta(first.catalog).n_products == 200
    assert len(read_problems(first.problems).problems) == 4
    stamp = first.problems.stat().st_mtime_ns
    again = generated_world(world, products=200, seed=1, problems=4)
    assert not again.rebuilt and again.problems.stat().st_mtime_ns == stamp
    more = generated_world(world, products=200, seed=1, problems=6)
    assert more.rebuilt and len(read_problems(more.problems).problems) == 6
    reseeded = generated_world(world, products=200, seed=2, problems=6)
    assert reseeded.rebuilt and read_meta(reseeded.catalog).seed == 2


def test_two_processes_sharing_it_do_not_build_over_each_other(tmp_path):
    world = tmp_path / "world"
    results = []
    threads = [
        threading.Thread(
            target=lambda: results.append(generated_world(world, products=200, seed=3, problems=3))
        )
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.rebuilt for r in results) == [False, True]
    assert len(read_problems(results[0].problems).problems) == 3
