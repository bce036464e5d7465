"""What a build writes, and where: the never-touch guard over every pile (axis B included), the same
gates for axis-B rows as for training rows, and an output directory that only ever holds one whole
corpus (refused when not empty, replaced with --force only by a finished build, nothing left by a
failed one), every file of it named in the manifest."""

from __future__ import annotations

import hashlib
import stat
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.corpus.export import read_parquet_rows
from shoparena.corpus.models import NEVER_TOUCH, RejectedRow
from shoparena.corpus.pipeline import CorpusConfig, CorpusDirError, build_corpus
from shoparena.corpus.split import query_words
from shoparena.problems.io import write_problems
from shoparena.problems.models import Problem
from tests.corpus.conftest import DISTINCT_QUERIES, openai_row, write_jsonl
from tests.jsonl import read_jsonl

QUERIES = DISTINCT_QUERIES
PILES = ("train.jsonl", "eval.jsonl", "axis_b.jsonl")


def _suite(path: Path, queries: list[str]) -> list[Problem]:
    problems = [
        Problem(query=q, reward={"product_id": str(i), "title": ["x"]}) for i, q in enumerate(queries)
    ]
    write_problems(path, problems)
    return problems


def _cli(*args: str):
    return CliRunner().invoke(app, ["corpus", "build", *args], env={"COLUMNS": "200", "NO_COLOR": "1"})


def _counts(out: Path) -> dict:
    return orjson.loads((out / "manifest.json").read_bytes())["counts"]


# -- the never-touch guard covers every pile ----------------------------------------------------------
def test_never_touch_problems_reach_no_pile_of_either_axis(tmp_path):
    """The QA case: 9 never-touch problems with one axis-A and two axis-B rows each. Every row is a
    `never_touch` reject; none is in axis_b.jsonl, and the counts still add up."""
    bank = _suite(tmp_path / "bank.jsonl", [f"{q} {n}" for q in QUERIES[:3] for n in ("one", "two", "three")])
    rows = []
    for problem in bank:
        rows.append(openai_row(query=problem.query, problem_id=problem.problem_id, origin="llm"))
        rows.append(openai_row(query=problem.query, problem_id=problem.problem_id, origin="code"))
        rows.append(
            openai_row(query=problem.query, problem_id=problem.problem_id, origin="code", extra_calls=2)
        )
    source = write_jsonl(tmp_path / "t.jsonl", rows)
    out = tmp_path / "c6"
    never = str(tmp_path / "bank.jsonl")
    result = _cli(
        "-i", str(source), "-o", str(out), "--never-touch", never, "--min-quality", "0", "--workers", "1"
    )
    assert result.exit_code == 0, result.output
    assert "inputs 27 = kept 0 (train 0, eval 0) + rejected 27 + axis-B 0 + deduplicated 0" in result.stdout
    for pile in PILES:
        assert read_jsonl(out / pile) == [], pile
    rejects = [
        RejectedRow.model_validate_json(line) for line in (out / "rejects.jsonl").read_bytes().splitlines()
    ]
    assert [r.reason for r in rejects] == [NEVER_TOUCH] * 27
    assert sorted(r.row["metadata"]["axis"] for r in rejects) == ["A"] * 9 + ["B"] * 18
    assert {r.row["metadata"]["split"] for r in rejects} == {"never_touch"}
    counts = _counts(out)
    assert (counts["axis_a_candidates"], counts["axis_b_candidates"], counts["axis_b"]) == (9, 18, 0)


