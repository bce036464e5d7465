"""`shoparena judge`: grade every trajectory of a file with the offline or an LLM judge."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.table import Table

from shoparena.cli.common import console, err_console, fail, print_json, progress_bar
from shoparena.judge import JudgeFileReport, JudgeSpecError, judge_file, make_judge
from shoparena.records.verdict import QUALITY_WHEN_FAILED


def render(report: JudgeFileReport) -> Table:
    summary = report.summary
    table = Table(title=f"judge · {summary.judged} judged, {summary.unjudged} unjudged")
    table.add_column("first failing gate")
    table.add_column("quality", justify="right")
    table.add_column("records", justify="right")
    for gate, count in summary.gate_distribution.items():
        table.add_row(gate, f"{QUALITY_WHEN_FAILED[gate]:.1f}", str(count))
    return table


def _show_rejects(report, input: Path, rejects: Path | None) -> None:
    """Each skipped line on stderr, and in --rejects FILE when given."""
    for reject in report.rejects:
        err_console.print(f"[yellow]skipped line {reject.line}:[/] {reject.error}", soft_wrap=True)
    if rejects is not None:
        rejects.write_bytes(
            b"".join(
                orjson.dumps({"file": str(input), "line": r.line, "reason": r.error}) + b"\n"
                for r in report.rejects
            )
        )


def register(app: typer.Typer) -> None:
    @app.command("judge")
    def judge(
        input: Annotated[Path, typer.Option("--input", "-i", help="Trajectories JSONL (eval output).")],
        out: Annotated[Path, typer.Option("--out", "-o", help="Where the judged records are written.")],
        judge: Annotated[
            str,
            typer.Option(
                "--judge",
                help="offline, openai:MODEL for an OpenAI-compatible endpoint, or panel:SPEC,SPEC,… (several "
                "annotators; the lower median quality decides).",
            ),
        ] = "offline",
        quorum: Annotated[
            int | None,
            typer.Option(
                "--quorum",
                min=1,
                help="A panel's annotators that must answer \\[default: a majority].",
                show_default=False,
            ),
        ] = None,
        base_url: Annotated[
            str | None,
            typer.Option(help="Endpoint base URL (default $OPENAI_BASE_URL or api.openai.com/v1)."),
        ] = None,
        api_key: Annotated[str | None, typer.Option(help="API key (default $OPENAI_API_KEY).")] = None,
        fallback: Annotated[
            str | None, typer.Option(help="Comma-separated fallback models, tried in order.")
        ] = None,
        timeout_s: Annotated[float, typer.Option(help="Per-request timeout of the LLM judge.")] = 60.0,
        max_retries: Annotated[int, typer.Option(help="Retries per model for transport errors.")] = 2,
        json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
        rejects: Annotated[
            Path | None, typer.Option("--rejects", help="Write skipped lines here (JSONL: line, reason).")
        ] = None,
    ) -> None:
        """Add a reasoning-judge verdict to each trajectory; print the gate distribution, q and coeff.

        Lines that are not trajectory records are skipped and named (`--rejects FILE` keeps them with
        their reason); every record is written to --out, judged or not. Exit status 1 when a line was
        skipped or judging failed, 0 otherwise.

        Examples:

          shoparena judge -i runs/agentic/trajectories.jsonl -o judged.jsonl
          shoparena judge -i t.jsonl -o judged.jsonl --judge openai:gpt-4.1 --fallback gpt-4.1-mini
          shoparena judge -i t.jsonl -o judged.jsonl --judge panel:offline,openai:gpt-4.1,openai:qwen3-32b
        """
        if not input.is_file():
            raise fail(f"{input}: no such trajectories file")
        options: dict = {}
        if judge.startswith("openai:"):
            options = {
                "base_url": base_url,
                "api_key": api_key,
                "fallback": fallback,
                "timeout_s": timeout_s,
                "max_retries": max_retries,
            }
        elif judge.startswith("panel:"):
            if fallback:
                raise fail(
                    "--fallback applies to --judge openai:MODEL only (a panel's members are its fallbacks)"
                )
            options = {
                "base_url": base_url,
                "api_key": api_key,
                "timeout_s": timeout_s,
                "max_retries": max_retries,
            }
            if quorum is not None:
                options["quorum"] = quorum
        elif base_url or api_key or fallback:
            raise fail("--base-url, --api-key and --fallback apply to --judge openai:MODEL only")
        if quorum is not None and not judge.startswith("panel:"):
            raise fail("--quorum applies to --judge panel:… only")
        try:
            grader = make_judge(judge, **options)
        except (JudgeSpecError, ValueError) as exc:
            raise fail(str(exc)) from None
        with input.open("rb") as handle:
            total = sum(1 for _ in handle)
        try:
            with progress_bar("judging", total) as advance:
                report = judge_file(input, out, grader, progress=advance)
        except (OSError, ValueError) as exc:
            raise fail(str(exc)) from None
        finally:
            grader.close()
        if not report.records:
            _show_rejects(report, input, rejects)
            skipped = f" ({len(report.rejects)} line(s) skipped)" if report.rejects else " (an empty file)"
            raise fail(f"no trajectory record in {input}{skipped}; nothing written to {out}", 1)
        if json_output:
            print_json(report.model_dump(mode="json"))
        else:
            console.print(render(report))
            summary = report.summary
            if summary.q is not None:
                line = f"q = {summary.q:.3f}   coeff = {summary.coeff:.3f}"
                if summary.final_score is not None:
                    line += f"   final = success rate × coeff = {summary.final_score:.3f}"
                console.print(line)
            console.print(f"wrote {report.records} record(s) to {out}")
        _show_rejects(report, input, rejects)
        for failure in report.failures[:20]:
            err_console.print(f"[yellow]unjudged:[/] {failure}", soft_wrap=True)
        if report.failed:
            reason = "the judge's circuit breaker opened" if report.stopped_early else "over half unjudged"
            raise fail(f"judging failed: {reason} ({report.judge_failures} of {report.records} unjudged)", 1)
        if report.rejects:
            kept = f"; kept in {rejects}" if rejects is not None else "; --rejects FILE keeps them"
            raise fail(f"{len(report.rejects)} line(s) of {input} were not trajectory records{kept}", 1)
