"""Reports of eval runs (SPEC §10): the paper's Table 1 shape, per-bucket bars, per-axis breakdown,
pass@k curves and confidence intervals, as a terminal table, Markdown and a self-contained HTML page.

Public API:
- `load_run(dir) -> RunView` (reads metrics.json and run.json of a finished run)
- `write_run_reports(dir)` → report.md, report.html in the run directory
- `report_warnings(runs)`: the sentences the terminal, Markdown and HTML reports all warn with
- `comparison_rows(runs)` (Table 1 rows: `.markdown()`, `.rich()`), `comparison_markdown(runs)`,
  `report_html(runs, title)`, `write_comparison(runs, markdown_path, html_path)`
"""

from typing import TYPE_CHECKING

from shoparena.records.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from shoparena.report.documents import (
        comparison_markdown,
        report_html,
        run_markdown,
        write_comparison,
        write_run_reports,
    )
    from shoparena.report.runs import ReportError, RunView, load_run, report_warnings
    from shoparena.report.tables import comparison_rows

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "comparison_markdown": "shoparena.report.documents",
        "report_html": "shoparena.report.documents",
        "run_markdown": "shoparena.report.documents",
        "write_comparison": "shoparena.report.documents",
        "write_run_reports": "shoparena.report.documents",
        "ReportError": "shoparena.report.runs",
        "RunView": "shoparena.report.runs",
        "load_run": "shoparena.report.runs",
        "report_warnings": "shoparena.report.runs",
        "comparison_rows": "shoparena.report.tables",
    },
)

__all__ = [
    "ReportError",
    "RunView",
    "comparison_markdown",
    "comparison_rows",
    "load_run",
    "report_html",
    "report_warnings",
    "run_markdown",
    "write_comparison",
    "write_run_reports",
]
