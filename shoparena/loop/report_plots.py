"""The loop report's figures as inline SVG text (matplotlib Agg through `shoparena.report.plots`).

Each function returns None when it has nothing to draw; the document then says why in words. Every
figure that draws agents takes the report's one `colours` mapping (agent name → colour, from
`shoparena.report.plots.colours_for`), so an agent is the same colour in every figure; legends sit
outside the plot areas at the figures' text size.
"""

from __future__ import annotations

from collections.abc import Sequence

from shoparena.loop.report_data import Agent, Funnel, StageCurves, racer_name, uid_names
from shoparena.report.plots import FONT_SIZE, GREY, colours_for, label, legend_outside, pyplot, svg
from shoparena.report.runs import Interval
from shoparena.season.seasonfile import SeasonFile


def _colour(colours: dict[str, str], name: str) -> str:
    return colours.get(name, GREY)


def _race_ticks(season: SeasonFile) -> list[str]:
    return [race.race_id.removeprefix("race-").lstrip("0") or race.race_id for race in season.races]


def weights_over_time(season: SeasonFile, colours: dict[str, str]) -> str | None:
    """The consensus weight of every uid after each race (the burn included, grey and dashed)."""
    if not season.weights:
        return None
    plt = pyplot()
    names = uid_names(season)
    uids = sorted({uid for vector in season.weights for uid in vector.uids})
    figure, ax = plt.subplots(figsize=(5.6, 3.2))
    xs = list(range(1, len(season.weights) + 1))
    for uid in uids:
        ys = [dict(zip(v.uids, v.weights, strict=True)).get(uid, 0.0) for v in season.weights]
        name = names.get(uid, f"uid {uid}")
        burn = uid == season.config.burn_uid
        ax.plot(
            xs, ys, marker="o", color=GREY if burn else _colour(colours, name),
            label=label(name), linestyle="--" if burn else "-",
        )  # fmt: skip
    ax.set_xticks(xs, [label(v.race_id or "–") for v in season.weights], rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("consensus weight")
    ax.set_title("Weights after each race (per uid)")
    legend_outside(ax)
    return svg(figure)


def race_scores(season: SeasonFile, colours: dict[str, str]) -> str | None:
    """Every racer's race score per race; a star marks the winner of a race that promoted it."""
    if not any(race.results for race in season.races):
        return None
    plt = pyplot()
    figure, ax = plt.subplots(figsize=(5.6, 3.2))
    racers: list[str] = []
    points: dict[str, list[tuple[int, float]]] = {}
    for index, race in enumerate(season.races, 1):
        for result in race.results:
            name = racer_name(season, result.hotkey, result.submission_id)
            if name not in points:
                racers.append(name)
            points.setdefault(name, []).append((index, result.score))
    for name in racers:
        xs, ys = zip(*points[name], strict=True)
        ax.plot(xs, ys, marker="o", color=_colour(colours, name), label=label(name))
    promoted = [
        (index, race.results[0].score)
        for index, race in enumerate(season.races, 1)
        if race.promoted and race.results
    ]
    if promoted:
        xs, ys = zip(*promoted, strict=True)
        ax.scatter(xs, ys, marker="*", s=220, color="gold", edgecolor="black", zorder=5, label="promoted")
    ax.set_xticks(range(1, len(season.races) + 1), _race_ticks(season))
    ax.set_xlabel("race")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("race score")
    ax.set_title("Race scores (★ promoted winner)")
    legend_outside(ax)
    return svg(figure)


def funnel_bars(funnel: Funnel) -> str | None:
    """Where the corpus' inputs went (kept / rejected / axis-B / deduplicated) and the rejections by reason."""
    if funnel.counts is None:
        return None
    plt = pyplot()
    counts = funnel.counts
    reasons = sorted((funnel.reasons or {}).items(), key=lambda item: -item[1])
    figure, axes = plt.subplots(1, 2 if reasons else 1, figsize=(8.4 if reasons else 4.6, 2.8), squeeze=False)
    outcome = [
        ("train", counts["train"], "#55a868"),
        ("eval", counts["eval"], "#8fd19e"),
        ("rejected", counts["rejected"], "#c44e52"),
        ("axis-B", counts["axis_b"], "#dd8452"),
        ("deduplicated", counts["deduplicated"], "#8c8c8c"),
    ]
    ax = axes[0][0]
    labels = [name for name, _, _ in outcome][::-1]
    values = [value for _, value, _ in outcome][::-1]
    ax.barh(labels, values, color=[colour for _, _, colour in outcome][::-1])
    for y, value in enumerate(values):
        ax.text(value, y, f" {value:,}", va="center", fontsize=FONT_SIZE - 1)
    ax.set_xlabel("trajectories")
    ax.set_title(f"Firehose → corpus ({counts['inputs']:,} inputs)")
    if reasons:
        ax = axes[0][1]
        names = [label(name) for name, _ in reasons][::-1]
        values = [value for _, value in reasons][::-1]
        ax.barh(names, values, color="#c44e52")
        for y, value in enumerate(values):
            ax.text(value, y, f" {value:,}", va="center", fontsize=FONT_SIZE - 1)
        ax.set_xlabel("rejected trajectories")
        ax.set_title("Rejected, by reason")
    figure.tight_layout()
    return svg(figure)


def training_curves(stages: Sequence[StageCurves]) -> str | None:
    """Small multiples: one row per stage that logged curves, one column per family (loss, reward, KL,
    recommend rate); x is the optimiser step."""
    drawn = [stage for stage in stages if stage.series]
    if not drawn:
        return None
    families = [f for f in ("loss", "reward", "KL", "recommend rate") if any(f in s.series for s in drawn)]
    keys = colours_for(key for stage in drawn for series in stage.series.values() for key in series)
    plt = pyplot()
    figure, axes = plt.subplots(
        len(drawn), len(families), figsize=(2.6 * len(families) + 0.6, 1.9 * len(drawn) + 0.4), squeeze=False
    )
    for row, stage in enumerate(drawn):
        for column, family in enumerate(families):
            ax = axes[row][column]
            series = stage.series.get(family)
            if not series:
                ax.axis("off")
                ax.text(0.5, 0.5, "not logged", ha="center", va="center", fontsize=FONT_SIZE - 1,
                        color="#999", transform=ax.transAxes)  # fmt: skip
                continue
            for key, points in series.items():
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, marker="o", markersize=3, color=keys[key], label=key)
            if family == "recommend rate":
                ax.set_ylim(-0.05, 1.05)
            ax.set_title(f"{label(stage.name)}: {family}", fontsize=FONT_SIZE)
            steps = sorted({x for points in series.values() for x, _ in points})
            if len(steps) <= 6:
                ax.set_xticks(steps, [f"{x:g}" for x in steps])
            else:
                ax.xaxis.get_major_locator().set_params(integer=True)
            if row == len(drawn) - 1:
                ax.set_xlabel("step")
    figure.tight_layout()
    # one key for every panel (a metric has one colour throughout), beside the panels, not on them
    handles = [
        plt.Line2D([], [], color=colour, marker="o", markersize=3, label=key) for key, colour in keys.items()
    ]
    figure.legend(handles=handles, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0), title="metric")
    return svg(figure)


