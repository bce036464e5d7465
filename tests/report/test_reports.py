"""Reports and the `eval` / `report` commands end to end: real runs of the reference agents on a real
generated catalogue, then the files and tables they produce."""

from __future__ import annotations

import re

import orjson
import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from shoparena.report import ReportError, comparison_markdown, comparison_rows, load_run, write_run_reports

cli = CliRunner()


@pytest.fixture(scope="module")
def problems_file(small_catalog, tmp_path_factory):
    problems = ProblemGenerator(small_catalog, seed=21).generate(9, buckets=("product", "shop", "voucher"))
    path = tmp_path_factory.mktemp("report-suite") / "problems.jsonl"
    write_problems(path, problems)
    return path


def _eval(catalog, problems, agent, out, *extra):
    args = [
        "eval",
        "--catalog",
        str(catalog),
        "--problems",
        str(problems),
        "--agent",
        agent,
        "--out",
        str(out),
    ]
    args += ["--similarity", "lexical", "--bootstrap", "200", "--quiet", *extra]
    result = cli.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def two_runs(small_catalog_dir, problems_file, tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    pipeline, agentic = root / "pipeline", root / "agentic"
    first = _eval(
        small_catalog_dir,
        problems_file,
        "reference:pipeline",
        pipeline,
        "--workers",
        "2",
        "--name",
        "pipeline (axis B)",
    )
    second = _eval(
        small_catalog_dir, problems_file, "reference:agentic", agentic,
        "--executor", "inline", "--samples", "2", "--note", "scripted model",
    )  # fmt: skip
    return pipeline, agentic, first, second


def test_eval_writes_every_run_file(two_runs, problems_file):
    pipeline, agentic, first, _ = two_runs
    for run in (pipeline, agentic):
        for name in ("trajectories.jsonl", "metrics.json", "run.json", "report.md", "report.html"):
            assert (run / name).is_file(), name
    n_problems = sum(1 for _ in problems_file.open())
    lines = (agentic / "trajectories.jsonl").read_bytes().splitlines()
    assert len(lines) == 2 * n_problems
    assert "pipeline (axis B)" in first.output and "ASR" in first.output


def test_run_report_holds_the_tables_and_the_plots(two_runs):
    pipeline, agentic, _, _ = two_runs
    metrics = orjson.loads((agentic / "metrics.json").read_bytes())
    asr = metrics["headline"]["asr"]["value"]
    md = (agentic / "report.md").read_text()
    assert md.startswith("# Evaluation report: reference:agentic")
    assert "| Variant | n | ASR |" in md and "## Metrics per bucket" in md and "## pass@k" in md
    assert f"{asr:.3f}" in md and "scripted model" in md
    for bucket in ("product", "shop", "voucher"):
        assert f"{bucket} (n=" in md
    page = (agentic / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 3  # bars, axes, pass@k curve
    assert not re.search(r"""(src|href)=["']?https?:|<link|<script""", page)  # self-contained
    assert "<table>" in page and "Success per bucket" in page
    single = (pipeline / "report.html").read_text()
    assert single.count("<svg") == 2  # one sample: no pass@k curve


def test_each_figure_caption_says_what_its_title_does_not(two_runs):
    """A caption that repeats its plot's title tells the reader nothing: each says what to read off."""
    _, agentic, _, _ = two_runs
    page = (agentic / "report.html").read_text()
    figures = re.findall(r"<figure>(.*?)<figcaption>(.*?)</figcaption></figure>", page, re.S)
    assert len(figures) == 3
    for svg, caption in figures:
        texts = " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg)).lower()  # the title, the axes
        words = set(re.findall(r"[a-z0-9@]+", caption.lower()))
        assert not words <= set(re.findall(r"[a-z0-9@]+", texts)), caption  # not the title again
        assert len(words) >= 8, caption  # a sentence on how to read the plot, not a label


def test_report_command_compares_runs_side_by_side(two_runs, tmp_path):
    pipeline, agentic, _, _ = two_runs
    out, html = tmp_path / "table1.md", tmp_path / "table1.html"
    # wide enough that table cells are not wrapped into each other, whatever $COLUMNS the suite runs
    # with (the console reads it at layout; a width set on the console object is not the user's)
    result = cli.invoke(
        app, ["report", str(pipeline), str(agentic), "--out", str(out), "--html", str(html)],
        env={"COLUMNS": "220"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    condensed = re.sub(r"[^0-9A-Za-z:()]", "", result.output)  # immune to the table wrapping cells
    assert "pipeline(axisB)" in condensed and "reference:agentic" in condensed
    table = out.read_text()
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| Variant | n | ASR | product | shop | voucher | CAR | pass@k |")
    assert len(rows) == 2 + 2  # header, alignment, one row per run
    runs = [load_run(pipeline), load_run(agentic)]
    for run, row in zip(runs, rows[2:], strict=True):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[0] == run.name
        assert cells[2].startswith(f"{run.overall('asr').value:.3f} [")
        assert cells[3] == f"{run.bucket('product', 'asr').value:.3f}"
    assert "(k=2)" in rows[3] and "scripted model" in rows[3]
    assert html.read_text().count("<svg") == 3


def test_reference_agents_solve_generated_problems(two_runs):
    """The documented baselines: both reference agents solve generated tasks (not a constant 0 or 1 by luck)."""
    for run in two_runs[:2]:
        view = load_run(run)
        assert view.overall("asr").value >= 0.5
        assert view.counts["errors"] == 0


def test_runs_scored_differently_are_flagged(two_runs, small_catalog_dir, problems_file, tmp_path):
    pipeline, _, _, _ = two_runs
    strict = tmp_path / "strict"
    _eval(small_catalog_dir, problems_file, "reference:pipeline", strict, "--mode", "strict", "--limit", "3")
    views = [load_run(pipeline), load_run(strict)]
    assert "not directly comparable" in comparison_markdown(views)
    result = cli.invoke(app, ["report", str(pipeline), str(strict)], env={"COLUMNS": "220"})
    assert result.exit_code == 0 and "not directly" in result.output


def test_reports_refuse_directories_that_are_not_finished_runs(tmp_path):
    with pytest.raises(ReportError, match=r"no metrics\.json"):
        load_run(tmp_path)
    result = cli.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2 and "not a finished run" in result.output


def test_eval_flag_errors_are_clear(small_catalog_dir, problems_file, tmp_path):
    base = [
        "eval",
        "--catalog",
        str(small_catalog_dir),
        "--problems",
        str(problems_file),
        "--out",
        str(tmp_path / "x"),
    ]
    result = cli.invoke(app, [*base, "--agent", "reference:pipeline", "--base-url", "http://127.0.0.1:1"])
    assert result.exit_code == 2 and "--base-url applies to openai" in result.output
    result = cli.invoke(app, [*base, "--agent", "reference:nope", "--quiet", "--similarity", "lexical"])
    assert result.exit_code == 2
    assert "error: reference agent 'nope': use reference:agentic or reference:pipeline" in result.output
    result = cli.invoke(app, [*base, "--agent", "reference:pipeline", "--mode", "lenient", "--quiet"])
    assert result.exit_code == 2 and "'lenient' is not one of 'upstream'" in result.output


def test_html_escapes_run_names(two_runs, tmp_path):
    import shutil

    run = tmp_path / "odd"
    shutil.copytree(two_runs[0], run)
    metrics = orjson.loads((run / "metrics.json").read_bytes())
    metrics["name"] = "<script>x</script> | pipe"
    (run / "metrics.json").write_bytes(orjson.dumps(metrics))
    write_run_reports(run)
    assert "<script>x" not in (run / "report.html").read_text()
    md_row = comparison_rows([load_run(run)]).markdown().splitlines()[2]
    assert re.search(r"\\\| pipe", md_row)


# -- what a reader sees: the report pages in a real browser ----------------------------------------------------
from tests.browser import assert_one_colour_per_name, assert_readable_figures, screenshot, svg_layout  # noqa: E402


@pytest.fixture(scope="module")
def strict_run(small_catalog_dir, problems_file, tmp_path_factory):
    """The pipeline agent scored in strict mode: not directly comparable with the others."""
    out = tmp_path_factory.mktemp("strict") / "strict"
    _eval(small_catalog_dir, problems_file, "reference:pipeline", out, "--mode", "strict", "--limit", "3")
    return out


def test_the_comparison_report_reads_well_in_chromium(two_runs, strict_run, chromium, shots, tmp_path):
    pipeline, agentic, _, _ = two_runs
    html = tmp_path / "compare.html"
    md = tmp_path / "compare.md"
    result = cli.invoke(
        app, ["report", str(pipeline), str(agentic), str(strict_run), "--html", str(html), "--out", str(md)],
        env={"COLUMNS": "220"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    screenshot(chromium, html.as_uri(), tmp_path / "profile", shots / "eval-report.png", height=2400)
    layout = svg_layout(chromium, html, tmp_path / "profile")
    assert len(layout) == 3  # per-bucket bars, per-axis bars, pass@k curve
    assert_readable_figures(layout, "eval report")
    names = [load_run(run).name for run in (pipeline, agentic, strict_run)]
    page = html.read_text()
    assert_one_colour_per_name(page, names)
    # Table 1 shows the intervals its note promises
    assert re.search(r"<td class=\"num\">\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]</td>", page)
    # one run's own report.html (what `eval` writes) reads as well
    single = agentic / "report.html"
    screenshot(chromium, single.as_uri(), tmp_path / "profile", shots / "eval-run-report.png", height=2200)
    single_layout = svg_layout(chromium, single, tmp_path / "profile")
    assert_readable_figures(single_layout, "run report", legends=False)
    assert not any(figure["legends"] for figure in single_layout)  # one run: its title names it


def test_every_warning_of_the_terminal_report_is_in_the_html_and_markdown(two_runs, strict_run, tmp_path):
    pipeline, _, _, _ = two_runs
    html, md = tmp_path / "t.html", tmp_path / "t.md"
    result = cli.invoke(
        app, ["report", str(pipeline), str(strict_run), "--html", str(html), "--out", str(md)],
        env={"COLUMNS": "400"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    warnings = [
        line.split(":", 1)[1].strip() for line in result.output.splitlines() if line.startswith("warning:")
    ]
    assert warnings and any("not directly comparable" in w for w in warnings)
    page = re.sub(r"\s+", " ", html.read_text())
    markdown = re.sub(r"\s+", " ", md.read_text())
    for warning in warnings:
        assert warning in page and warning in markdown
    assert 'class="warning"' in page  # shown as a warning, not buried in the notes
