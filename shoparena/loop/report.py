"""The loop's report (issue 15): `DIR/report.md` and one self-contained `DIR/report.html`.

Sections: the season (races, promotions, weights over time), the firehose funnel, the training curves
per stage, the Table-1-shaped comparison on the held-out split (pass@1 and pass@k), and where the
distilled agent placed in the final race. Each section is built once as blocks (paragraphs, tables,
figures) and rendered twice: Markdown (tables and words) and HTML (the same plus inline SVG figures,
inline CSS, no scripts, no external references, every text escaped).

Public API: `write_loop_report(layout, title=…, notes=…) -> (report.md, report.html)`;
`LoopReportError` for a file that is there but malformed (a missing one is reported as not run).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

from shoparena.corpus.report import REASON_TEXT
from shoparena.loop import report_plots as plots
from shoparena.loop.layout import DISTILLED_MINER, STAGE_DONE, UNTRAINED_MINER, LoopLayout
from shoparena.loop.report_data import (
    LoopData,
    LoopReportError,
    distilled_placement,
    racer_name,
    read_loop,
    uid_names,
)
from shoparena.loop.resume import STAGE_STARTED
from shoparena.report.documents import STYLE, html_table
from shoparena.report.plots import colours_for
from shoparena.report.runs import report_warnings
from shoparena.report.tables import Rows, comparison_rows

__all__ = [
    "LoopReportError",
    "Report",
    "build_report",
    "loop_report_html",
    "loop_report_markdown",
    "write_loop_report",
]

TITLE = "Closed loop: season → firehose → corpus → post-training → the distilled agent's race"
EXTRA_STYLE = """
.missing{color:#8a4b00;background:#fff6e5;padding:.4em .7em;border-left:3px solid #e0a040}
tr.highlight td{background:#fde8e8;font-weight:600}
section{margin-top:2.2em}
"""


# -- blocks ---------------------------------------------------------------------------------------------------
@dataclass
class Text:
    text: str
    missing: bool = False
    """A sentence saying what did not run (shown as a call-out)."""
    warning: bool = False
    """A sentence the reader must not miss (shown as a warning)."""


@dataclass
class Table:
    rows: Rows
    highlight: set[int] = field(default_factory=set)
    """Row indexes to highlight (the distilled agent)."""


@dataclass
class Figure:
    caption: str
    svg: str | None


@dataclass
class Bullets:
    items: list[str]


@dataclass
class Section:
    anchor: str
    title: str
    blocks: list[Text | Table | Figure | Bullets]


def _not_run(path: Path, stage_dir: Path, what: str = "") -> Text:
    """`Did not run: PATH is missing`, or `Started but did not finish` when the loop marked the stage
    started and never done."""
    started = (stage_dir / STAGE_STARTED).is_file() and not (stage_dir / STAGE_DONE).is_file()
    head = "Started but did not finish" if started else "Did not run"
    return Text(f"{head}: {path} is missing" + (f" ({what})." if what else "."), missing=True)


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _scores_by_racer(season) -> Rows | None:
    """Race score per racer (rows) and race (columns); a star marks the winner of a promoting race."""
    raced = [race for race in season.races if race.results]
    if not raced:
        return None
    table: dict[str, dict[str, str]] = {}
    for race in raced:
        for rank, result in enumerate(race.results, 1):
            mark = " ★" if rank == 1 and race.promoted else ""
            name = racer_name(season, result.hotkey, result.submission_id)
            table.setdefault(name, {})[race.race_id] = _num(result.score) + mark
    rows = [[name, *(cells.get(race.race_id, "–") for race in raced)] for name, cells in table.items()]
    return Rows(["race score", *(race.race_id for race in raced)], rows)


# -- sections --------------------------------------------------------------------------------------------------
def agent_colours(data: LoopData) -> dict[str, str]:
    """One colour per agent for the whole report, computed once: the season's miners (by uid), the final
    race's racers (the distilled agent), then the held-out comparison's base and stages."""
    names: list[str] = []
    for season in (data.season, data.final):
        if season is not None:
            miners = [p for p in season.participants if p.get("role") == "miner"]
            miners.sort(key=lambda p: (p.get("uid") is None, p.get("uid") or 0))
            names += [str(p.get("miner") or p.get("hotkey", "?")) for p in miners]
            names += [s.miner for s in season.submissions]
    names += [agent.label for agent in data.comparison.agents]
    return colours_for(names)


def season_section(data: LoopData, colours: dict[str, str] | None = None) -> Section:
    path = data.layout.season_file
    season = data.season
    if season is None:
        return Section("season", "1. The season", [_not_run(path, data.layout.season_dir)])
    admitted = sum(s.status != "rejected" for s in season.submissions)
    blocks: list = [
        Text(
            f"{season.days} day(s), {season.miners} miner(s), {season.validators} validator(s), seed "
            f"{season.seed}, sandbox {season.sandbox}: {len(season.submissions)} submission(s) "
            f"({admitted} admitted, {len(season.submissions) - admitted} rejected by admission), "
            f"{len(season.refusals)} refused by the cooldown, {len(season.races)} race(s), "
            f"{sum(r.promoted for r in season.races)} promotion(s)."
        )
    ]
    races = []
    for race in season.races:
        top = race.results[0] if race.results else None
        races.append([
            race.race_id,
            str(race.state),
            str(len(race.results)),
            racer_name(season, race.winner, race.winner_submission_id if race.winner else None)
            if race.winner else "–",
            _num(top.score) if top else "–",
            "yes" if race.promoted else "no",
            race.cancel_reason or "",
        ])  # fmt: skip
    header = ["race", "state", "racers", "crown after", "top score", "promoted", "note"]
    blocks.append(Table(Rows(header, races, ["left", "left", "right", "left", "right", "left", "left"])))
    scores = _scores_by_racer(season)
    if scores is not None:
        blocks += [Table(scores), Text("★ the race's winner was promoted (took the crown).")]
    if season.weights:
        names = uid_names(season)
        uids = sorted({uid for vector in season.weights for uid in vector.uids})
        weight_rows = []
        for vector in season.weights:
            weights = dict(zip(vector.uids, vector.weights, strict=True))
            weight_rows.append([vector.race_id or "–", *(_num(weights.get(uid, 0.0)) for uid in uids)])
        blocks.append(
            Table(Rows(["after race", *(f"uid {uid}: {names.get(uid, '?')}" for uid in uids)], weight_rows))
        )
    else:
        blocks.append(Text("No weights were set (no race completed).", missing=True))
    blocks += [
        Figure("Consensus weights after each race", plots.weights_over_time(season, colours or {})),
        Figure("Race scores per race, promotions starred", plots.race_scores(season, colours or {})),
    ]
    if season.dishonest is not None:
        lie = season.dishonest
        liar = next((p for p in season.participants if p.get("hotkey") == lie.validator_hotkey), {})
        who = f"uid {liar['uid']}" if liar.get("uid") is not None else lie.validator_hotkey
        blocks.append(
            Text(
                f"The dishonest validator ({who}) inflated {lie.lies} result(s) for "
                f"{lie.favourite_miner}; "
                + (
                    "its favourite gained nothing (combined scores and weights equal the honest ones)."
                    if lie.gained_nothing
                    else "its favourite GAINED from the lie (the consensus did not hold)."
                )
            )
        )
    blocks.append(
        Text(
            "What the numbers mean: a race score is the stake-weighted median of the validators' scores "
            "for a racer on the race's problems; the crown passes only when a challenger beats the "
            f"incumbent by the margin ({season.config.margin:g}). The weights are the arena's consensus "
            "weights after each race (Yuma-style, each validator clipped to the stake-weighted median): "
            f"the winner's share, a descending tail, the rest burned to uid {season.config.burn_uid}."
        )
    )
    return Section("season", "1. The season", blocks)


def funnel_section(data: LoopData) -> Section:
    funnel = data.funnel
    blocks: list = []
    if funnel.firehose_rows is None:
        blocks.append(_not_run(data.layout.firehose, data.layout.firehose_dir, "no firehose export"))
    else:
        blocks.append(Text(f"The firehose export holds {funnel.firehose_rows:,} trajectories."))
    counts = funnel.counts
    if counts is None:
        manifest = data.layout.corpus_dir / "manifest.json"
        blocks.append(_not_run(manifest, data.layout.corpus_dir, "the corpus was not built"))
        return Section("funnel", "2. The firehose funnel", blocks)
    accounted = funnel.kept + counts["rejected"] + counts["axis_b"] + counts["deduplicated"]
    rows = [
        ["inputs", f"{counts['inputs']:,}"],
        ["kept: train", f"{counts['train']:,}"],
        ["kept: eval (held out)", f"{counts['eval']:,}"],
        ["rejected", f"{counts['rejected']:,}"],
        ["axis-B", f"{counts['axis_b']:,}"],
        ["deduplicated", f"{counts['deduplicated']:,}"],
    ]
    blocks.append(Table(Rows(["corpus", "trajectories"], rows)))
    reasons = sorted((funnel.reasons or {}).items(), key=lambda item: -item[1])
    if reasons:
        blocks.append(
            Table(
                Rows(
                    ["rejected because", "trajectories", "meaning"],
                    [[name, f"{n:,}", REASON_TEXT.get(name, "")] for name, n in reasons],
                    ["left", "right", "left"],
                )
            )
        )
    blocks.append(Figure("Where the firehose went, and why rows were rejected", plots.funnel_bars(funnel)))
    rewritten = funnel.rewritten or 0
    if funnel.rewritten is not None:
        blocks.append(
            Text(
                f"Besides the firehose, the corpus read {rewritten:,} agentic rows `corpus rewrite` made of its "
                "axis-B traces: the same calls, results and answers, with reasoning written before each turn "
                "(02-firehose/rewritten.jsonl), judged again and gated like any row."
            )
        )
    if funnel.firehose_rows is not None and funnel.firehose_rows + rewritten != counts["inputs"]:
        blocks.append(
            Text(
                f"The corpus read {counts['inputs']:,} inputs but the firehose holds {funnel.firehose_rows:,} "
                "trajectories"
                + (f" and the rewrite {rewritten:,} rows" if rewritten else "")
                + ": the corpus was not built from this firehose export alone.",
                missing=True,
            )
        )
    blocks.append(
        Text(
            "What the numbers mean: every input (an exported trajectory or a rewritten row) is accounted "
            "for once — kept "
            f"({funnel.kept:,}) + rejected ({counts['rejected']:,}) + axis-B ({counts['axis_b']:,}) + "
            f"deduplicated ({counts['deduplicated']:,}) = {accounted:,}"
            + (" = inputs." if accounted == counts["inputs"] else f" ≠ inputs ({counts['inputs']:,})!")
            + " Rejected rows failed the judge-quality or a format gate; axis-B rows had code, not the model, "
            "emit the tool calls; deduplicated rows ranked below the per-problem quota. The eval rows are the "
            "held-out split every checkpoint is evaluated on."
        )
    )
    return Section("funnel", "2. The firehose funnel", blocks)


def _stage_note(result: dict | None) -> str:
    if not result:
        return ""
    details = result.get("details") or {}
    notes = []
    if details.get("skipped"):
        notes.append("skipped (nothing to train on); the input model goes on")
    probe = details.get("probe") or {}
    if probe.get("stopped_at") is not None:
        notes.append(f"recommend-rate guard stopped it at step {probe['stopped_at']}")
    if details.get("variant"):
        notes.append(f"variant {details['variant']}")
    return "; ".join(notes)


def training_section(data: LoopData) -> Section:
    training = data.training
    if not training.ran:
        text = f"Did not run: {data.layout.train_dir} is missing (no post-training)."
        return Section("training", "3. Training", [Text(text, missing=True)])
    rows = []
    for stage in training.stages:
        result = stage.result or {}
        rows.append([
            stage.name, stage.status, str(result.get("steps", "–")), _num(result.get("train_loss")),
            _num(result.get("eval_loss")), f"{result['tokens']:,}" if "tokens" in result else "–",
            _num(result.get("seconds"), 1), _stage_note(stage.result),
        ])  # fmt: skip
    header = ["stage", "status", "steps", "train loss", "eval loss", "tokens", "seconds", "note"]
    blocks: list = [Table(Rows(header, rows, ["left", "left", *(["right"] * 5), "left"]))]
    if not training.stages:
        blocks.append(Text("No stage ran.", missing=True))
    for stage in training.stages:
        if stage.status != "finished":
            why = (
                "did not start"
                if stage.status == "not run"
                else "started but did not finish (no stage_result.json)"
            )
            blocks.append(Text(f"Stage {stage.name} {why}.", missing=True))
    blocks.append(
        Figure("Training curves per stage (x: optimiser step)", plots.training_curves(training.stages))
    )
    blocks.append(
        Text(
            "What the numbers mean: each row of panels is one stage, from its metrics.jsonl. Loss is the "
            "training loss (SFT stages also log the held-out eval_loss); reward is GRPO's outcome + "
            "tool-match reward (and its parts) or KTO's implicit rewards; KL is the divergence from the "
            "reference model; recommend rate is the share of rollouts (GRPO) or probe episodes (KTO's "
            "early-stop guard) that emitted recommend_product. A stage shows only what it logged."
        )
    )
    return Section("training", "3. Training", blocks)


def comparison_section(data: LoopData, colours: dict[str, str] | None = None) -> Section:
    comparison = data.comparison
    agents = comparison.agents
    blocks: list = []
    if agents:
        # each row under the agent's name in this report (the figures' and the table below's), not its run's
        named = [a.run.model_copy(update={"metrics": {**a.run.metrics, "name": a.label}}) for a in agents]
        blocks.append(Table(comparison_rows(named)))
        blocks += [Text(w[0].upper() + w[1:] + ".", warning=True) for w in report_warnings(named)]
        rows = []
        for agent in agents:
            first, k, at_k = plots.pass_at_k_intervals(agent)
            samples = agent.run.counts.get("samples", 1)
            problems = agent.run.counts.get("problems", "–")
            rows.append(
                [agent.label, agent.kind, str(problems), str(samples), first.text(), at_k.text(), str(k)]
            )
        header = ["agent", "kind", "problems", "samples", "pass@1 [95% CI]", "pass@k [95% CI]", "k"]
        blocks.append(Table(Rows(header, rows, ["left", "left", *(["right"] * 5)])))
        blocks.append(
            Figure(
                "pass@1 and pass@k per agent on the held-out split", plots.table1_bars(agents, colours or {})
            )
        )
    else:
        blocks.append(Text("Nothing was evaluated on the held-out split.", missing=True))
    if comparison.missing:
        blocks.append(Text("Not in the comparison:", missing=True))
        blocks.append(Bullets(comparison.missing))
    blocks.append(
        Text(
            "What the numbers mean: every agent — the base model, each post-training stage's checkpoint "
            "and the season's admitted miner files — runs on the corpus' held-out (eval) problems, which no "
            "stage trained on. pass@1 is the mean per-sample success on those problems; pass@k is the "
            "unbiased estimator of the chance that at least one of k samples per problem succeeds "
            "(1 − C(n−c, k)/C(n, k), averaged over problems). Brackets are 95% percentile bootstrap "
            "intervals (ASR: over episodes; pass@1 and pass@k: over problems); a bracket is left out where "
            "the run drew no bootstrap."
        )
    )
    parameters = data.training.random_base_parameters
    if data.training.learn is not None:
        blocks.append(Text(learned_model_text(data.training.learn), missing=True))
    elif parameters is not None:
        blocks.append(
            Text(
                f"What this model can and cannot do: the base is a random-weight Qwen3 of {parameters:,} "
                "parameters made on the spot (no pretrained weights are downloaded here), and each stage "
                "trains it for a few steps. It is expected to solve nothing and to place last in the final "
                "race: this report shows that every stage runs and hands its checkpoint on, not that "
                "training teaches a model to shop. The learning proof is `shoparena train proof` "
                "(docs/training.md): a from-scratch model trained on a concise teacher's rows, evaluated "
                "held-out with 95% intervals.",
                missing=True,
            )
        )
    return Section("comparison", "4. Held-out comparison (Table 1 shape)", blocks)


def _share(bucket: dict | None) -> str:
    if not bucket:
        return "not evaluated"
    low, high = bucket.get("ci95", [0, 0])
    return (
        f"{bucket['success']}/{bucket['n']} = {100 * bucket['rate']:.1f}% "
        f"(95% interval {100 * low:.1f}–{100 * high:.1f}%)"
    )


def learned_model_text(learn: dict) -> str:
    """What the model the learning proof's recipe trained can and cannot do, from its own numbers."""
    model, teacher, training = learn.get("model", {}), learn.get("teacher", {}), learn.get("training", {})
    heldout = learn.get("heldout", {})
    trained = heldout.get("full-sft", {})
    base = heldout.get("base", {})
    taught = (teacher.get("success") or {}).get("product") or {}
    product = trained.get("product")
    solves = bool(product and product.get("success"))
    others = ", ".join(
        f"{bucket} {_share(trained.get(bucket))}" for bucket in ("shop", "voucher") if bucket in trained
    )
    text = (
        f"What this model can and cannot do: it is a Qwen3 of {model.get('parameters', 0):,} parameters made "
        "from scratch here (no pretrained weights), with a tokenizer trained on its own rows, every weight "
        f"trained for {training.get('seconds', 0) / 60:.1f} minutes ({training.get('steps', 0)} steps, "
        f"{training.get('epochs', 0):.2f} epochs, final loss {training.get('final_loss') or 0:.3f}) on "
        f"{teacher.get('rows', 0):,} successful episodes of the concise teacher (reference:agentic "
        f"style=concise, {learn.get('profile')} tools), which solved {_share(taught)} of its generated "
        f"product problems. On held-out product problems it solves {_share(product)}, against "
        f"{_share(base.get('product'))} for the same model untrained. "
    )
    if solves:
        text += (
            "What it can do is imitate the teacher on product tasks (the learning proof's episodes at this "
            "size, docs/benchmarks.md: search with the request's own words and its price and service "
            "filters, recommend the first hit, terminate), so it is at best as good as that policy, whose "
            "first hit is often not the product asked for. "
        )
    else:
        text += (
            "At this budget it solves no held-out product problem: it has learned the teacher's format "
            "at best, not to copy the query and the ids (docs/benchmarks.md: the learning proof reached "
            "33% after 40 minutes of training on an idle 2-core CPU). "
        )
    text += (
        "What it cannot do: shop and voucher tasks, which it never saw a row of"
        + (f" ({others})" if others else "")
        + ", and anything that needs checking a candidate against the request. The final race mixes "
        "product, shop and voucher problems, so its race score is bounded by the share of product problems."
    )
    return text


def final_section(data: LoopData, colours: dict[str, str] | None = None) -> Section:
    final, placement = data.final, data.placement
    path = data.layout.final_season_file
    if final is None or placement is None:
        return Section("final", "5. The final race", [_not_run(path, data.layout.final_dir)])
    blocks: list = [Text(f"The distilled agent ({DISTILLED_MINER}) {placement.text()}.")]
    if any(p.get("miner") == UNTRAINED_MINER for p in final.participants):
        baseline = distilled_placement(final, UNTRAINED_MINER)
        blocks.append(
            Text(
                f"The same model untrained ({UNTRAINED_MINER}, the random baseline, with the same miner "
                f"file) {baseline.text()}."
            )
        )
    race = final.races[-1] if final.races else None
    distilled = {str(p.get("hotkey")) for p in final.participants if p.get("miner") == DISTILLED_MINER}
    if race is None or not race.results:
        if race is None:
            why = "the file has no race"
        else:
            cancelled = f": {race.cancel_reason}" if race.cancel_reason else ""
            why = f"race {race.race_id} has no results ({race.state}{cancelled})"
        blocks.append(Text(f"No standings: {why}.", missing=True))
    else:
        rows, highlight = [], set()
        for rank, result in enumerate(race.results, 1):
            name = racer_name(final, result.hotkey, result.submission_id)
            if result.hotkey in distilled:
                highlight.add(rank - 1)
                name += " ★"
            rows.append([
                str(rank), name, "–" if result.uid is None else str(result.uid), _num(result.score),
                _num(result.success_rate), _num(result.judge_coefficient),
            ])  # fmt: skip
        header = ["rank", "racer", "uid", "race score", "success rate", "judge coeff"]
        blocks.append(
            Table(Rows(header, rows, ["right", "left", "right", "right", "right", "right"]), highlight)
        )
        winner = racer_name(final, race.winner, race.winner_submission_id) if race.winner else "nobody"
        blocks.append(
            Text(
                f"Race {race.race_id} ({race.state}): crown after the race: {winner}"
                + (" (promoted)." if race.promoted else ".")
            )
        )
        blocks.append(
            Figure(
                "Final race standings (distilled agent outlined)",
                plots.final_standings(final, distilled, colours or {}),
            )
        )
    blocks.append(
        Text(
            "What the numbers mean: the distilled checkpoint enters the same arena as a miner file that "
            "calls the inference proxy; it must pass admission and qualifying "
            f"(threshold {final.config.qualify_threshold:g}) like any miner, then races the season's agents "
            "on the race's problems. Its rank is among the racers of that race."
        )
    )
    return Section("final", "5. The final race", blocks)


def summary(data: LoopData) -> list[str]:
    items = []
    season = data.season
    items.append(
        f"Season: {len(season.races)} race(s), {sum(r.promoted for r in season.races)} promotion(s)"
        if season
        else "Season: did not run"
    )
    counts = data.funnel.counts
    items.append(
        f"Corpus: {counts['inputs']:,} inputs → {data.funnel.kept:,} kept (train {counts['train']:,}, eval "
        f"{counts['eval']:,})"
        if counts
        else "Corpus: not built"
    )
    stages = data.training.stages
    finished = [s.name for s in stages if s.status == "finished"]
    items.append(
        f"Training: {len(finished)} of {len(stages)} stage(s) finished ({', '.join(finished) or 'none'})"
        if data.training.ran
        else "Training: did not run"
    )
    agents = data.comparison.agents
    if agents:
        best = max(agents, key=lambda a: plots.pass_at_k_of(a)[0] or 0.0)
        top = plots.pass_at_k_of(best)[0]
        items.append(
            f"Held-out: {len(agents)} agent(s) evaluated; "
            + (f"best pass@1 {_num(top)} ({best.label})" if top else "none solved a held-out problem")
        )
    else:
        items.append("Held-out: nothing evaluated")
    items.append(
        f"Distilled agent: {data.placement.text()}"
        if data.placement
        else "Distilled agent: the final race did not run"
    )
    parameters = data.training.random_base_parameters
    if parameters is not None:
        items.append(
            f"Model: a random-weight Qwen3 of {parameters:,} parameters made on the spot and trained for a "
            "few steps per stage. It cannot shop: expect it to solve nothing and to place last. This report "
            "shows that every stage runs and hands its checkpoint on, not that training teaches a model "
            "(that is `shoparena train proof`)."
        )
    return items


def sections(data: LoopData) -> list[Section]:
    colours = agent_colours(data)  # once: an agent has one colour in every figure
    return [
        season_section(data, colours),
        funnel_section(data),
        training_section(data),
        comparison_section(data, colours),
        final_section(data, colours),
    ]


# -- rendering -------------------------------------------------------------------------------------------------
def _markdown_block(block) -> str:
    if isinstance(block, Text):
        if block.warning:
            return f"> **Warning:** {block.text}\n"
        return f"_{block.text}_\n" if block.missing else f"{block.text}\n"
    if isinstance(block, Table):
        return block.rows.markdown()
    if isinstance(block, Bullets):
        return "".join(f"- {item}\n" for item in block.items)
    if block.svg is None:
        return ""
    return f"_Figure in report.html: {block.caption}._\n"


@dataclass
class Report:
    """The whole report, built once (figures included) and rendered as Markdown and HTML."""

    title: str
    out: Path
    notes: list[str]
    summary: list[str]
    sections: list[Section]


def build_report(data: LoopData, title: str = TITLE, notes: list[str] | None = None) -> Report:
    return Report(title, data.layout.out, list(notes or []), summary(data), sections(data))


def loop_report_markdown(report: Report) -> str:
    title, notes = report.title, report.notes
    parts = [f"# {title}\n", f"Loop directory: `{report.out}`\n"]
    if notes:
        parts.append("".join(f"- {note}\n" for note in notes))
    parts.append("## Summary\n\n" + "".join(f"- {item}\n" for item in report.summary))
    for section in report.sections:
        parts.append(f"## {section.title}\n")
        parts += [text for text in map(_markdown_block, section.blocks) if text]
    return "\n".join(parts)


def _html_block(block) -> str:
    if isinstance(block, Text):
        if block.warning:
            return f'<p class="warning"><strong>Warning:</strong> {html.escape(block.text)}</p>'
        return f"<p{' class=missing' if block.missing else ''}>{html.escape(block.text)}</p>"
    if isinstance(block, Table):
        head, body = html_table(block.rows).split("<tbody>", 1)
        rows = body.split("<tr>")[1:]  # cells are escaped: "<tr>" only opens a row
        marks = ["<tr class='highlight'>" if i in block.highlight else "<tr>" for i in range(len(rows))]
        return head + "<tbody>" + "".join(mark + row for mark, row in zip(marks, rows, strict=True))
    if isinstance(block, Bullets):
        return "<ul>" + "".join(f"<li>{html.escape(item)}</li>" for item in block.items) + "</ul>"
    if block.svg is None:
        return f"<p class='note'>No figure: nothing to plot for “{html.escape(block.caption)}”.</p>"
    return f"<figure>{block.svg}<figcaption>{html.escape(block.caption)}</figcaption></figure>"


def loop_report_html(report: Report) -> str:
    title, notes = report.title, report.notes
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{STYLE}{EXTRA_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p class='note'>Loop directory: <code>{html.escape(str(report.out))}</code></p>",
    ]
    if notes:
        parts.append("<ul class='note'>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    parts.append(
        "<h2>Summary</h2><ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in report.summary) + "</ul>"
    )
    for section in report.sections:
        parts.append(f"<section id='{section.anchor}'><h2>{html.escape(section.title)}</h2>")
        figures = [b for b in section.blocks if isinstance(b, Figure) and b.svg is not None]
        for block in section.blocks:
            if isinstance(block, Figure) and block.svg is not None:
                if block is figures[0]:
                    parts.append(
                        "<div class='figures'>" + "".join(_html_block(f) for f in figures) + "</div>"
                    )
                continue
            parts.append(_html_block(block))
        parts.append("</section>")
    parts.append("</body></html>\n")
    return "".join(parts)


def write_loop_report(
    layout: LoopLayout, *, title: str = TITLE, notes: list[str] | None = None
) -> tuple[Path, Path]:
    """Read the loop directory's files and write `report.md` and `report.html` beside them.

    A stage whose files are missing is reported as not run; a malformed file raises `LoopReportError`."""
    report = build_report(read_loop(layout), title, notes)
    layout.out.mkdir(parents=True, exist_ok=True)
    layout.report_md.write_text(loop_report_markdown(report), encoding="utf-8")
    layout.report_html.write_text(loop_report_html(report), encoding="utf-8")
    return layout.report_md, layout.report_html
