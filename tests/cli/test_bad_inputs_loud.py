"""Bad input fails loudly and leaves nothing half-made (issue 25, item 1), through the CLI.

One table: each row is a command given something wrong — problems made from another catalogue, a
damaged catalogue directory, unreadable corpus or judge input, a file that is not a database — and
says what the user must see (a non-zero exit and one `error:` line naming the problem, never a
traceback) and what must not be left behind (an empty database, an empty output file, a
half-made output directory, an index the read made). The tests after it cover what is not an error:
a partial catalogue mismatch is a warning with the count, and a finished eval leaves no `run.lock`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.index.catalog_dir import build_synthetic, open_catalog
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from shoparena.store import open_store

runner = CliRunner()


@dataclass(frozen=True)
class World:
    """What the rows are built from (read-only; a row that damages something copies it first)."""

    catalog: Path
    problems: Path
    """Problems generated from `catalog`."""
    foreign: Path
    """The same problems with their gold titles rotated: every gold id names another product here."""
    upstream: Path
    """ShoppingBench's product test file: its gold ids are in a catalogue we do not have."""
    answers: Path
    """One answer, for problem 0."""
    empty: Path
    binary: Path
    wrong_shape: Path
    """JSON lines that are no known record (an object of other keys, a list)."""


@pytest.fixture(scope="module")
def world(tmp_path_factory, upstream_dir) -> World:
    root = tmp_path_factory.mktemp("loud")
    catalog = root / "cat"
    build_synthetic(catalog, 300, seed=1, workers=1)
    backend = open_catalog(catalog)
    try:
        problems = ProblemGenerator(backend, seed=2).generate(4, buckets=("product",))
    finally:
        backend.close()
    write_problems(root / "problems.jsonl", problems)
    titles = [p.reward.title for p in problems]
    foreign = [
        p.model_copy(update={"reward": p.reward.model_copy(update={"title": titles[(i + 1) % len(titles)]})})
        for i, p in enumerate(problems)
    ]
    write_problems(root / "foreign.jsonl", foreign)
    (root / "answers.jsonl").write_bytes(orjson.dumps({"index": 0, "product_ids": ["x"]}) + b"\n")
    (root / "empty.jsonl").write_bytes(b"")
    (root / "binary.jsonl").write_bytes(bytes(range(256)) * 8)
    (root / "wrong.jsonl").write_bytes(b'{"a": 1}\n[1, 2, 3]\n')
    return World(
        catalog=catalog,
        problems=root / "problems.jsonl",
        foreign=root / "foreign.jsonl",
        upstream=upstream_dir / "shoppingbench_synthesize_product_test.jsonl",
        answers=root / "answers.jsonl",
        empty=root / "empty.jsonl",
        binary=root / "binary.jsonl",
        wrong_shape=root / "wrong.jsonl",
    )


# -- ways to damage a copy of the catalogue -------------------------------------------------------


def damaged(how: Callable[[Path], object]) -> Callable[[World, Path], Path]:
    def make(world: World, tmp: Path) -> Path:
        copy = tmp / "cat"
        shutil.copytree(world.catalog, copy)
        how(copy)
        return copy

    return make


def _no_index(cat: Path) -> None:
    shutil.rmtree(cat / "index")


def _corrupt_meta(cat: Path) -> None:
    (cat / "meta.json").write_bytes(b'{"format_version": 1, "n_pro')


def _no_store(cat: Path) -> None:
    shutil.rmtree(cat / "products.lmdb")


def _wrong_count(cat: Path) -> None:
    meta = json.loads((cat / "meta.json").read_text())
    meta["n_products"] += 1
    (cat / "meta.json").write_text(json.dumps(meta))


def _not_a_database(tmp: Path) -> Path:
    path = tmp / "notes.db"
    path.write_text("these are my notes, not a database\n")
    return path


def _empty_store(tmp: Path) -> Path:
    path = tmp / "store.db"
    open_store(path).close()
    return path


def _not_a_model(tmp: Path) -> Path:
    path = tmp / "not-a-model"
    path.mkdir()
    (path / "readme.txt").write_text("hello")
    return path


# -- the table ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    args: Callable[[World, Path], list]
    """The command line, from the world and the test's own empty directory."""
    says: str
    """Part of the one `error:` line."""
    code: int = 2
    left: tuple[str, ...] = field(default=())
    """Paths (under the test's directory) the failed command must not leave."""


def eval_args(problems: Callable[[World], Path]) -> Callable[[World, Path], list]:
    return lambda w, t: [
        "eval", "--catalog", w.catalog, "--problems", problems(w), "--agent", "reference:pipeline",
        "--out", t / "runs" / "r", "--executor", "inline", "--similarity", "lexical", "--quiet",
    ]  # fmt: skip


def search_args(damage: Callable[[Path], object], command: str = "search") -> Callable[[World, Path], list]:
    target = "wireless earbuds" if command == "search" else "1"
    return lambda w, t: [command, damaged(damage)(w, t), target]


