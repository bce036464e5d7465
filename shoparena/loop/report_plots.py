"""The loop report's figures as inline SVG text (matplotlib Agg through `shoparena.report.plots`).

Each function returns None when it has nothing to draw; the document then says why in words.
"""

from __future__ import annotations

from collections.abc import Sequence

from shoparena.loop.report_data import Agent, Funnel, StageCurves, racer_name, uid_names
from shoparena.report.plots import COLOURS, pyplot, svg
from shoparena.season.seasonfile import SeasonFile

HIGHLIGHT = "#c44e52"
PLAIN = "#8c8c8c"
KIND_COLOURS = {"base": "#8c8c8c", "stage": "#4c72b0", "season agent": "#55a868"}


def label(text: str) -> str:
    """Text matplotlib draws as given: `$` would start mathtext (a miner name could break the figure)
    and a leading `_` hides a legend entry."""
    text = text.replace("$", r"\$")
    return "\u200b" + text if text.startswith("_") else text


def _race_ticks(season: SeasonFile) -> list[str]:
    return [race.race_id.removeprefix("race-").lstrip("0") or race.race_id for race in season.races]


def weights_over_time(season: SeasonFile) -> str | None:
    """The consensus weight of every uid after each race (the burn included)."""
    if not season.weights:
        return None
    plt = pyplot()
    names = uid_names(season)
    uids = sorted({uid for vector in season.weights for uid in vector.uids})
    figure, ax = plt.subplots(figsize=(5.6, 3.2))
    xs = list(range(1, len(season.weights) + 1))
    for position, uid in enumerate(uids):
        ys = [dict(zip(v.uids, v.weights, strict=True)).get(uid, 0.0) for v in season.weights]
        name = names.get(uid, f"uid {uid}")
        ax.plot(
            xs, ys, marker="o", color=COLOURS[position % len(COLOURS)], label=label(f"{uid}: {name}"),
            linestyle="--" if uid == season.config.burn_uid else "-",
        )  # fmt: skip
    ax.set_xticks(xs, [label(v.race_id or "–") for v in season.weights], rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("consensus weight")
    ax.set_title("Weights after each race (per uid)")
    ax.legend(frameon=False, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return svg(figure)


def race_scores(season: SeasonFile) -> str | None:
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
    for position, name in enumerate(racers):
        xs, ys = zip(*points[name], strict=True)
        ax.plot(xs, ys, marker="o", color=COLOURS[position % len(COLOURS)], label=label(name))
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
    ax.legend(frameon=False, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
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
        ax.text(value, y, f" {value:,}", va="center", fontsize=8)
    ax.set_xlabel("trajectories")
    ax.set_title(f"Firehose → corpus ({counts['inputs']:,} inputs)")
    if reasons:
        ax = axes[0][1]
        names = [label(name) for name, _ in reasons][::-1]
        values = [value for _, value in reasons][::-1]
        ax.barh(names, values, color="#c44e52")
        for y, value in enumerate(values):
            ax.text(value, y, f" {value:,}", va="center", fontsize=8)
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
                ax.text(0.5, 0.5, "not logged", ha="center", va="center", fontsize=8, color="#999",
                        transform=ax.transAxes)  # fmt: skip
                continue
            for position, (key, points) in enumerate(series.items()):
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, marker="o", markersize=3, color=COLOURS[position % len(COLOURS)], label=key)
            if family == "recommend rate":
                ax.set_ylim(-0.05, 1.05)
            ax.set_title(f"{label(stage.name)}: {family}", fontsize=8)
            steps = sorted({x for points in series.values() for x, _ in points})
            if len(steps) <= 6:
                ax.set_xticks(steps, [f"{x:g}" for x in steps])
            else:
                ax.xaxis.get_major_locator().set_params(integer=True)
            if len(series) > 1:
                ax.legend(frameon=False, fontsize=6)
            if row == len(drawn) - 1:
                ax.set_xlabel("step")
    figure.tight_layout()
    return svg(figure)


def pass_at_k_of(agent: Agent) -> tuple[float | None, int, float | None]:
    """(pass@1, k, pass@k) of an agent's run: pass@1 from the k = 1 estimate (the ASR when the run has
    none), pass@k at the run's largest k (None when it drew one sample per problem)."""
    passes = agent.run.pass_at_k()
    by_k = {k: v.value for k, v in passes}
    first = by_k.get(1, agent.run.overall("asr").value)
    k = max(by_k, default=1)
    return first, k, (by_k[k] if k > 1 else None)


def table1_bars(agents: Sequence[Agent]) -> str | None:
    """pass@1 (solid) and pass@k (light) per agent on the held-out split, coloured by kind."""
    if not agents:
        return None
    plt = pyplot()
    figure, ax = plt.subplots(figsize=(max(4.8, 0.9 * len(agents) + 1.5), 3.2))
    width = 0.38
    any_k = False
    for index, agent in enumerate(agents):
        first, k, at_k = pass_at_k_of(agent)
        colour = KIND_COLOURS[agent.kind]
        ax.bar(index - width / 2, first or 0.0, width, color=colour)
        ax.text(index - width / 2, (first or 0.0) + 0.01, "n/a" if first is None else f"{first:.2f}",
                ha="center", va="bottom", fontsize=7)  # fmt: skip
        if at_k is not None:
            any_k = True
            ax.bar(index + width / 2, at_k, width, color=colour, alpha=0.45, hatch="//")
            ax.text(
                index + width / 2, at_k + 0.01, f"{at_k:.2f}\nk={k}", ha="center", va="bottom", fontsize=6
            )
    ax.set_xticks(range(len(agents)), [label(a.label) for a in agents], rotation=30, ha="right")
    ax.set_ylim(0, 1.15)
    ax.set_ylabel("success on held-out problems")
    ax.set_title("pass@1 (solid) and pass@k (hatched)" if any_k else "pass@1")
    handles = [
        plt.Rectangle((0, 0), 1, 1, color=colour, label=kind)
        for kind, colour in KIND_COLOURS.items()
        if any(a.kind == kind for a in agents)
    ]
    ax.legend(handles=handles, frameon=False, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return svg(figure)


def final_standings(season: SeasonFile, distilled: set[str]) -> str | None:
    """The last race's results by score, the distilled agent's bar highlighted."""
    race = season.races[-1] if season.races else None
    if race is None or not race.results:
        return None
    plt = pyplot()
    results = race.results
    figure, ax = plt.subplots(figsize=(5.6, 0.42 * len(results) + 1.0))
    names = [
        label(f"{rank}. {racer_name(season, r.hotkey, r.submission_id)}") for rank, r in enumerate(results, 1)
    ]
    colours = [HIGHLIGHT if r.hotkey in distilled else PLAIN for r in results]
    ys = list(range(len(results)))[::-1]
    ax.barh(ys, [r.score for r in results], color=colours)
    for y, r in zip(ys, results, strict=True):
        ax.text(r.score, y, f" {r.score:.3f}" + ("  ← distilled" if r.hotkey in distilled else ""),
                va="center", fontsize=8)  # fmt: skip
    ax.set_yticks(ys, names)
    ax.set_xlim(0, 1.25)
    ax.set_xlabel("race score")
    ax.set_title(label(f"Final race {race.race_id} standings"))
    return svg(figure)
