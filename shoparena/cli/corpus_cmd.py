"""`shoparena corpus build`: trajectories (run dirs, JSONL, JSON) → a TRL-ready, leak-guarded corpus."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shoparena.cli import corpus_rewrite_cmd
from shoparena.cli.common import console, err_console, fail, print_json, progress_bar
from shoparena.cli.model_options import command_from_models, model_values, validation_message
from shoparena.corpus.config import CorpusConfig
from shoparena.corpus.pipeline import ConservationError, build_corpus, default_workers
from shoparena.corpus.sources import SourceError, resolve_inputs
from shoparena.corpus.split import LeakError
from shoparena.corpus.tokens import TokenizerError
from shoparena.records.options import CliFlag, fields_of

BUILD_HELP = """Normalise → quality/format gates → axis split → rank per problem → leak-guarded split → export.

Writes train/eval JSONL (+ Parquet), axis_b.jsonl, rejects.jsonl, manifest.json and report.md into
--out, which must be empty or new (--force replaces an earlier corpus there, once the new one is
complete).

Examples:
  shoparena corpus build -i runs/agentic -o corpus/ --catalog cat/
  shoparena corpus build -i run/ -o corpus/ --never-touch suite.jsonl
  shoparena corpus build -i a/ -i b/ -o corpus/ --eval-size 50 --force
"""


class CorpusCommandOptions(BaseModel):
    """The command's own option, beside the build's (`CorpusConfig`)."""

    model_config = ConfigDict(extra="forbid")

    json_output: Annotated[bool, CliFlag(flag="--json")] = Field(
        False, description="Print the manifest as JSON."
    )


# Bounds are checked by `CorpusConfig`, not click: click would print each range in the option table,
# which then leaves the help text a column too narrow to read at 80 columns. The command uses the
# machine's cores (the library one process); it always writes report.md.
BUILD_OPTIONS = fields_of(
    CorpusConfig,
    *(name for name in CorpusConfig.model_fields if name != "report"),
    name="CorpusBuildOptions",
    changes={"workers": {"default": default_workers()}},
)


def build_command(**values: Any) -> None:
    try:
        config = CorpusConfig(**model_values(BUILD_OPTIONS, values))
    except ValidationError as exc:
        raise fail(validation_message(CorpusConfig, exc)) from None
    json_output = bool(values["json_output"])
    try:
        resolve_inputs(config.inputs)  # a missing input fails before the progress bar is drawn
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
    console.print(f"wrote {config.out}/ (report.md, manifest.json) in {result.timing()}")


def register(app: typer.Typer) -> None:
    corpus = typer.Typer(help="Turn trajectories into a training corpus.", no_args_is_help=True)
    app.add_typer(corpus, name="corpus")
    corpus_rewrite_cmd.register(corpus)
    command_from_models(corpus, "build", (BUILD_OPTIONS, CorpusCommandOptions), build_command, BUILD_HELP)