def pass_at_k_of(agent: Agent) -> tuple[float | None, int, float | None]:
    """(pass@1, k, pass@k) of an agent's run: pass@1 from the k = 1 estimate (the ASR when the run has
    none), pass@k at the run's largest k (None when it drew one sample per problem)."""
    passes = agent.run.pass_at_k()
    by_k = {k: v.value for k, v in passes}
    first = by_k.get(1, agent.run.overall("asr").value)
    k = max(by_k, default=1)
    return first, k, (by_k[k] if k > 1 else None)


def pass_at_k_intervals(agent: Agent) -> tuple[Interval, int, Interval]:
    """`pass_at_k_of` with the 95% bootstrap intervals (pass@1: the k = 1 estimate, else the ASR)."""
    passes = dict(agent.run.pass_at_k())
    k = max(passes, default=1)
    first = passes.get(1, agent.run.overall("asr"))
    return first, k, passes[k] if k > 1 else Interval(value=None)


def table1_bars(agents: Sequence[Agent], colours: dict[str, str]) -> str | None:
    """pass@1 (solid) and pass@k (hatched) per agent on the held-out split, in the agent's colour."""
    if not agents:
        return None
    plt = pyplot()
    figure, ax = plt.subplots(figsize=(max(4.8, 0.9 * len(agents) + 1.5), 3.4))
    width = 0.38
    any_k = False
    for index, agent in enumerate(agents):
        first, k, at_k = pass_at_k_of(agent)
        colour = _colour(colours, agent.label)
        ax.bar(index - width / 2, first or 0.0, width, color=colour)
        ax.text(index - width / 2, (first or 0.0) + 0.01, "n/a" if first is None else f"{first:.2f}",
                ha="center", va="bottom", fontsize=FONT_SIZE - 1)  # fmt: skip
        if at_k is not None:
            any_k = True
            ax.bar(index + width / 2, at_k, width, color=colour, alpha=0.45, hatch="//")
            ax.text(index + width / 2, at_k + 0.01, f"{at_k:.2f}\nk={k}", ha="center", va="bottom",
                    fontsize=FONT_SIZE - 2)  # fmt: skip
    ax.set_xticks(range(len(agents)), [label(a.label) for a in agents], rotation=30, ha="right")
    ax.set_ylim(0, 1.15)
    ax.set_ylabel("success on held-out problems")
    ax.set_title("pass@1 (solid) and pass@k (hatched)" if any_k else "pass@1")
    if any_k:
        handles = [
            plt.Rectangle((0, 0), 1, 1, facecolor="#bbbbbb", label="pass@1"),
            plt.Rectangle((0, 0), 1, 1, facecolor="#bbbbbb", alpha=0.45, hatch="//", label="pass@k"),
        ]
        legend_outside(ax, handles=handles)
    return svg(figure)


def final_standings(season: SeasonFile, distilled: set[str], colours: dict[str, str]) -> str | None:
    """The last race's results by score, each racer in its colour, the distilled agent's bar outlined."""
    race = season.races[-1] if season.races else None
    if race is None or not race.results:
        return None
    plt = pyplot()
    results = race.results
    figure, ax = plt.subplots(figsize=(5.6, 0.42 * len(results) + 1.0))
    racers = [racer_name(season, r.hotkey, r.submission_id) for r in results]
    names = [label(f"{rank}. {name}") for rank, name in enumerate(racers, 1)]
    ys = list(range(len(results)))[::-1]
    for y, r, name in zip(ys, results, racers, strict=True):
        mine = r.hotkey in distilled
        ax.barh(y, r.score, color=_colour(colours, name), edgecolor="black" if mine else "none",
                linewidth=2 if mine else 0)  # fmt: skip
        ax.text(r.score, y, f" {r.score:.3f}" + ("  ← distilled" if mine else ""), va="center",
                fontsize=FONT_SIZE - 1, fontweight="bold" if mine else "normal")  # fmt: skip
    ax.set_yticks(ys, names)
    ax.set_xlim(0, 1.25)
    ax.set_xlabel("race score")
    ax.set_title(label(f"Final race {race.race_id} standings"))
    return svg(figure)
