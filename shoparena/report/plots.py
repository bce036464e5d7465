"""The report's figures as self-contained SVG text (matplotlib, Agg; no files, no network).

- per-bucket success bars with bootstrap whiskers, one bar per run (the paper's Figure 3 shape);
- the per-axis breakdown (title, price, service, sku/attr, knowledge): where the agents lose points;
- the pass@k curve: how much resampling buys.

Every figure of one report colours a run (an agent) the same: the document computes `colours_for` once
over its runs and hands the mapping to each plot. Legends sit outside the plot area (`legend_outside`),
at the figures' text size.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from shoparena.report.runs import AXIS_METRICS, Interval, RunView, shared_buckets

COLOURS = (
    "#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3",
    "#937860", "#da8bc3", "#ccb974", "#64b5cd", "#2f4b7c",
    "#17becf", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
    "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5", "#aec7e8",
)  # fmt: skip
"""Agent colours, in the order names are met: twenty distinct ones (a loop report names 8 miners, the
distilled agent, the base and its stages); grey is kept for the burn and other non-agents."""
GREY = "#8c8c8c"
FONT_SIZE = 10
"""Points; drawn at 100% the figures' text is ~13 CSS px."""


def colours_for(names) -> dict[str, str]:
    """name → colour, one per distinct name in the order given (the palette wraps after twenty): computed
    once per report and passed to every plot, so an agent keeps its colour from figure to figure."""
    mapping: dict[str, str] = {}
    for name in names:
        if name not in mapping:
            mapping[name] = COLOURS[len(mapping) % len(COLOURS)]
    return mapping


def legend_outside(ax, **options):
    """The axes' legend to the right of its plot area (never on the data), unframed, at text size."""
    options = {"frameon": False, "loc": "upper left", "bbox_to_anchor": (1.02, 1.0), "borderaxespad": 0.0,
               **options}  # fmt: skip
    return ax.legend(**options)


def pyplot():
    """matplotlib.pyplot on the Agg backend with the reports' style (the loop report uses it too)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "svg.fonttype": "none",
            "font.size": FONT_SIZE,
            "legend.fontsize": FONT_SIZE,
            "axes.titlesize": FONT_SIZE + 1,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )
    return plt


def svg(figure) -> str:
    """The figure as inline SVG text (closed afterwards), without the RDF metadata block: no URL but the
    SVG namespaces."""
    _unclip_inner_lines(figure)
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


def _unclip_inner_lines(figure) -> None:
    """Lines whose every point is inside the axes' limits are drawn unclipped and above the spines: a
    point on an edge (a score of 0 or 1) is otherwise half a marker under the axis line."""
    for ax in figure.axes:
        (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        for line in ax.get_lines():
            xs, ys = line.get_xdata(), line.get_ydata()
            try:
                inside = all(x0 <= float(x) <= x1 for x in xs) and all(y0 <= float(y) <= y1 for y in ys)
            except (TypeError, ValueError):  # categorical data: leave it as matplotlib drew it
                continue
            if inside:
                line.set_clip_on(False)
                line.set_zorder(max(line.get_zorder(), 3))


def _errors(values: Sequence[Interval]) -> tuple[list[float], list[list[float]]]:
    heights, low, high = [], [], []
    for v in values:
        value = v.value or 0.0
        heights.append(value)
        low.append(max(value - v.low, 0.0) if v.low is not None and v.value is not None else 0.0)
        high.append(max(v.high - value, 0.0) if v.high is not None and v.value is not None else 0.0)
    return heights, [low, high]


def run_colours(runs: Sequence[RunView]) -> dict[str, str]:
    return colours_for(run.name for run in runs)


def label(text: str) -> str:
    """Text matplotlib draws as given: `$` would start mathtext (a name could break the figure) and a
    leading `_` hides a legend entry."""
    text = text.replace("$", r"\$")
    return "\u200b" + text if text.startswith("_") else text


def _grouped_bars(ax, groups: list[str], runs: Sequence[RunView], value_of, colours: dict[str, str]) -> None:
    width = 0.8 / max(len(runs), 1)
    for position, run in enumerate(runs):
        values = [value_of(run, group) for group in groups]
        heights, errors = _errors(values)
        xs = [i - 0.4 + width * (position + 0.5) for i in range(len(groups))]
        ax.bar(xs, heights, width, yerr=errors, capsize=3, label=label(run.name), color=colours[run.name])
        for x, v in zip(xs, values, strict=True):
            if v.value is None:
                ax.text(x, 0.01, "n/a", ha="center", va="bottom", fontsize=FONT_SIZE - 1, color="#666")
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylim(0, 1.05)
    if len(runs) > 1:
        legend_outside(ax)


def bucket_bars(runs: Sequence[RunView], colours: dict[str, str] | None = None) -> str:
    """Success rate per bucket and overall, with 95% bootstrap whiskers."""
    plt = pyplot()
    groups = [*shared_buckets(list(runs)), "overall"]
    figure, ax = plt.subplots(figsize=(max(4.5, 1.2 * len(groups) * max(1, len(runs)) ** 0.5), 3.2))

    def value_of(run: RunView, group: str) -> Interval:
        return run.overall("asr") if group == "overall" else run.bucket(group, "asr")

    _grouped_bars(ax, groups, runs, value_of, colours or run_colours(runs))
    ax.set_ylabel("success rate (ASR)")
    ax.set_title("Success per bucket (95% bootstrap CI)")
    return svg(figure)


def axis_breakdown(runs: Sequence[RunView], colours: dict[str, str] | None = None) -> str:
    """Mean hit rate per constraint axis over the episodes where that axis was checked."""
    plt = pyplot()
    labels = [label for key, label in AXIS_METRICS if any(run.overall(key).value is not None for run in runs)]
    keys = {label: key for key, label in AXIS_METRICS}
    figure, ax = plt.subplots(figsize=(max(4.5, 1.1 * len(labels) * max(1, len(runs)) ** 0.5), 3.2))
    _grouped_bars(ax, labels, runs, lambda run, axis: run.overall(keys[axis]), colours or run_colours(runs))
    ax.set_ylabel("constraints met")
    ax.set_title("Per-axis breakdown (overall)")
    return svg(figure)


def pass_at_k_curve(runs: Sequence[RunView], colours: dict[str, str] | None = None) -> str | None:
    """pass@k against k per run (with its interval band); None when no run has more than one sample."""
    if all(len(run.pass_at_k()) <= 1 for run in runs):
        return None
    plt = pyplot()
    colours = colours or run_colours(runs)
    figure, ax = plt.subplots(figsize=(4.8, 3.2))
    for run in runs:
        points = [(k, v) for k, v in run.pass_at_k() if v.value is not None]
        if not points:
            continue
        colour = colours[run.name]
        ks = [k for k, _ in points]
        ax.plot(ks, [v.value for _, v in points], marker="o", color=colour, label=label(run.name))
        if all(v.low is not None and v.high is not None for _, v in points):
            ax.fill_between(
                ks, [v.low for _, v in points], [v.high for _, v in points], color=colour, alpha=0.15
            )
    ax.set_xlabel("k (samples)")
    ax.set_ylabel("pass@k")
    ax.set_ylim(0, 1.05)
    ax.set_title("pass@k (unbiased estimator, 95% CI band)")
    ax.xaxis.get_major_locator().set_params(integer=True)
    if len(runs) > 1:  # one run: the page's title names it, as in the other figures
        legend_outside(ax)
    return svg(figure)
