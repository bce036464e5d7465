"""A finished eval run as the reports see it: metrics.json plus run.json, read once, with typed accessors.

Reports read the files, never the runner's objects, so a run from last month (or another machine) can
be reported and compared with today's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from shoparena.problems.models import BUCKETS

METRICS_FILE = "metrics.json"
RUN_FILE = "run.json"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
AXIS_METRICS = (
    ("title_mean", "title"),
    ("price_mean", "price"),
    ("service_mean", "service"),
    ("sku_attr_mean", "sku/attr"),
    ("knowledge_mean", "knowledge"),
)


class ReportError(ValueError):
    """A directory that is not a finished run; the message says what is missing."""


class Interval(BaseModel):
    value: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0

    def text(self, digits: int = 3, ci: bool = True) -> str:
        """`0.412 [0.350, 0.470]`; a dash when the metric does not apply."""
        if self.value is None:
            return "–"
        body = f"{self.value:.{digits}f}"
        if ci and self.low is not None and self.high is not None:
            body += f" [{self.low:.{digits}f}, {self.high:.{digits}f}]"
        return body


class RunView(BaseModel):
    """One run's numbers, keyed the way every table and plot asks for them."""

    path: Path
    metrics: dict[str, Any]
    run: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.metrics.get("name") or self.run.get("name") or self.path.name)

    @property
    def notes(self) -> list[str]:
        return list(self.metrics.get("notes") or [])

    @property
    def counts(self) -> dict[str, Any]:
        return self.metrics.get("counts", {})

    @property
    def buckets(self) -> list[str]:
        present = list(self.metrics["metrics"]["buckets"])
        return [b for b in BUCKETS if b in present] + sorted(set(present) - set(BUCKETS))

    def overall(self, metric: str) -> Interval:
        return Interval.model_validate(self.metrics["metrics"]["overall"]["metrics"][metric])

    def bucket(self, bucket: str, metric: str) -> Interval:
        group = self.metrics["metrics"]["buckets"].get(bucket)
        if group is None:
            return Interval(value=None)
        return Interval.model_validate(group["metrics"][metric])

    def bucket_n(self, bucket: str) -> int:
        group = self.metrics["metrics"]["buckets"].get(bucket)
        return int(group["n"]) if group else 0

    def pass_at_k(self, bucket: str | None = None) -> list[tuple[int, Interval]]:
        items = (
            self.metrics.get("pass_at_k", [])
            if bucket is None
            else self.metrics.get("pass_at_k_by_bucket", {}).get(bucket, [])
        )
        return [(int(item["k"]), Interval.model_validate(item["value"])) for item in items]

    @property
    def judge(self) -> dict[str, Any] | None:
        return self.metrics.get("judge")

    def setting(self) -> str:
        """The scoring setting in one phrase: numbers under different settings are not comparable."""
        m = self.metrics
        samples = self.counts.get("samples", 1)
        return (
            f"{m.get('mode')} mode, {m.get('similarity')} ≥ {m.get('title_threshold')}, "
            f"{samples} sample{'s' if samples != 1 else ''}/problem"
        )

    def scoring_setting(self) -> str:
        """Mode and similarity: ASRs scored under different ones are not comparable (sample counts are)."""
        m = self.metrics
        return f"{m.get('mode')} mode, {m.get('similarity')} ≥ {m.get('title_threshold')}"

    def auto_notes(self) -> list[str]:
        """What a reader must know to trust the row: setting, failures, gaps, the judge."""
        notes = [*self.notes, self.setting()]
        counts = self.counts
        if counts.get("errors"):
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(counts.get("errors_by_kind", {}).items()))
            notes.append(f"{counts['errors']} episode error(s) ({kinds}) counted as failures")
        if counts.get("superseded"):
            notes.append(
                f"{counts['superseded']} errored episode(s) re-run with --retry-errors (the re-run counts)"
            )
        if counts.get("missing_episodes"):
            notes.append(f"{counts['missing_episodes']} episode(s) not run yet")
        judge = self.judge
        if judge:
            notes.append(f"judge q={judge['q']:.2f} → coeff {judge['coeff']:.2f}")
        return notes


def report_warnings(runs: list[RunView]) -> list[str]:
    """What a reader must not miss, one sentence each: the terminal report prints them as warnings and
    the Markdown and HTML reports show the same sentences at the top."""
    warnings = []
    settings = sorted({run.scoring_setting() for run in runs})
    if len(settings) > 1:
        warnings.append(
            "the runs were scored under different settings and are not directly comparable: "
            + "; ".join(settings)
        )
    for run in runs:
        retryable = run.counts.get("retryable_errors", 0)
        if retryable:
            warnings.append(
                f"{run.name}: {retryable} episode(s) failed with a model-endpoint error or a timeout and "
                "count as failures (re-run `shoparena eval` with --retry-errors)"
            )
    return warnings


def load_run(path: Path | str) -> RunView:
    path = Path(path)
    if not path.is_dir():
        raise ReportError(f"{path} is not a directory")
    metrics_path = path / METRICS_FILE
    if not metrics_path.is_file():
        raise ReportError(
            f"{path} has no {METRICS_FILE}: not a finished run (run `shoparena eval` to finish it)"
        )
    try:
        metrics = orjson.loads(metrics_path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise ReportError(f"{metrics_path} is not JSON: {exc}") from exc
    if not isinstance(metrics, dict) or "metrics" not in metrics:
        raise ReportError(f"{metrics_path} is not an eval metrics file (no 'metrics')")
    run: dict[str, Any] = {}
    if (path / RUN_FILE).is_file():
        run = orjson.loads((path / RUN_FILE).read_bytes())
    return RunView(path=path, metrics=metrics, run=run)


def shared_buckets(runs: list[RunView]) -> list[str]:
    """Buckets any run has, in the canonical order (a run without one shows a dash)."""
    present = {b for run in runs for b in run.buckets}
    return [b for b in BUCKETS if b in present] + sorted(present - set(BUCKETS))
