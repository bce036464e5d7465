"""Tables of eval runs as plain rows, then as Markdown or a rich terminal table.

The comparison table has the shape of the paper's Table 1 (variant × ASR, with per-bucket columns and
notes); the single-run tables follow `shoparena score` (metrics as rows, buckets as columns).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from shoparena.report.runs import AXIS_METRICS, RunView, shared_buckets

RUN_METRICS = (
    ("asr", "ASR"),
    ("car", "CAR"),
    ("gt_rate", "gt rate"),
    *((key, label) for key, label in AXIS_METRICS),
    ("format_score", "format"),
    ("length", "length"),
)


class Rows:
    """A header and string cells: one source for the Markdown, HTML and terminal renderings."""

    def __init__(self, header: list[str], rows: list[list[str]], align: list[str] | None = None):
        self.header = header
        self.rows = rows
        self.align = align or ["left", *(["right"] * (len(header) - 1))]

    def markdown(self) -> str:
        def clean(cell: str) -> str:
            return cell.replace("|", "\\|").replace("\n", " ")

        marks = [":---" if a == "left" else "---:" for a in self.align]
        lines = ["| " + " | ".join(clean(h) for h in self.header) + " |", "| " + " | ".join(marks) + " |"]
        lines += ["| " + " | ".join(clean(c) for c in row) + " |" for row in self.rows]
        return "\n".join(lines) + "\n"

    def rich(self, title: str | None = None) -> Table:
        table = Table(title=title)
        for name, align in zip(self.header, self.align, strict=True):
            table.add_column(name, justify="left" if align == "left" else "right", overflow="fold")
        for row in self.rows:
            table.add_row(*row)
        return table


def comparison_rows(runs: Sequence[RunView], ci: bool = True) -> Rows:
    """Table 1: one row per run (variant); ASR overall and per bucket, CAR, pass@k at the run's largest k,
    the judged final score, notes."""
    buckets = shared_buckets(list(runs))
    multi = any(len(run.pass_at_k()) > 1 for run in runs)
    header = ["Variant", "n", "ASR", *buckets, "CAR"]
    if multi:
        header.append("pass@k")
    judged = any(run.judge for run in runs)
    if judged:
        header.append("final")
    header.append("Notes")
    rows = []
    for run in runs:
        row = [run.name, str(run.counts.get("scored", run.counts.get("episodes", "")))]
        row.append(run.overall("asr").text(ci=ci))
        row += [run.bucket(b, "asr").text(ci=False) for b in buckets]
        row.append(run.overall("car").text(ci=False))
        if multi:
            passes = run.pass_at_k()
            k, value = passes[-1] if passes else (1, None)
            row.append(f"{value.text(ci=False)} (k={k})" if value is not None and k > 1 else "–")
        if judged:
            judge = run.judge
            row.append(
                f"{judge['final_score']:.3f}" if judge and judge.get("final_score") is not None else "–"
            )
        row.append("; ".join(run.auto_notes()))
        rows.append(row)
    align = ["left", *(["right"] * (len(header) - 2)), "left"]
    return Rows(header, rows, align)


def run_metric_rows(run: RunView) -> Rows:
    """Every metric (rows) per bucket and overall (columns), each with its bootstrap interval."""
    buckets = run.buckets
    header = [
        "metric",
        *(f"{b} (n={run.bucket_n(b)})" for b in buckets),
        f"overall (n={run.counts.get('scored', '')})",
    ]
    rows = []
    for key, label in RUN_METRICS:
        if run.overall(key).value is None:
            continue
        rows.append([label, *(run.bucket(b, key).text() for b in buckets), run.overall(key).text()])
    return Rows(header, rows)


def pass_at_k_rows(run: RunView) -> Rows | None:
    """pass@1..k overall and per bucket; None for single-sample runs (pass@1 is the ASR)."""
    overall = run.pass_at_k()
    if len(overall) <= 1:
        return None
    buckets = run.buckets
    header = ["k", "overall", *buckets]
    by_bucket = {b: dict(run.pass_at_k(b)) for b in buckets}
    rows = []
    for k, value in overall:
        cells = [by_bucket[b][k].text(ci=False) if k in by_bucket[b] else "–" for b in buckets]
        rows.append([str(k), value.text(), *cells])
    return Rows(header, rows)


def config_rows(run: RunView) -> Rows:
    config = run.run or run.metrics.get("config", {})
    agent = run.metrics.get("agent") or {}
    ran = f"{config.get('agent_spec', '')} ({agent.get('agent_id', '?')} v{agent.get('version', '?')})"
    if config.get("agent_file"):  # a miner file run from a copy (`miner try`): the author's name first
        ran = f"{config['agent_file']} (run as {ran})"
    timeout = config.get("episode_timeout_s")
    items = [
        ("agent", ran),
        ("run id", str(run.metrics.get("run_id", ""))),
        ("problems", f"{config.get('problems_source', '')} (limit {config.get('limit') or 'none'})"),
        ("catalogue", str(config.get("catalog", ""))),
        (
            "harness",
            f"profile {config.get('profile')}, protocol {config.get('protocol') or 'agent default'}, "
            f"step cap {config.get('step_cap') or 'default'}",
        ),
        ("scoring", f"{run.setting()}, pipeline {run.metrics.get('pipeline_version')}"),
        (
            "executor",
            f"{config.get('executor')} × {config.get('workers')}, "
            + (f"timeout {timeout:g} s" if timeout else "no timeout"),
        ),
    ]
    timing = run.metrics.get("timing") or {}
    if timing.get("episodes_per_s"):
        items.append(
            (
                "throughput",
                f"{timing['episodes_per_s']:.1f} episodes/s over {timing.get('episodes_run')} new episodes",
            )
        )
    usage = run.metrics.get("usage") or {}
    if usage.get("model_calls"):
        items.append(
            (
                "tokens",
                f"{usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion in {usage['model_calls']} model calls",
            )
        )
    return Rows(["setting", "value"], [[k, v] for k, v in items], ["left", "left"])


def judge_rows(run) -> list[Rows]:
    """The judge's quality levels and the gate that set them (empty when the run was not judged)."""
    judge = run.judge or {}
    quality = judge.get("quality_distribution") or {}
    gates = judge.get("gate_distribution") or {}
    tables = []
    if quality:
        total = sum(quality.values()) or 1
        tables.append(
            Rows(
                ["quality", "episodes", "share"],
                [[level, str(n), f"{n / total:.0%}"] for level, n in quality.items()],
            )
        )
    if gates:
        tables.append(Rows(["deciding gate", "episodes"], [[gate, str(n)] for gate, n in gates.items()]))
    return tables
