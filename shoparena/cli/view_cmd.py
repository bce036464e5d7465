"""`shoparena view RUN [PROBLEM]`: a run's episodes in the terminal — the per-problem table, or one
episode turn by turn (the model `tau2 view` users expect)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.markup import escape

from shoparena.cli.common import console, fail, print_json
from shoparena.cli.model_options import command_from_models, model_values, validation_message
from shoparena.records.options import CliFlag


class ViewOptions(BaseModel):
    """What to show of which run, and how."""

    model_config = ConfigDict(extra="forbid")

    run: Annotated[Path, CliFlag(argument=True)] = Field(
        description="An eval run directory (its trajectories.jsonl) or a trajectories file."
    )
    problem: Annotated[str | None, CliFlag(argument=True, show_default=False)] = Field(
        None, description="A problem id (or a unique start of one): show that episode; without it, the table."
    )
    sample: int | None = Field(
        None, ge=0, description="Only this sample of PROBLEM \\[default: every sample]."
    )
    full: bool = Field(False, description="Call arguments and results whole, not abridged.")
    as_json: Annotated[bool, CliFlag(flag="--json")] = Field(
        False, description="Print the table's rows (or the episode) as JSON."
    )


VIEW_HELP = """Look at a run's episodes: the per-problem table, or one episode turn by turn.

Without PROBLEM: one row per episode (problem, bucket, success, rule score, the judge's gate and
quality, the constraints that failed, the error, turns). With PROBLEM: that episode — the query,
each turn's reasoning and calls (origin llm or code, results abridged), the recommendation, the
verdict per constraint, the judge's gate and cited spans, and an error with the miner's own
traceback frame. Plain text when the output is not a terminal.

Examples:
  shoparena view runs/agentic
  shoparena view runs/agentic product-30b050da
  shoparena view demo-out/loop/05-season-agents/keyword --json
"""


def view_command(**values: Any) -> None:
    from shoparena.report.episodes import (
        episode_lines,
        error_lines,
        load_episodes,
        rows_table,
        rows_text,
        summary_line,
    )
    from shoparena.report.runs import ReportError

    try:
        options = ViewOptions(**model_values(ViewOptions, values))
    except ValidationError as exc:
        raise fail(validation_message(ViewOptions, exc)) from None
    try:
        episodes = load_episodes(options.run, full=options.full)
    except ReportError as exc:
        raise fail(str(exc)) from None
    terminal = sys.stdout.isatty()
    if options.problem is None:
        rows = [view.row for view in episodes.episodes]
        if options.as_json:
            print_json(
                {"source": str(episodes.source), "episodes": [r.model_dump(mode="json") for r in rows]}
            )
        elif terminal:
            console.print(rows_table(rows, title=str(episodes.source)))
            for line in error_lines(rows):
                console.print(f"[red]{escape(line)}[/]", soft_wrap=True, highlight=False)
            console.print(summary_line(episodes.episodes), soft_wrap=True, highlight=False)
        else:
            sys.stdout.write(rows_text(rows) + "\n" + summary_line(episodes.episodes) + "\n")
        return
    chosen = episodes.find(options.problem)
    if not chosen:
        near = episodes.near(options.problem)
        hint = (
            f"; did you mean {', '.join(near)}?" if near else f"; `shoparena view {options.run}` lists them"
        )
        raise fail(f"no problem {options.problem!r} in {episodes.source}{hint}")
    if options.sample is not None:
        samples = sorted(view.row.sample for view in chosen)
        chosen = [view for view in chosen if view.row.sample == options.sample]
        if not chosen:
            raise fail(f"problem {options.problem!r} has no sample {options.sample} (it has {samples})")
    if options.as_json:
        views = [view.model_dump(mode="json") for view in chosen]
        print_json(views[0] if len(views) == 1 else views)
        return
    for index, view in enumerate(chosen):
        lines = ([""] if index else []) + episode_lines(view, markup=terminal)
        if terminal:
            for line in lines:
                console.print(line, soft_wrap=True, highlight=False)
        else:
            sys.stdout.write("\n".join(lines) + "\n")


def register(app: Any) -> None:
    command_from_models(app, "view", (ViewOptions,), view_command, VIEW_HELP)
