"""`shoparena eval` (run an agent over a suite into a run directory) and `shoparena report` (compare runs)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from shoparena.cli.common import console, err_console, fail
from shoparena.cli.model_options import command_from_models, model_values, validation_message
from shoparena.eval.config import EvalConfig


class EvalCommandOptions(BaseModel):
    """The command's own options, beside the run's (`EvalConfig`): how it shows progress and which
    judge it builds for the runner (which takes a judge as a callable: agents sit below the judge)."""

    model_config = ConfigDict(extra="forbid")

    quiet: bool = Field(False, description="No progress bar.")
    judge: str | None = Field(
        None, description="Judge every episode as it finishes: offline (rules, no model) or openai:MODEL."
    )
    judge_base_url: str | None = Field(None, description="openai judge: endpoint (or OPENAI_BASE_URL).")
    judge_api_key: SecretStr | None = Field(None, description="openai judge: key (or OPENAI_API_KEY).")
    judge_fallback: str | None = Field(
        None, description="openai judge: fallback models, comma-separated, tried in order."
    )

    def judge_options(self) -> dict[str, Any]:
        if self.judge is None or not self.judge.startswith("openai:"):
            return {}
        options = {
            "base_url": self.judge_base_url,
            "api_key": self.judge_api_key.get_secret_value() if self.judge_api_key else None,
            "fallback": self.judge_fallback,
        }
        return {key: value for key, value in options.items() if value is not None}


@contextmanager
def live_progress(enabled: bool):
    """A progress bar with the live success rate; yields the runner's progress callback."""
    if not enabled:
        yield None
        return
    progress = Progress(
        TextColumn("[bold]eval"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("ASR [bold]{task.fields[asr]}[/]"),
        TextColumn("[red]{task.fields[errors]}[/]"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
    )
    with progress:
        task = progress.add_task("eval", total=None, asr="–", errors="")

        def update(state) -> None:
            asr = "–" if state.asr is None else f"{state.asr:.3f}"
            errors = f"{state.errors} errors ({state.timeouts} timeouts)" if state.errors else ""
            progress.update(task, total=state.total, completed=state.done, asr=asr, errors=errors)

        yield update


EVAL_HELP = """Evaluate an agent: trajectories.jsonl, metrics.json, report.md and report.html in --out.

Re-running the same command resumes the run; with --retry-errors it also re-runs the episodes that
failed with a model-endpoint error or a timeout. Exits 1 when every episode ended in an error.

Example:
  shoparena eval --catalog cat/ --problems suite.jsonl --agent reference:pipeline --out runs/pipe
"""


def error_kinds(counts: dict[str, Any]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(counts.get("errors_by_kind", {}).items()))


def all_errored(metrics: dict[str, Any], out: Path) -> str | None:
    """The message for a run whose every episode ended in an error: no result (an unreachable
    endpoint is not an ASR of 0), so the command fails; None for any other run."""
    counts = metrics["counts"]
    if not counts["episodes"] or counts["errors"] < counts["episodes"]:
        return None
    by_kind = counts["errors_by_kind"]
    example = metrics.get("error_examples", {}).get(max(by_kind, key=by_kind.get), "")
    message = (
        f"every episode of the run ({counts['episodes']}) ended in an error ({error_kinds(counts)}), "
        f"so it measured nothing: {example}"
    )
    if counts.get("retryable_errors"):
        return message + " — fix the cause, then run the same command with --retry-errors to re-run them"
    return message + f" — the records are in {out / 'trajectories.jsonl'}"


def eval_command(**values: Any) -> None:
    from shoparena.agents.base import RunnerError
    from shoparena.eval.runner import run_eval
    from shoparena.report import comparison_rows, load_run, write_run_reports

    try:
        config = EvalConfig(**model_values(EvalConfig, values))
    except ValidationError as exc:
        raise fail(validation_message(EvalConfig, exc)) from None
    command = EvalCommandOptions(**model_values(EvalCommandOptions, values))
    out = config.out
    judge_fn = None
    if command.judge is not None:
        from shoparena.judge import JudgeSpecError, make_judge

        try:
            judge_fn = make_judge(command.judge, **command.judge_options())
        except (JudgeSpecError, ValueError) as exc:
            raise fail(str(exc)) from exc
    try:
        with live_progress(not command.quiet) as progress:
            result = run_eval(config, judge=judge_fn, progress=progress)
    except (RunnerError, ValueError) as exc:
        raise fail(str(exc)) from exc
    except KeyboardInterrupt:
        err_console.print(f"interrupted: finished episodes are kept in {out}; run the same command to resume")
        raise typer.Exit(130) from None
    finally:
        if judge_fn is not None:
            judge_fn.close()
    for warning in result.warnings:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
    if result.dropped_partial_line:
        err_console.print("[yellow]note:[/] dropped a line cut short by an interrupted run (re-ran it)")
    stats = getattr(judge_fn, "stats", None)
    if stats is not None and getattr(stats, "failed", False):
        err_console.print("[red]the judge failed on most episodes (or its circuit breaker opened)[/]")
    md, html = write_run_reports(out)
    message = all_errored(result.metrics, out)
    if message is not None:
        raise fail(message, code=1)
    run = load_run(out)
    console.print(comparison_rows([run]).rich(title=f"{run.name} · {run.setting()}"))
    if run.judge:
        judge_info = run.judge
        console.print(
            f"judge: q = {judge_info['q']:.3f} → coeff {judge_info['coeff']:.3f}; "
            + ", ".join(
                f"{level}: {n}" for level, n in (judge_info.get("quality_distribution") or {}).items()
            )
        )
    retried = f" ({result.episodes_retried} re-run after an error)" if result.episodes_retried else ""
    console.print(
        f"{result.episodes_run} episode(s) run{retried}, {result.episodes_resumed} resumed · "
        f"wrote {out / 'trajectories.jsonl'}, {out / 'metrics.json'}, {md}, {html}"
    )
    console.print(f"episodes one by one: shoparena view {out} \\[PROBLEM]", soft_wrap=True, highlight=False)
    retryable = result.metrics["counts"].get("retryable_errors", 0)
    if retryable:
        err_console.print(
            f"[yellow]note:[/] {retryable} episode(s) failed with a model-endpoint error or a timeout "
            "and count as failures; run the same command with --retry-errors to re-run them"
        )


def register(app: typer.Typer) -> None:
    command_from_models(app, "eval", (EvalConfig, EvalCommandOptions), eval_command, EVAL_HELP)

    @app.command("report")
    def report_command(
        runs: Annotated[list[Path], typer.Argument(help="Run directories written by `shoparena eval`.")],
        out: Annotated[
            Path | None, typer.Option("--out", help="Write the comparison as Markdown here.")
        ] = None,
        html: Annotated[
            Path | None, typer.Option("--html", help="Write an HTML page with plots here.")
        ] = None,
        no_ci: Annotated[bool, typer.Option("--no-ci", help="Leave the intervals out of the table.")] = False,
    ) -> None:
        """Compare runs side by side: variant × ASR with per-bucket columns and notes (the paper's Table 1).

        Example:
          shoparena report runs/agentic runs/pipeline --out table1.md --html table1.html
        """
        from rich.markup import escape

        from shoparena.report import ReportError, comparison_rows, load_run, report_warnings, write_comparison

        try:
            views = [load_run(path) for path in runs]
        except ReportError as exc:
            raise fail(str(exc)) from exc
        console.print(comparison_rows(views, ci=not no_ci).rich(title="Eval runs"))
        for warning in report_warnings(views):  # the Markdown and HTML show the same sentences
            err_console.print(f"[yellow]warning:[/] {escape(warning)}")
        for path in write_comparison(views, out, html):
            console.print(f"wrote {path}")
