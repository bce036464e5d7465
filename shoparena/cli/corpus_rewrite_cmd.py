"""`shoparena corpus rewrite`: axis-B trajectories → agentic corpus rows (`corpus.rewrite`)."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from shoparena.cli.common import console, fail, print_json, progress_bar

REWRITE_HELP = """Rewrite code-driven (axis-B) trajectories into agentic rows: a model's reasoning before each
turn of calls, with the calls, their results and the final answer kept exactly.

Each rewritten row is checked against its trajectory (any change beyond the reasoning is refused, and
so is reasoning that carries tool-call or chat tags), judged like any trace (the judge reads the new
reasoning against what the verified log had shown before it), and written with `rewrite` provenance.
Feed the file to `corpus build` beside the trajectories: its gates, dedup and leak-guarded split treat
the rows like any other. Records already agentic, and records that recommend nothing, are left as they
are (counted, and in --rejects with their reason). Exit status 1 when an input line was not a record.

The `reference` rewriter is offline: it writes plain text from what the results showed (titles, ids,
prices, which candidate covers more of the request). `openai:MODEL` asks an OpenAI-compatible endpoint
($OPENAI_BASE_URL, or --base-url), giving it the trace and, with --arena-dir, the miner's code.

Examples:
  shoparena corpus rewrite -i firehose.jsonl -o rewritten.jsonl
  shoparena corpus rewrite -i runs/pipeline -o rewritten.jsonl --rejects rewrite-rejects.jsonl
  shoparena corpus rewrite -i firehose.jsonl -o rewritten.jsonl --rewriter openai:Qwen/Qwen3-32B --arena-dir arena/
  shoparena corpus build -i firehose.jsonl -i rewritten.jsonl -o corpus/
"""


def code_of(arena_dir: Path | None):
    """`sources(record)` for the rewriter: the miner's code from the arena's code store (arena records
    name it by sha256 as their agent version), or a `file:` agent's file when it is still there."""
    store = None
    if arena_dir is not None:
        from shoparena.arena.codestore import open_code_store
        from shoparena.arena.config import read_config

        store = open_code_store(read_config(arena_dir).code_store, arena_dir)

    def sources(record) -> str | None:
        agent = record.agent
        if store is not None and agent.kind == "file" and len(agent.version) == 64:
            try:
                return store.get(agent.version).decode("utf-8", "replace")
            except Exception:  # a missing or unreadable file: rewrite from the trace alone
                return None
        if agent.spec.startswith("file:"):
            path = Path(agent.spec.removeprefix("file:"))
            if path.is_file():
                return path.read_text(errors="replace")
        return None

    return sources


def register(corpus: typer.Typer) -> None:
    @corpus.command("rewrite", help=REWRITE_HELP)
    def rewrite(
        inputs: Annotated[
            list[Path],
            typer.Option(
                "--input",
                "-i",
                metavar="<path>",
                help="Trajectories: a run dir or a JSONL file (repeatable).",
            ),
        ],
        out: Annotated[Path, typer.Option("--out", "-o", help="The rewritten rows (JSONL).")],
        rewriter: Annotated[str, typer.Option(help="reference (offline) or openai:MODEL.")] = "reference",
        base_url: Annotated[
            str | None,
            typer.Option(help="The rewriter's endpoint (default $OPENAI_BASE_URL).", show_default=False),
        ] = None,
        judge: Annotated[
            str, typer.Option(help="offline, or openai:MODEL (at $OPENAI_BASE_URL).")
        ] = "offline",
        arena_dir: Annotated[
            Path | None,
            typer.Option(
                help="An arena directory: give the rewriter each miner's code (it goes to the rewriter's "
                "endpoint, embargoed code too: use a model you host).",
                show_default=False,
            ),
        ] = None,
        rejects: Annotated[
            Path | None,
            typer.Option(help="Write the records not rewritten here, with the reason.", show_default=False),
        ] = None,
        limit: Annotated[
            int | None, typer.Option(min=1, help="Stop after N rewritten rows.", show_default=False)
        ] = None,
        workers: Annotated[
            int, typer.Option(min=1, help="Processes, each with its own rewriter and judge.")
        ] = 1,
        force: Annotated[bool, typer.Option("--force", help="Replace --out when it exists.")] = False,
        json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    ) -> None:
        from functools import partial

        from shoparena.arena.errors import ArenaError
        from shoparena.corpus.rewrite import rewrite_file
        from shoparena.corpus.rewriters import make_engines
        from shoparena.corpus.sources import SourceError, resolve_inputs
        from shoparena.judge import JudgeSpecError

        try:
            files = resolve_inputs(inputs)
        except SourceError as exc:
            raise fail(str(exc)) from None
        if out.exists() and not force:
            raise fail(f"{out} exists; pass --force to replace it")
        if any(out.resolve() == path.resolve() for path in files):
            raise fail(f"{out}: write the rewritten rows to a new file, not over an input")
        make = partial(make_engines, rewriter, judge, **({"base_url": base_url} if base_url else {}))
        try:
            make().close()  # a bad spec fails here, before any work, with its own message
            sources = code_of(arena_dir)
        except (ValueError, JudgeSpecError, ArenaError) as exc:
            raise fail(str(exc)) from None
        try:
            with nullcontext(None) if json_output else progress_bar("rewrite", None) as advance:
                report = rewrite_file(
                    inputs,
                    out,
                    make,
                    rejects=rejects,
                    sources=sources,
                    limit=limit,
                    workers=workers,
                    progress=advance,
                )
        except SourceError as exc:
            raise fail(str(exc), 1) from None
        if json_output:
            print_json(report.model_dump(mode="json"))
        else:
            table = Table(
                title=f"rewrite · {report.read:,} read, {report.rewritten:,} rewritten", title_justify="left"
            )
            table.add_column("outcome")
            table.add_column("records", justify="right")
            for level, n in sorted(report.qualities.items(), reverse=True):
                table.add_row(f"rewritten, judge quality {level}", f"{n:,}")
            for reason, n in sorted(report.rejected.items(), key=lambda kv: -kv[1]):
                table.add_row(f"not rewritten: {reason}", f"{n:,}")
            console.print(table)
            console.print(f"wrote {out}" + (f" and {rejects}" if rejects else ""))
        if report.skipped_lines:
            raise typer.Exit(1)
