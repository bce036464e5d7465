"""`shoparena eval` (run an agent over a suite into a run directory) and `shoparena report` (compare runs)."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from shoparena.cli.common import console, err_console, fail

MODEL_KINDS = ("openai", "hf")


def parse_option(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` with VALUE read as JSON when it parses (numbers, true, lists), else as a string."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"--option {text!r}: expected KEY=VALUE, e.g. --option max_turns=20")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip().replace("-", "_"), value


def agent_options_from_flags(
    spec: str,
    base_url: str | None,
    api_key: str | None,
    temperature: float | None,
    max_tokens: int | None,
    timeout: float | None,
    extra: list[str],
) -> dict[str, Any]:
    """The agent factory's options from the generic flags, each mapped to what that kind calls it."""
    kind = spec.partition(":")[0]
    options: dict[str, Any] = {}
    for flag, value in (("--base-url", base_url), ("--api-key", api_key)):
        if value is not None and kind != "openai":
            raise ValueError(f"{flag} applies to openai:MODEL agents only, not {spec!r}")
    if base_url is not None:
        options["base_url"] = base_url
    if api_key is not None:
        options["api_key"] = api_key
    for flag, value in (("--temperature", temperature), ("--max-tokens", max_tokens)):
        if value is not None and kind not in MODEL_KINDS:
            raise ValueError(f"{flag} applies to model agents (openai:, hf:) only, not {spec!r}")
    if temperature is not None:
        options["temperature"] = temperature
    if max_tokens is not None:
        options["max_new_tokens" if kind == "hf" else "max_tokens"] = max_tokens
    if kind == "file" and timeout is not None:
        options["timeout_s"] = timeout  # the miner process is killed by its own runner at the deadline
    for item in extra:
        key, value = parse_option(item)
        options[key] = value
    return options


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


