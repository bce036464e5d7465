"""`shoparena corpus build` on the command line: bad option values refused by name before any work,
a small corpus's held-out problem said in the summary, and a --help that reads at 80 columns."""

from __future__ import annotations

import math
import re

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from shoparena.cli import app
from tests.corpus.conftest import openai_row, write_jsonl

WORDS = ["kettle", "lamp", "sofa", "drill", "tent", "scarf", "piano", "kayak", "wok", "globe"]


def _build(*args: str, columns: int = 200):
    return CliRunner().invoke(app, ["corpus", "build", *args], env={"COLUMNS": str(columns), "NO_COLOR": "1"})


def _number(value: float) -> str:
    return "nan" if math.isnan(value) else repr(value)


bad_values = st.one_of(
    st.tuples(
        st.just("--min-quality"),
        st.floats(allow_nan=True).filter(lambda q: math.isnan(q) or not 0 <= q <= 1).map(_number),
    ),
    st.tuples(st.just("--eval-size"), st.integers(max_value=-1).map(str)),
    st.tuples(st.just("--max-length"), st.integers(max_value=0).map(str)),
    st.tuples(st.just("--per-problem"), st.integers(max_value=0).map(str)),
    st.tuples(st.just("--workers"), st.integers(max_value=0).map(str)),
)


@settings(max_examples=60, deadline=None)
@given(bad=bad_values)
def test_an_out_of_range_value_is_refused_naming_its_option(tmp_path_factory, bad):
    """Refused before anything is read or written (rc 2, the flag named); formerly --min-quality 5
    rejected every row with rc 0 and --eval-size -1 was taken."""
    root = tmp_path_factory.mktemp("bad")
    source = write_jsonl(root / "in.jsonl", [openai_row()])
    option, value = bad
    result = _build("-i", str(source), "-o", str(root / "out"), option, value)
    assert result.exit_code == 2, result.output
    assert option in result.output
    assert not (root / "out").exists()


def test_the_bounds_themselves_are_accepted(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [openai_row(quality=1.0)])
    for n, options in enumerate(
        [
            ["--min-quality", "0", "--eval-size", "0"],
            ["--min-quality", "1", "--max-length", "1", "--per-problem", "1"],
        ]
    ):
        result = _build(
            "-i", str(source), "-o", str(tmp_path / f"o{n}"), "--workers", "1", "--json", *options
        )
        assert result.exit_code == 0, result.output
    assert orjson.loads(result.stdout)["reasons"] == {"too_long": 1}


def test_a_small_corpus_holds_one_problem_out_and_says_so(tmp_path):
    """9 kept rows: 10% rounds to 0, yet later stages evaluate on held-out problems."""
    rows = [
        openai_row(query=f"{WORDS[i]} with a {WORDS[i + 1]} handle", problem_id=f"p{i}") for i in range(9)
    ]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    result = _build("-i", str(source), "-o", str(tmp_path / "c"), "--workers", "1", "--no-parquet")
    assert result.exit_code == 0, result.output
    assert "train 8, eval 1" in result.stdout
    assert "note: eval holds 1 leak cluster (1 problem, 1 rows)" in result.stdout
    manifest = orjson.loads((tmp_path / "c" / "manifest.json").read_bytes())
    assert manifest["counts"]["eval_target"] == 0 and len(manifest["notes"]) == 1
    assert "Note: eval holds 1 leak cluster" in (tmp_path / "c" / "report.md").read_text()


def test_an_eval_split_that_cannot_be_filled_is_warned_about(tmp_path):
    rows = [openai_row(problem_id="only"), openai_row(problem_id="only", extra_calls=2)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    result = _build("-i", str(source), "-o", str(tmp_path / "c"), "--workers", "1", "--json")
    assert result.exit_code == 0, result.output
    assert "warning: the eval split is empty: only one problem has kept rows" in result.stderr
    assert orjson.loads(result.stdout)["warnings"] == [
        "the eval split is empty: only one problem has kept rows, and holding it out would leave train empty"
    ]


def test_help_reads_at_80_columns_with_examples():
    result = _build("--help", columns=80)
    assert result.exit_code == 0, result.output
    text = result.output
    assert "…" not in text, "a help text was cut short"
    assert max(len(line) for line in text.splitlines()) <= 80
    # the examples: each whole on an indented line of its own
    examples = [line for line in text.split("Examples:")[1].split("╭")[0].splitlines() if line.strip()]
    assert len(examples) == 3 and all(line.startswith("   shoparena corpus build -i ") for line in examples)
    # each option's help takes at most two lines (then its [default: …] or [required] line)
    table = text.split("╭")[1]
    for option in ("--input", "--min-quality", "--tokenizer", "--eval-size", "--never-touch", "--problems"):
        row = re.search(rf"│ [ *]+{option} .*?(?=│ [ *]+--)", table, re.S)
        assert row is not None, option
        cells = [re.split(r"\s{2,}", line.rstrip("│ "))[-1] for line in row.group(0).splitlines()]
        assert len([cell for cell in cells if not cell.startswith("[")]) <= 2, cells