def test_an_axis_b_paraphrase_of_a_never_touch_query_is_held_back(tmp_path):
    """No problem id, no cluster: the axis-B row is caught by its near-duplicate query, as an axis-A
    row would be; an unrelated axis-B row is written."""
    _suite(tmp_path / "suite.jsonl", [QUERIES[0]])
    rows = [
        openai_row(query=f"please find {QUERIES[0]}", problem_id=None, origin="code"),
        openai_row(query=QUERIES[1], problem_id=None, origin="code"),
        openai_row(query=QUERIES[2], problem_id=None),
    ]
    out = tmp_path / "o"
    result = build_corpus(
        CorpusConfig(
            inputs=[write_jsonl(tmp_path / "in.jsonl", rows)],
            out=out,
            never_touch=[tmp_path / "suite.jsonl"],
            eval_size=0,
            report=False,
        )
    )
    assert result.reasons == {NEVER_TOUCH: 1}
    assert [r["metadata"]["query"] for r in read_jsonl(out / "axis_b.jsonl")] == [QUERIES[1]]
    assert result.manifest["by_bucket"]["product"] == {"rejected": 1, "axis_b": 1, "train": 1}


row_specs = st.lists(
    st.tuples(
        st.integers(0, len(QUERIES) - 1),  # the problem
        st.booleans(),  # carries its problem id (else: a paraphrased query, id hashed from it)
        st.sampled_from(["A", "B"]),
        st.sampled_from([None, 0.2, 0.6, 0.9]),  # judge quality
        st.sampled_from(["ok", "no_recommend", "think"]),  # format
    ),
    min_size=1,
    max_size=24,
)


def _first_failure(quality: float | None, min_quality: float, form: str) -> str | None:
    """The gate a generated row must fail first (gates run in `models.GATE_REASONS` order)."""
    if quality is None or quality < min_quality:
        return "judge_below_threshold"
    return {"no_recommend": "recommend_count", "think": "think_then_stop"}.get(form)