def register(app: typer.Typer) -> None:
    @app.command("eval")
    def eval_command(
        catalog: Annotated[Path, typer.Option("--catalog", help="Catalogue directory the harness searches.")],
        problems: Annotated[
            Path, typer.Option("--problems", help="Problems: ShoppingBench JSONL or an arena JSON list.")
        ],
        agent: Annotated[
            str,
            typer.Option(
                "--agent",
                help="openai:MODEL, hf:PATH, file:MINER.py, reference:agentic or reference:pipeline.",
            ),
        ],
        out: Annotated[Path, typer.Option("--out", help="Run directory (re-running resumes it).")],
        samples: Annotated[int, typer.Option(help="Samples per problem (pass@k for k ≤ samples).")] = 1,
        workers: Annotated[int, typer.Option(help="Parallel workers (each builds the agent once).")] = 1,
        executor: Annotated[
            str, typer.Option(help="process (local pool), ray (cluster) or inline.")
        ] = "process",
        profile: Annotated[str, typer.Option(help="Tool profile: upstream4, oro7 or full.")] = "oro7",
        protocol: Annotated[
            str | None,
            typer.Option(
                help="Model protocol: openai, upstream (or tags), qwen3 (or qwen); default: the agent's."
            ),
        ] = None,
        step_cap: Annotated[
            int | None, typer.Option(help="Steps per episode (default: the profile's).")
        ] = None,
        mode: Annotated[
            str, typer.Option(help="Scoring: upstream (ShoppingBench) or strict (the arena).")
        ] = "upstream",
        similarity: Annotated[str, typer.Option(help="Title similarity: minilm or lexical.")] = "minilm",
        timeout: Annotated[
            float | None, typer.Option(help="Seconds per episode; past it the episode fails as a timeout.")
        ] = None,
        limit: Annotated[int | None, typer.Option(help="Only the first N problems of the file.")] = None,
        base_url: Annotated[str | None, typer.Option(help="openai: endpoint (or OPENAI_BASE_URL).")] = None,
        api_key: Annotated[
            str | None, typer.Option(help="openai: key (or OPENAI_API_KEY); never recorded.")
        ] = None,
        temperature: Annotated[float | None, typer.Option(help="Model sampling temperature.")] = None,
        max_tokens: Annotated[int | None, typer.Option(help="Model tokens per turn.")] = None,
        option: Annotated[
            list[str] | None, typer.Option("--option", help="Any agent option as KEY=VALUE (repeatable).")
        ] = None,
        name: Annotated[str | None, typer.Option(help="Variant name in reports (default: the spec).")] = None,
        note: Annotated[
            list[str] | None, typer.Option("--note", help="A note for the report (repeatable).")
        ] = None,
        bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples for the intervals.")] = 1000,
        seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
        quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar.")] = False,
        judge: Annotated[
            str | None,
            typer.Option(
                help="Judge every episode as it finishes: offline (rules, no model) or openai:MODEL."
            ),
        ] = None,
        judge_base_url: Annotated[
            str | None, typer.Option(help="openai judge: endpoint (or OPENAI_BASE_URL).")
        ] = None,
        judge_api_key: Annotated[
            str | None, typer.Option(help="openai judge: key (or OPENAI_API_KEY).")
        ] = None,
        judge_fallback: Annotated[
            str | None, typer.Option(help="openai judge: fallback models, comma-separated, tried in order.")
        ] = None,
    ) -> None:
        """Evaluate an agent: trajectories.jsonl, metrics.json, report.md and report.html in --out.

        Example:
          shoparena eval --catalog cat/ --problems suite.jsonl --agent reference:pipeline --out runs/pipe
        """
        from shoparena.agents.executors import RunnerError
        from shoparena.agents.runner import run_eval
        from shoparena.report import comparison_rows, load_run, write_run_reports

        if not problems.is_file():
            raise fail(f"--problems {problems} is not a file")
        if not catalog.is_dir():
            raise fail(f"--catalog {catalog} is not a directory")
        try:
            options = agent_options_from_flags(
                agent, base_url, api_key, temperature, max_tokens, timeout, option or []
            )
        except ValueError as exc:
            raise fail(str(exc)) from exc
        judge_fn = None
        if judge is not None:
            from shoparena.judge import JudgeSpecError, make_judge

            judge_options = {}
            if judge.startswith("openai:"):
                judge_options = {
                    k: v
                    for k, v in (
                        ("base_url", judge_base_url),
                        ("api_key", judge_api_key),
                        ("fallback", judge_fallback),
                    )
                    if v is not None
                }
            try:
                judge_fn = make_judge(judge, **judge_options)
            except (JudgeSpecError, ValueError) as exc:
                raise fail(str(exc)) from exc
        try:
            with live_progress(not quiet) as progress:
                result = run_eval(
                    catalog,
                    problems,
                    agent,
                    options,
                    out,
                    samples=samples,
                    workers=workers,
                    executor=executor,
                    profile=profile,
                    protocol=protocol,
                    step_cap=step_cap,
                    mode=mode,  # type: ignore[arg-type]
                    similarity=similarity,
                    episode_timeout_s=timeout,
                    progress=progress,
                    limit=limit,
                    name=name,
                    notes=note or (),
                    n_bootstrap=bootstrap,
                    seed=seed,
                    judge=judge_fn,
                )
        except (RunnerError, ValueError) as exc:
            raise fail(str(exc)) from exc
        except KeyboardInterrupt:
            err_console.print(
                f"interrupted: finished episodes are kept in {out}; run the same command to resume"
            )
            raise typer.Exit(130) from None
        finally:
            if judge_fn is not None:
                judge_fn.close()
        if result.dropped_partial_line:
            err_console.print("[yellow]note:[/] dropped a line cut short by an interrupted run (re-ran it)")
        stats = getattr(judge_fn, "stats", None)
        if stats is not None and getattr(stats, "failed", False):
            err_console.print("[red]the judge failed on most episodes (or its circuit breaker opened)[/]")
        md, html = write_run_reports(out)
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
        console.print(
            f"{result.episodes_run} episode(s) run, {result.episodes_resumed} resumed · "
            f"wrote {out / 'trajectories.jsonl'}, {out / 'metrics.json'}, {md}, {html}"
        )

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
        from shoparena.report import ReportError, comparison_rows, load_run, write_comparison

        try:
            views = [load_run(path) for path in runs]
        except ReportError as exc:
            raise fail(str(exc)) from exc
        console.print(comparison_rows(views, ci=not no_ci).rich(title="Eval runs"))
        settings = {view.scoring_setting() for view in views}
        if len(settings) > 1:
            err_console.print(
                "[yellow]note:[/] runs were scored under different settings and are not directly "
                f"comparable: {'; '.join(sorted(settings))}"
            )
        for path in write_comparison(views, out, html):
            console.print(f"wrote {path}")
