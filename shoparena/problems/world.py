"""A generated world: a synthetic catalogue and problems drawn from it, made once and reused.

A season's arena and a miner's local tryout both need a catalogue and a problem file that anyone can
make offline and that come out the same from the same seed. The directory is reused while it matches
(products, seed, problem count) and remade when it does not; a lock keeps two processes that share it
(two tryouts in one cache) from building it over each other.
"""

from __future__ import annotations

import fcntl
from pathlib import Path

from pydantic import BaseModel

CATALOG_DIR = "catalog"
LOCK_FILE = ".world.lock"


class GeneratedWorld(BaseModel):
    catalog: Path
    problems: Path
    rebuilt: bool
    """Whether this call generated it (False: reused as it was)."""


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def generated_world(
    world: Path, *, products: int, seed: int, problems: int, problems_file: str = "problems.jsonl"
) -> GeneratedWorld:
    """`world/catalog` (`products` synthetic products from `seed`) and `world/problems_file` (`problems`
    problems generated on it from the same seed), reused when they match."""
    from shoparena.index.catalog_dir import CatalogDirError, build_synthetic, open_catalog, read_meta
    from shoparena.problems.generator import ProblemGenerator
    from shoparena.problems.io import write_problems

    world = Path(world)
    world.mkdir(parents=True, exist_ok=True)
    catalog_dir = world / CATALOG_DIR
    problems_path = world / problems_file
    with (world / LOCK_FILE).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            meta = read_meta(catalog_dir)
            fresh = meta.n_products != products or meta.seed != seed
        except (CatalogDirError, ValueError):
            fresh = True
        if fresh:
            build_synthetic(catalog_dir, products, seed=seed, workers=1, overwrite=True)
        remake = fresh or not problems_path.exists() or _count_lines(problems_path) != problems
        if remake:
            catalog = open_catalog(catalog_dir)
            try:
                write_problems(problems_path, ProblemGenerator(catalog, seed=seed).generate(problems))
            finally:
                catalog.close()
    return GeneratedWorld(catalog=catalog_dir, problems=problems_path, rebuilt=fresh or remake)
