"""The report's figures as self-contained SVG text (matplotlib, Agg; no files, no network).

- per-bucket success bars with bootstrap whiskers, one bar per run (the paper's Figure 3 shape);
- the per-axis breakdown (title, price, service, sku/attr, knowledge): where the agents lose points;
- the pass@k curve: how much resampling buys.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from shoparena.report.runs import AXIS_METRICS, Interval, RunView, shared_buckets

COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")


def pyplot():
    """matplotlib.pyplot on the Agg backend with the reports' style (the loop report uses it too)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False}
    )
    return plt


def svg(figure) -> str:
    """The figure as inline SVG text (closed afterwards), without the RDF metadata block: no URL but the
    SVG namespaces."""
    buffer = io.StringIO()
    figure.savefig(
        buffer,
        format="svg",
        bbox_inches="tight",
        metadata=dict.fromkeys(("Date", "Creator", "Format", "Type")),
    )
    pyplot().close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog and doctype: the SVG goes inline


def _errors(values: Sequence[Interval]) -> tuple[list[float], list[list[float]]]:
    heights, low, high = [], [], []
    for v in values:
        value = v.value or 0.0
        heights.append(value)
        low.append(max(value - v.low, 0.0) if v.low is not None and v.value is not None else 0.0)
        high.append(max(v.high - value, 0.0) if v.high is not None and v.value is not None else 0.0)
    return heights, [low, high]


def _grouped_bars(ax, groups: list[str], runs: Sequence[RunView], value_of) -> None:
    width = 0.8 / max(len(runs), 1)
    for position, run in enumerate(runs):
        values = [value_of(run, group) for group in groups]
        heights, errors = _errors(values)
        xs = [i - 0.4 + width * (position + 0.5) for i in range(len(groups))]
        ax.bar(
            xs, heights, width, yerr=errors, capsize=3, label=run.name, color=COLOURS[position % len(COLOURS)]
        )
        for x, v in zip(xs, values, strict=True):
            if v.value is None:
                ax.text(x, 0.01, "n/a", ha="center", va="bottom", fontsize=7, color="#666")
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylim(0, 1.05)
    if len(runs) > 1:
        ax.legend(frameon=False, fontsize=8)


def bucket_bars(runs: Sequence[RunView]) -> str:
    """Success rate per bucket and overall, with 95% bootstrap whiskers."""
    plt = pyplot()
    groups = [*shared_buckets(list(runs)), "overall"]
    figure, ax = plt.subplots(figsize=(max(4.5, 1.2 * len(groups) * max(1, len(runs)) ** 0.5), 3.2))

    def value_of(run: RunView, group: str) -> Interval:
        return run.overall("asr") if group == "overall" else run.bucket(group, "asr")

    _grouped_bars(ax, groups, runs, value_of)
    ax.set_ylabel("success rate (ASR)")
    ax.set_title("Success per bucket (95% bootstrap CI)")
    return svg(figure)


def axis_breakdown(runs: Sequence[RunView]) -> str:
    """Mean hit rate per constraint axis over the episodes where that axis was checked."""
    plt = pyplot()
    labels = [label for key, label in AXIS_METRICS if any(run.overall(key).value is not None for run in runs)]
    keys = {label: key for key, label in AXIS_METRICS}
    figure, ax = plt.subplots(figsize=(max(4.5, 1.1 * len(labels) * max(1, len(runs)) ** 0.5), 3.2))
    _grouped_bars(ax, labels, runs, lambda run, label: run.overall(keys[label]))
    ax.set_ylabel("constraints met")
    ax.set_title("Per-axis breakdown (overall)")
    return svg(figure)


def pass_at_k_curve(runs: Sequence[RunView]) -> str | None:
    """pass@k against k per run (with its interval band); None when no run has more than one sample."""
    if all(len(run.pass_at_k()) <= 1 for run in runs):
        return None
    plt = pyplot()
    figure, ax = plt.subplots(figsize=(4.8, 3.2))
    for position, run in enumerate(runs):
        points = [(k, v) for k, v in run.pass_at_k() if v.value is not None]
        if not points:
            continue
        colour = COLOURS[position % len(COLOURS)]
        ks = [k for k, _ in points]
        ax.plot(ks, [v.value for _, v in points], marker="o", color=colour, label=run.name)
        if all(v.low is not None and v.high is not None for _, v in points):
            ax.fill_between(
                ks, [v.low for _, v in points], [v.high for _, v in points], color=colour, alpha=0.15
            )
    ax.set_xlabel("k (samples)")
    ax.set_ylabel("pass@k")
    ax.set_ylim(0, 1.05)
    ax.set_title("pass@k (unbiased estimator, 95% CI band)")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.legend(frameon=False, fontsize=8)
    return svg(figure)
