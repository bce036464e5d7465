"""`shoparena train pipeline`: the five stages in order, resumable, then Table 1 (`shoparena.train.pipeline`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shoparena.cli.common import fail, say
from shoparena.train.reporting import REPORT_TO_HELP, REPORT_TO_METAVAR, ReportTo

PIPELINE_HELP = """Run the post-training stages a config names (sft → rs → teacher → kto → grpo, any subset in
order), each stage's checkpoint the next one's model, then evaluate the base model and every checkpoint
on the corpus' held-out problems and write Table 1 (report.md, report.html) into --out.

Re-running with the same --out resumes: finished stages whose resolved config is unchanged are skipped;
an interrupted stage is set aside and run again.

Example (CPU, minutes): shoparena train pipeline --config configs/tiny/pipeline.yaml --out runs/pipeline
"""


def pipeline_command(
    config: Annotated[Path, typer.Option(help="Pipeline YAML/JSON (see configs/tiny/pipeline.yaml).")],
    out: Annotated[Path, typer.Option(help="Output directory (re-running resumes it).")],
    corpus: Annotated[
        Path | None, typer.Option(help="Corpus directory (`corpus build`); overrides the config.")
    ] = None,
    catalog: Annotated[Path | None, typer.Option(help="Catalogue directory; overrides the config.")] = None,
    problems: Annotated[
        Path | None, typer.Option(help="Problems with rewards (training + held-out); overrides the config.")
    ] = None,
    model: Annotated[
        Path | None, typer.Option(help="Base checkpoint (default: the config's, else a fresh tiny model).")
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option(help="Cap every stage at this many optimiser steps (smoke runs).")
    ] = None,
    report_to: Annotated[
        ReportTo | None, typer.Option(help=REPORT_TO_HELP, metavar=REPORT_TO_METAVAR)
    ] = None,
) -> None:
    from shoparena.records.options import ConfigError
    from shoparena.train.pipeline import PipelineConfig, run_pipeline

    try:
        given = {"corpus": corpus, "catalog": catalog, "problems": problems, "model": model}
        loaded = PipelineConfig.from_file(
            config,
            **{k: str(v.resolve()) for k, v in given.items() if v is not None},
            max_steps=max_steps,
            report_to=report_to,
        )
        result = run_pipeline(loaded, out, say)
    except (ConfigError, ValueError, FileNotFoundError) as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        raise fail(f"pipeline interrupted; re-run the same command to resume from {out}", 130) from None
    say(f"pipeline: {len(result.stages)} stage(s) in {result.seconds:.0f} s → {result.out}")
    if result.report_md is not None:
        say(f"  Table 1: {result.report_md}")


def register(group: typer.Typer) -> None:
    group.command("pipeline", help=PIPELINE_HELP)(pipeline_command)
