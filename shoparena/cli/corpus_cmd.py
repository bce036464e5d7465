"""`shoparena corpus build`: trajectories (run dirs, JSONL, JSON) → a TRL-ready, leak-guarded corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from shoparena.cli import corpus_rewrite_cmd
from shoparena.cli.common import console, err_console, fail, print_json, progress_bar
from shoparena.cli.model_options import validation_message
from shoparena.corpus.gates import DEFAULT_MAX_LENGTH, DEFAULT_MIN_QUALITY
from shoparena.corpus.pipeline import ConservationError, CorpusConfig, build_corpus, default_workers
from shoparena.corpus.sources import SourceError
from shoparena.corpus.split import LeakError
from shoparena.corpus.tokens import TokenizerError

BUILD_HELP = """Normalise → quality/format gates → axis split → rank per problem → leak-guarded split → export.

Writes train/eval JSONL (+ Parquet), axis_b.jsonl, rejects.jsonl, manifest.json and report.md into
--out, which must be empty or new (--force replaces an earlier corpus there, once the new one is
complete).

Examples:
  shoparena corpus build -i runs/agentic -o corpus/ --catalog cat/
  shoparena corpus build -i run/ -o corpus/ --never-touch suite.jsonl
  shoparena corpus build -i a/ -i b/ -o corpus/ --eval-size 50 --force
"""


def register(app: typer.Typer) -> None:
    corpus = typer.Typer(help="Turn trajectories into a training corpus (SPEC §8).", no_args_is_help=True)
    app.add_typer(corpus, name="corpus")
    corpus_rewrite_cmd.register(corpus)

    # Bounds are checked by `CorpusConfig`, not click: click would print each range in the option
    # table, which then leaves the help text a column too narrow to read at 80 columns.
    @corpus.command("build", help=BUILD_HELP)
    def build(
        inputs: Annotated[
            list[Path],
            typer.Option("--input", "-i", metavar="<path>", help="Run dir, JSONL or JSON file (repeatable)."),
        ],
        out: Annotated[Path, typer.Option("--out", "-o", help="Output directory.")],
        catalog: Annotated[
            Path | None, typer.Option(help="Catalogue dir: recommended ids must resolve in it.")
        ] = None,
        min_quality: Annotated[
            float, typer.Option(help="Judge quality threshold in [0, 1]; unjudged rows fail.")
        ] = DEFAULT_MIN_QUALITY,
        require_success: Annotated[
            bool, typer.Option("--successful", help="Drop rows of failed episodes (outcome_failed).")
        ] = False,
        max_length: Annotated[int, typer.Option(help="Most tokens a row may have.")] = DEFAULT_MAX_LENGTH,
        tokenizer: Annotated[
            str | None,
            typer.Option(help="Tokenizer dir or .json (default: offline MiniLM)."),
        ] = None,
        per_problem: Annotated[int, typer.Option(help="Rows kept per problem (≥ 1).")] = 2,
        eval_size: Annotated[
            int | None, typer.Option(help="Eval rows (default 10% of kept, ≤ 1000; 0: none).")
        ] = None,
        never_touch: Annotated[
            list[Path] | None,
            typer.Option(metavar="<path>", help="Problem files kept out of every output pile."),
        ] = None,
        problems: Annotated[
            list[Path] | None,
            typer.Option(metavar="<path>", help="Problem files whose rewards name leak clusters."),
        ] = None,
        seed: Annotated[int, typer.Option(help="Seed of the eval draw.")] = 0,
        workers: Annotated[int, typer.Option(help="Processes for normalise + gates.")] = default_workers(),
        parquet: Annotated[bool, typer.Option(help="Also write train/eval Parquet.")] = True,
        force: Annotated[bool, typer.Option("--force", help="Replace an earlier corpus in --out.")] = False,
        json_output: Annotated[bool, typer.Option("--json", help="Print the manifest as JSON.")] = False,
    ) -> None:
        try:
            config = CorpusConfig(
                inputs=inputs,
                out=out,
                catalog=catalog,
                min_quality=min_quality,
                require_success=require_success,
                max_length=max_length,
                tokenizer=tokenizer,
                per_problem=per_problem,
                eval_size=eval_size,
                never_touch=never_touch or [],
                problems=problems or [],
                seed=seed,
                workers=workers,
                parquet=parquet,
                force=force,
            )
        except ValidationError as exc:
            raise fail(validation_message(CorpusConfig, exc)) from None
        try:
            if json_output:
                result = build_corpus(config)
            else:
                with progress_bar("normalise + gates", None) as advance:
                    result = build_corpus(config, progress=advance)
        except (SourceError, TokenizerError, ValueError) as exc:
            raise fail(str(exc)) from None
        except (LeakError, ConservationError) as exc:
            raise fail(str(exc), code=3) from None
        for warning in result.warnings:
            err_console.print(f"[bold yellow]warning:[/] {warning}", soft_wrap=True)
        if json_output:
            print_json(result.manifest)
            return
        c = result.counts
        console.print(
            f"inputs {c['inputs']:,} = kept {c['train'] + c['eval']:,} (train {c['train']:,}, eval {c['eval']:,})"
            f" + rejected {c['rejected']:,} + axis-B {c['axis_b']:,} + deduplicated {c['deduplicated']:,}"
            "  [green]✓ conserved[/]"
        )
        for note in result.notes:
            console.print(f"  note: {note}")
        for reason, n in sorted(result.reasons.items(), key=lambda kv: -kv[1]):
            console.print(f"  {reason:<24} {n:,}")
        console.print(f"wrote {out}/ (report.md, manifest.json) in {result.timing()}")
