"""Whole reports: Markdown for one run or a comparison, and one self-contained HTML page with the plots.

The HTML carries its figures inline as SVG and its style in a <style> block, so the file can be mailed,
attached to a PR or opened offline and still shows everything.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

from shoparena.report import plots
from shoparena.report.episodes import EPISODE_STYLE, episodes_html, load_episodes
from shoparena.report.runs import REPORT_HTML, REPORT_MD, ReportError, RunView, load_run, report_warnings
from shoparena.report.tables import (
    Rows,
    comparison_rows,
    config_rows,
    judge_rows,
    pass_at_k_rows,
    run_metric_rows,
)

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}
th,td{border:1px solid #ddd;padding:.3em .6em;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.figures{display:flex;flex-wrap:wrap;gap:1.5em}.figures figure{margin:0}
.note{color:#555;font-size:.9em}
.warning{color:#7a2e00;background:#fff1e0;padding:.5em .8em;border-left:4px solid #d9822b;margin:.6em 0}
figure svg{max-width:100%;height:auto}
"""


def _headline(runs: Sequence[RunView]) -> str:
    return comparison_rows(runs).markdown()


def warnings_markdown(runs: Sequence[RunView]) -> str:
    return "".join(f"\n> **Warning:** {warning}\n" for warning in report_warnings(list(runs)))


def warnings_html(runs: Sequence[RunView]) -> str:
    return "".join(
        f'<p class="warning"><strong>Warning:</strong> {html.escape(warning)}</p>'
        for warning in report_warnings(list(runs))
    )


def run_markdown(run: RunView) -> str:
    """report.md of one run: warnings, headline row, per-bucket metrics, pass@k, judge, setting, notes."""
    parts = [f"# Evaluation report: {run.name}\n", warnings_markdown([run]), _headline([run])]
    parts.append("\n## Metrics per bucket\n")
    parts.append(run_metric_rows(run).markdown())
    parts.append(
        "\nASR: share of episodes that fully succeed; CAR: mean rule score; axes: share of checked "
        "constraints met. Brackets: 95% percentile bootstrap interval over episodes.\n"
    )
    passes = pass_at_k_rows(run)
    if passes is not None:
        parts += ["\n## pass@k\n", passes.markdown()]
    judge = run.judge
    if judge:
        parts.append("\n## Judge\n")
        parts.append(
            f"{judge['judged']} episode(s) judged: mean quality q = {judge['q']:.3f}, coefficient "
            f"{judge['coeff']:.3f}, final score = ASR × coeff = {judge['final_score']:.3f}\n"
            if judge.get("final_score") is not None
            else f"{judge['judged']} episode(s) judged: q = {judge['q']:.3f}\n"
        )
        parts += [f"\n{rows.markdown()}" for rows in judge_rows(run)]
    parts += ["\n## Setting\n", config_rows(run).markdown()]
    notes = run.metrics.get("scoring_notes") or []
    if notes:
        parts.append("\n## Notes\n")
        parts += [f"- {note}\n" for note in notes]
    return "".join(parts)


def comparison_markdown(runs: Sequence[RunView], title: str = "Comparison of eval runs") -> str:
    parts = [f"# {title}\n", warnings_markdown(runs), "\n", comparison_rows(runs).markdown()]
    parts.append("\nASR with its 95% bootstrap interval; per-bucket columns are ASR per bucket.\n")
    return "".join(parts)


def html_table(rows: Rows) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in rows.header)
    body = []
    for row in rows.rows:
        cells = "".join(
            f'<td class="{"num" if align == "right" else ""}">{html.escape(cell)}</td>'
            for cell, align in zip(row, rows.align, strict=True)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _figures(runs: Sequence[RunView]) -> str:
    colours = plots.run_colours(runs)  # once: a run has one colour in every figure
    figures = [  # each caption says how to read its plot: the title inside the SVG already names it
        (
            "Read each bucket's bars against each other: where two runs' whiskers overlap, the gap "
            "between them may be sampling noise rather than a better agent.",
            plots.bucket_bars(runs, colours),
        ),
        (
            "The shortest bar is the constraint the agent misses most, the one to work on; each bar "
            "averages only the episodes whose problem checked that constraint.",
            plots.axis_breakdown(runs, colours),
        ),
    ]
    curve = plots.pass_at_k_curve(runs, colours)
    if curve is not None:
        figures.append(
            (
                "How much resampling buys: a curve that climbs steeply after k = 1 means the agent "
                "can solve problems it does not solve reliably on its first try.",
                curve,
            )
        )
    inner = "".join(
        f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>" for caption, svg in figures
    )
    return f'<div class="figures">{inner}</div>'


def report_html(runs: Sequence[RunView], title: str, sections: Sequence[str] = ()) -> str:
    """One page: the Table-1-shaped comparison, the figures, then each run's metric tables, then
    `sections` (HTML: a run's episodes, say)."""
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{STYLE}{EPISODE_STYLE if sections else ''}</style>"
        "</head><body>",
        f"<h1>{html.escape(title)}</h1>",
        warnings_html(runs),
        html_table(comparison_rows(runs)),
        _figures(runs),
    ]
    for run in runs:
        if len(runs) > 1:
            parts.append(f"<h2>{html.escape(run.name)}</h2>")
        parts.append("<h3>Metrics per bucket</h3>")
        parts.append(html_table(run_metric_rows(run)))
        passes = pass_at_k_rows(run)
        if passes is not None:
            parts += ["<h3>pass@k</h3>", html_table(passes)]
        judged = judge_rows(run)
        if judged:
            judge = run.judge
            parts.append(
                f"<h3>Judge</h3><p>{judge['judged']} episode(s) judged: q = {judge['q']:.3f}, coefficient "
                f"{judge['coeff']:.3f}</p>"
            )
            parts += [html_table(rows) for rows in judged]
        parts += ["<h3>Setting</h3>", html_table(config_rows(run))]
        notes = run.metrics.get("scoring_notes") or []
        if notes:
            items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
            parts.append(f"<ul class='note'>{items}</ul>")
    parts += sections
    parts.append(
        "<p class='note'>Brackets and whiskers: 95% percentile bootstrap intervals over episodes "
        "(pass@k: over problems).</p></body></html>"
    )
    return "".join(parts)


def write_run_reports(run_dir: Path | str, miner_file: str | None = None) -> tuple[Path, Path]:
    """report.md and report.html inside a finished run directory; the HTML ends with the run's episodes
    (the per-problem table, each row linked to its episode) when its trajectories.jsonl is readable."""
    run = load_run(run_dir)
    md_path = run.path / REPORT_MD
    html_path = run.path / REPORT_HTML
    md_path.write_text(run_markdown(run), encoding="utf-8")
    sections = []
    with suppress(ReportError):  # no records (a run made elsewhere, its records moved): the numbers alone
        sections.append(episodes_html(load_episodes(run.path, miner_file=miner_file)))
    html_path.write_text(report_html([run], f"Evaluation report: {run.name}", sections), encoding="utf-8")
    return md_path, html_path


def write_comparison(
    runs: Sequence[RunView], markdown_path: Path | None = None, html_path: Path | None = None
) -> list[Path]:
    written = []
    if markdown_path is not None:
        markdown_path.parent.mkdir(parents=True, exist_ok=True)
        markdown_path.write_text(comparison_markdown(runs), encoding="utf-8")
        written.append(markdown_path)
    if html_path is not None:
        html_path.parent.mkdir(parents=True, exist_ok=True)
        html_path.write_text(report_html(runs, "Comparison of eval runs"), encoding="utf-8")
        written.append(html_path)
    return written