@settings(max_examples=30, deadline=None)
@given(
    specs=row_specs,
    never=st.sets(st.integers(0, len(QUERIES) - 1), max_size=3),
    min_quality=st.sampled_from([0.0, 0.5, 0.7]),
    eval_size=st.sampled_from([None, 0, 2]),
)
def test_every_row_lands_in_exactly_the_pile_its_gates_and_problem_allow(
    specs, never, min_quality, eval_size
):
    """Any mix of rows: no row of a never-touch problem (by id or by paraphrase) is in train, eval,
    Parquet or axis_b.jsonl; axis-B holds exactly the axis-B rows that passed the quality and format
    gates and are not never-touch; every other row is a reject with its reason; nothing is lost."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suite = _suite(root / "suite.jsonl", [QUERIES[i] for i in sorted(never)]) if never else []
        never_ids = {p.problem_id for p in suite}
        never_words = [query_words(p.query) for p in suite]
        ids = {
            i: next((p.problem_id for p in suite if p.query == QUERIES[i]), f"p{i}")
            for i in range(len(QUERIES))
        }
        rows, expected_axis_b, gate_rejects = [], 0, {}
        for problem, with_id, axis, quality, form in specs:
            row = openai_row(
                query=QUERIES[problem] if with_id else f"please find {QUERIES[problem]}",
                problem_id=ids[problem] if with_id else None,
                quality=quality,
                origin="code" if axis == "B" else "llm",
                recommend=None if form == "no_recommend" else '{"product_ids": "P1"}',
                end="think" if form == "think" else "terminate",
            )
            rows.append(row)
            reason = _first_failure(quality, min_quality, form)
            if reason:
                gate_rejects[reason] = gate_rejects.get(reason, 0) + 1
            elif axis == "B" and problem not in never:
                expected_axis_b += 1
        out = root / "out"
        result = build_corpus(
            CorpusConfig(
                inputs=[write_jsonl(root / "in.jsonl", rows)],
                out=out,
                never_touch=[root / "suite.jsonl"] if never else [],
                min_quality=min_quality,
                eval_size=eval_size,
                report=False,
            )
        )
        c = result.counts
        assert (
            c["inputs"]
            == len(rows)
            == c["train"] + c["eval"] + c["rejected"] + c["axis_b"] + c["deduplicated"]
        )
        written = {pile: read_jsonl(out / pile) for pile in PILES}
        written["parquet"] = read_parquet_rows(out / "train.parquet") + read_parquet_rows(
            out / "eval.parquet"
        )
        for pile, kept in written.items():
            for row in kept:
                meta = row["metadata"]
                assert meta["problem_id"] not in never_ids, pile
                assert query_words(meta["query"]) not in never_words, pile
        assert len(written["axis_b.jsonl"]) == c["axis_b"] == expected_axis_b
        assert {r["metadata"]["axis"] for r in written["axis_b.jsonl"]} <= {"B"}
        assert all(r["metadata"]["judge_quality"] >= min_quality for r in written["axis_b.jsonl"])
        for reason, n in gate_rejects.items():
            assert result.reasons[reason] == n, reason
        rejects = read_jsonl(out / "rejects.jsonl")
        assert len(rejects) == c["rejected"] + c["deduplicated"]
        for reject in rejects:
            if reject["reason"] == NEVER_TOUCH:
                meta = reject["row"]["metadata"]
                assert meta["problem_id"] in never_ids or query_words(meta["query"]) in never_words


# -- the output directory -----------------------------------------------------------------------------
@pytest.fixture
def source(tmp_path) -> Path:
    rows = [
        openai_row(query=q, problem_id=f"p{i}", bucket=["product", "shop"][i % 2])
        for i, q in enumerate(QUERIES)
    ]
    return write_jsonl(
        tmp_path / "in.jsonl", rows + [openai_row(query=QUERIES[0], problem_id="p0", origin="code")]
    )


def _listed(out: Path) -> set[str]:
    """The files the manifest names (data files with their rows and hashes checked, report files,
    itself)."""
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    for name, info in manifest["files"].items():
        data = (out / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == info["sha256"] and len(data) == info["bytes"], name
        rows = len(read_parquet_rows(out / name)) if name.endswith(".parquet") else len(data.splitlines())
        assert rows == info["rows"], name
    return {*manifest["files"], *manifest["report_files"], "manifest.json"}


def test_a_corpus_is_not_built_over_another_without_force_and_force_leaves_no_stale_file(source, tmp_path):
    out = tmp_path / "c"
    assert _cli("-i", str(source), "-o", str(out), "--workers", "1").exit_code == 0
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(first) == _listed(out) >= {"train.parquet", "eval.parquet", "report.md", "funnel.png"}
    plain = tmp_path / "plain"
    plain.mkdir()
    assert stat.S_IMODE(out.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)  # not mkdtemp's 0700

    refused = _cli("-i", str(source), "-o", str(out), "--no-parquet", "--eval-size", "0")
    assert refused.exit_code == 2 and "--force" in refused.output and "not empty" in refused.output
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first  # untouched

    replaced = _cli("-i", str(source), "-o", str(out), "--no-parquet", "--eval-size", "0", "--force")
    assert replaced.exit_code == 0, replaced.output
    names = {p.name for p in out.iterdir()}
    assert names == _listed(out) and not names & {"train.parquet", "eval.parquet"}
    assert len(read_jsonl(out / "train.jsonl")) == _counts(out)["train"] == 6
    assert not list(tmp_path.glob(".c.*")), "a staging directory was left behind"


def test_force_replaces_only_a_corpus(source, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "mine.txt").write_text("keep me")
    result = _cli("-i", str(source), "-o", str(notes), "--force")
    assert result.exit_code == 2 and "holds no corpus" in result.output
    assert [p.name for p in notes.iterdir()] == ["mine.txt"]
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(CorpusDirError, match="not a directory"):
        build_corpus(CorpusConfig(inputs=[source], out=a_file, force=True))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert build_corpus(CorpusConfig(inputs=[source], out=empty, report=False)).counts["inputs"] == 7


def test_a_failed_build_leaves_nothing_and_keeps_the_previous_corpus(source, tmp_path):
    missing = _cli("-i", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "new"))
    assert missing.exit_code == 2 and "does not exist" in missing.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]  # no directory, no empty files

    out = tmp_path / "c"
    build_corpus(CorpusConfig(inputs=[source], out=out, report=False))
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def interrupt(_rows: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_corpus(CorpusConfig(inputs=[source], out=out, parquet=False, force=True), progress=interrupt)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "in.jsonl"]
