"""`shoparena corpus build`: trajectories (run dirs, JSONL, JSON) → a TRL-ready, leak-guarded corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shoparena.cli.common import console, fail, print_json, progress_bar
from shoparena.corpus.gates import DEFAULT_MAX_LENGTH, DEFAULT_MIN_QUALITY
from shoparena.corpus.pipeline import ConservationError, CorpusConfig, build_corpus, default_workers
from shoparena.corpus.sources import SourceError
from shoparena.corpus.split import LeakError
from shoparena.corpus.tokens import TokenizerError


def register(app: typer.Typer) -> None:
    corpus = typer.Typer(help="Turn trajectories into a training corpus (SPEC §8).", no_args_is_help=True)
    app.add_typer(corpus, name="corpus")

    @corpus.command("build")
    def build(
        inputs: Annotated[
            list[Path],
            typer.Option("--input", "-i", help="Run dir (trajectories.jsonl), JSONL or JSON file."),
        ],
        out: Annotated[Path, typer.Option("--out", "-o", help="Output directory.")],
        catalog: Annotated[
            Path | None, typer.Option(help="Catalogue dir: recommended ids must resolve in it.")
        ] = None,
        min_quality: Annotated[
            float, typer.Option(help="Judge quality threshold; unjudged rows never pass.")
        ] = DEFAULT_MIN_QUALITY,
        max_length: Annotated[int, typer.Option(help="Most tokens a row may have.")] = DEFAULT_MAX_LENGTH,
        tokenizer: Annotated[
            str | None,
            typer.Option(
                help="Local tokenizer dir or tokenizer.json (default: the offline MiniLM WordPiece)."
            ),
        ] = None,
        per_problem: Annotated[int, typer.Option(min=1, help="Rows kept per problem.")] = 2,
        eval_size: Annotated[
            int | None, typer.Option(help="Eval rows (default 10% of kept rows, at most 1000).")
        ] = None,
        never_touch: Annotated[
            list[Path] | None, typer.Option(help="Problem/suite files that must stay out of train and eval.")
        ] = None,
        problems: Annotated[
            list[Path] | None, typer.Option(help="Problem files whose reward specs name leak clusters.")
        ] = None,
        seed: Annotated[int, typer.Option(help="Seed of the eval draw.")] = 0,
        workers: Annotated[
            int, typer.Option(min=1, help="Processes for normalise+gates.")
        ] = default_workers(),
        parquet: Annotated[bool, typer.Option(help="Also write train/eval Parquet.")] = True,
        json_output: Annotated[bool, typer.Option("--json", help="Print the manifest as JSON.")] = False,
    ) -> None:
        """Normalise → quality/format gates → axis split → rank per problem → leak-guarded split → export."""
        config = CorpusConfig(
            inputs=inputs,
            out=out,
            catalog=catalog,
            min_quality=min_quality,
            max_length=max_length,
            tokenizer=tokenizer,
            per_problem=per_problem,
            eval_size=eval_size,
            never_touch=never_touch or [],
            problems=problems or [],
            seed=seed,
            workers=workers,
            parquet=parquet,
        )
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
        if json_output:
            print_json(result.manifest)
            return
        c = result.counts
        console.print(
            f"inputs {c['inputs']:,} = kept {c['train'] + c['eval']:,} (train {c['train']:,}, eval {c['eval']:,})"
            f" + rejected {c['rejected']:,} + axis-B {c['axis_b']:,} + deduplicated {c['deduplicated']:,}"
            "  [green]✓ conserved[/]"
        )
        for reason, n in sorted(result.reasons.items(), key=lambda kv: -kv[1]):
            console.print(f"  {reason:<24} {n:,}")
        console.print(f"wrote {out}/ (report.md, manifest.json) in {result.timing()}")
