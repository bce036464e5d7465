"""A small real world for the sampling stages' tests (leak guard, rs, teacher, kto): a generated
catalogue, generated problems in paraphrase families, a real `reference:agentic` eval run over some
of them, and a corpus built from that run by `build_corpus`, with a never-touch suite.

Built once per test process (`world(tmp_path_factory, catalog_dir)`): the test modules share it
without a conftest of their own. Problem families (tasks) come in three variants sharing one leak
cluster; variants 0 and 1 are run into the corpus, variant 2 of every task is a fresh candidate that
only its leak cluster ties to the corpus.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson

from shoparena.index.catalog_dir import open_catalog
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from shoparena.problems.models import Problem
from tests.train.reference_corpus import reference_corpus

TASKS = 9
VARIANTS = 3
NEVER_TASKS = 2
"""The first tasks of the voucher bucket go to the never-touch suite (their variant 0)."""


@dataclass
class World:
    root: Path
    catalog: Path
    corpus: Path
    run: Path
    problems: list[Problem]
    """Every generated problem (TASKS × VARIANTS)."""
    corpus_problems: Path
    never_touch: Path
    never_problems: list[Problem]
    fresh: list[Problem]
    """Variant 2 of every task: never run, tied to the corpus only by leak cluster."""

    def pool_rows(self, pool: str) -> list[dict]:
        path = self.corpus / f"{pool}.jsonl"
        return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]

    def pool_ids(self, pool: str) -> set[str]:
        return {row["metadata"]["problem_id"] for row in self.pool_rows(pool)}

    def family(self, problem: Problem) -> list[Problem]:
        return [p for p in self.problems if p.leak_cluster_id == problem.leak_cluster_id]


_WORLDS: dict[str, World] = {}


def world(tmp_path_factory, catalog_dir: Path) -> World:
    key = str(catalog_dir)
    if key not in _WORLDS:
        _WORLDS[key] = _build(tmp_path_factory.mktemp("sampling-world"), catalog_dir)
    return _WORLDS[key]


def _build(root: Path, catalog: Path) -> World:
    backend = open_catalog(catalog)
    try:
        problems = ProblemGenerator(backend, seed=3).generate(TASKS, ["product", "shop", "voucher"], VARIANTS)
    finally:
        backend.close()
    families: dict[str, list[Problem]] = {}
    for problem in problems:
        families.setdefault(problem.leak_cluster_id or "", []).append(problem)
    in_corpus = [p for family in families.values() for p in family[:2]]
    fresh = [family[2] for family in families.values()]
    voucher_families = [f for f in families.values() if f[0].bucket == "voucher"]
    never_problems = [family[0] for family in voucher_families[:NEVER_TASKS]]

    corpus_problems = root / "corpus_problems.jsonl"
    write_problems(corpus_problems, in_corpus)
    never_touch = root / "never_touch.jsonl"
    write_problems(never_touch, never_problems)
    run, corpus = reference_corpus(
        root,
        catalog,
        corpus_problems,
        bootstrap=10,
        min_quality=0.0,
        per_problem=1,
        eval_size=4,
        never_touch=[never_touch],
        seed=5,
        parquet=False,
        report=False,
    )
    return World(
        root=root,
        catalog=catalog,
        corpus=corpus,
        run=run,
        problems=problems,
        corpus_problems=corpus_problems,
        never_touch=never_touch,
        never_problems=never_problems,
        fresh=fresh,
    )