CASES = [
    # problems that do not fit the catalogue
    Case("eval-upstream-on-synthetic", eval_args(lambda w: w.upstream), "none of the 250 gold product(s)",
         left=("runs",)),
    Case("eval-another-catalogues-problems", eval_args(lambda w: w.foreign), "naming another product",
         left=("runs",)),
    Case("score-upstream-on-synthetic",
         lambda w, t: ["score", "--catalog", w.catalog, "--problems", w.upstream, "--answers", w.answers,
                       "--similarity", "lexical"],
         "the problems were made from another catalogue", code=1),
    Case("arena-init-another-catalogues-bank",
         lambda w, t: ["arena", "init", "--dir", t / "arena", "--catalog", w.catalog, "--problems", w.foreign],
         "none of the", left=("arena",)),
    # a damaged catalogue directory
    Case("search-without-index", search_args(_no_index), "the search index index/ is missing",
         left=("cat/index",)),  # opening it made an empty one before
    Case("search-corrupt-meta", search_args(_corrupt_meta), "meta.json is corrupt"),
    Case("product-without-store", search_args(_no_store, "product"), "the product store products.lmdb/ is missing"),
    Case("catalog-stats-without-store",
         lambda w, t: ["catalog", "stats", damaged(_no_store)(w, t)], "the product store products.lmdb/ is missing"),
    Case("search-meta-disagrees", search_args(_wrong_count), "meta.json says 301 products but its search index"),
    Case("problems-generate-without-index",
         lambda w, t: ["problems", "generate", "--catalog", damaged(_no_index)(w, t), "--n", 2, "--seed", 1,
                       "--out", t / "p.jsonl"],
         "the search index index/ is missing", left=("p.jsonl",)),
    # unreadable input for a build
    Case("corpus-build-empty", lambda w, t: ["corpus", "build", "--input", w.empty, "--out", t / "corpus"],
         "no records in the input; nothing was written", left=("corpus",)),
    Case("corpus-build-binary", lambda w, t: ["corpus", "build", "--input", w.binary, "--out", t / "corpus"],
         "could be read", left=("corpus",)),
    Case("corpus-build-wrong-shape",
         lambda w, t: ["corpus", "build", "--input", w.wrong_shape, "--out", t / "corpus"],
         "(2 unknown_shape)", left=("corpus",)),
    Case("corpus-rewrite-binary",
         lambda w, t: ["corpus", "rewrite", "-i", w.binary, "-o", t / "rewritten.jsonl"],
         "is a trajectory record; nothing was written", code=1, left=("rewritten.jsonl",)),
    Case("judge-binary", lambda w, t: ["judge", "-i", w.binary, "-o", t / "judged.jsonl"],
         "no trajectory record in", code=1, left=("judged.jsonl",)),
    Case("judge-empty", lambda w, t: ["judge", "-i", w.empty, "-o", t / "judged.jsonl"],
         "(an empty file); nothing written", code=1, left=("judged.jsonl",)),
    Case("problems-stats-binary", lambda w, t: ["problems", "stats", w.binary], "no valid problem", code=1),
    # a file that is not a database
    *(
        Case(f"store-{name}-not-a-database",
             lambda w, t, extra=extra: ["store", *extra, "--store", _not_a_database(t)],
             "file is not a database")
        for name, extra in (
            ("stats", ["stats"]),
            ("export", ["export", "--out", "x.jsonl"]),
            ("invalidate", ["invalidate", "some-record", "--reason", "r"]),
            ("ingest", ["ingest", "x.jsonl"]),
        )
    ),
    Case("store-export-over-itself",
         lambda w, t: ["store", "export", "--out", _empty_store(t), "--store", t / "store.db"],
         "is the store's own database file"),
    Case("store-a-directory", lambda w, t: ["store", "stats", "--store", t], "is a directory"),
    Case("store-ingest-garbage-into-a-new-store",
         lambda w, t: ["store", "ingest", w.binary, "--store", t / "new.db"],
         "rejected of", code=1, left=("new.db", "new.db-wal", "new.db-shm")),
    # training and configuration
    Case("train-sft-not-a-model",
         lambda w, t: ["train", "sft", "--data", w.wrong_shape, "--model", _not_a_model(t), "--out",
                       t / "sft" / "run"],
         "", left=("sft",)),  # the message is the model loader's; what matters: no config.resolved.json
    Case("config-not-text", lambda w, t: ["loop", "--config", w.binary, "--out", t / "loop"],
         "not a text file", left=("loop",)),
    Case("arena-init-dir-is-a-file",
         lambda w, t: ["arena", "init", "--dir", w.answers, "--catalog", w.catalog, "--problems", w.problems],
         "exists and is not a directory"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_and_leaves_nothing(world, tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [str(a) for a in case.args(world, tmp_path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert result.exit_code == case.code, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and case.says in errors[0], result.output
    for name in case.left:
        assert not (tmp_path / name).exists(), f"{name} left behind: {result.output}"


# -- not errors: said, and nothing left locked ----------------------------------------------------


@pytest.fixture
def mixed(world, tmp_path) -> Path:
    """The world's problems plus one made from another catalogue."""
    path = tmp_path / "mixed.jsonl"
    stranger = {**json.loads(world.foreign.read_bytes().splitlines()[0]), "problem_id": "from-elsewhere"}
    path.write_bytes(world.problems.read_bytes() + orjson.dumps(stranger) + b"\n")
    return path


def test_a_partial_mismatch_is_a_warning_with_the_count(world, mixed, tmp_path):
    result = runner.invoke(
        app,
        ["score", "--catalog", str(world.catalog), "--problems", str(mixed), "--answers", str(world.answers),
         "--similarity", "lexical", "--bootstrap", "0"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "1 of 5 problem(s) have gold products that are not in the catalogue" in result.output

    out = tmp_path / "runs" / "r"  # where eval_args puts the run
    result = runner.invoke(app, [str(a) for a in eval_args(lambda w: mixed)(world, tmp_path)])
    assert result.exit_code == 0, result.output
    warning = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert warning and "1 of 5 problem(s) have gold products that are not in the catalogue" in warning[0]
    assert "1 of 5 problem(s) have gold products" in (out / "report.md").read_text()  # the report says so
    assert not (out / "run.lock").exists()  # a finished run releases its lock and removes the file
    assert (out / "run.json").exists() and (out / "metrics.json").exists()
