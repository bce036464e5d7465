"""`shoparena score`: rule-score an answers file against a problems file and a catalogue."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, get_args

import orjson
import typer
from rich.markup import escape
from rich.table import Table

from shoparena.cli.common import console, err_console, fail, progress_bar
from shoparena.index.catalog_dir import CatalogDirError, open_catalog
from shoparena.problems.io import ProblemFileError
from shoparena.records.options import SimilarityName
from shoparena.scoring.answers import match_answers, read_answers
from shoparena.scoring.metrics import MetricValue
from shoparena.scoring.similarity import default_cache_path, make_similarity
from shoparena.scoring.suite import CatalogMismatchError, SuiteScore, load_problem_file, score_episodes

SHOWN = (
    ("asr", "ASR"),
    ("car", "CAR"),
    ("gt_rate", "gt"),
    ("title_mean", "title"),
    ("price_mean", "price"),
    ("service_mean", "service"),
    ("sku_attr_mean", "sku/attr"),
    ("knowledge_mean", "knowl."),
    ("format_score", "format"),
    ("length", "length"),
)


def _cell(metric: MetricValue, with_ci: bool) -> str:
    if metric.value is None:
        return "–"
    text = f"{metric.value:.3f}"
    if with_ci and metric.low is not None and metric.high is not None:
        text += f"\n[dim]{metric.low:.2f}–{metric.high:.2f}[/]"
    return text


def render(result: SuiteScore) -> Table:
    """Metrics as rows, buckets as columns (fits 80 columns); each cell: value over its interval.

    When unanswered problems are left out of the denominator, the table itself says so (its caption,
    and the ASR row's label): a note printed apart scrolls away, while the table gets pasted into reports.
    """
    metrics = result.metrics
    warning = result.denominator_warning()
    table = Table(
        title=(
            f"{result.mode} mode · {result.similarity} · title ≥ {result.title_threshold} · "
            f"{int(metrics.confidence * 100)}% bootstrap CI"
        ),
        caption=f"[bold red]⚠ {escape(warning)}[/]" if warning else None,
        caption_justify="left",
        min_width=len(warning) // 2 + 4 if warning else None,
    )
    groups = [*metrics.buckets.items(), ("overall", metrics.overall)]
    table.add_column("metric", no_wrap=True)
    for name, group in groups:
        header = f"[bold]{name}[/]" if name == "overall" else name
        table.add_column(f"{header}\nn={group.n}", justify="right", no_wrap=True)
    for key, label in SHOWN:
        if metrics.overall.metrics[key].value is None:
            continue
        if key == "asr" and warning:
            label = "[bold red]ASR (answered only)[/]"
        table.add_row(label, *(_cell(group.metrics[key], True) for _, group in groups))
    return table


def _print_rejects(rejects) -> None:
    for reject in sorted(rejects, key=lambda r: (r.source, r.line or 0)):
        where = f"{reject.source}:{reject.line}" if reject.line else reject.source
        err_console.print(f"[yellow]skipped[/] {escape(where)}: {escape(reject.reason)}", soft_wrap=True)


def register(app: typer.Typer) -> None:
    @app.command("score")
    def score(
        catalog: Annotated[Path, typer.Option("--catalog", help="Catalogue directory the ids resolve in.")],
        problems: Annotated[
            Path, typer.Option("--problems", help="Problems: ShoppingBench JSONL or an arena JSON list.")
        ],
        answers: Annotated[
            Path,
            typer.Option(
                "--answers",
                help='JSONL: {"problem_id": … or "index": i, "product_ids": [...] or "a,b"} per line.',
            ),
        ],
        mode: Annotated[
            str, typer.Option(help="upstream (ShoppingBench) or strict (the arena's production mode).")
        ] = "upstream",
        similarity: Annotated[
            str, typer.Option(help="Title similarity: minilm (sentence embeddings) or lexical.")
        ] = "minilm",
        json_out: Annotated[
            Path | None, typer.Option("--json", help="Write per-problem rows and the aggregate here.")
        ] = None,
        pass_k: Annotated[
            list[int] | None, typer.Option("--pass-k", help="Also report pass@k (needs ≥ k samples).")
        ] = None,
        bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples for the intervals.")] = 1000,
        seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
        cache: Annotated[
            Path | None,
            typer.Option(help="Title-embedding cache file (default ~/.cache/shoparena/...; 'none' = off)."),
        ] = None,
        strict_denominator: Annotated[
            bool,
            typer.Option(
                "--strict-denominator",
                help=(
                    "Count problems without an answer as failures (strict mode always does; upstream mode "
                    "otherwise leaves them out, as ShoppingBench does, and the table warns)."
                ),
            ),
        ] = False,
    ) -> None:
        """Score recommendations: ASR, CAR, per-axis and per-bucket, with confidence intervals.

        Example:
          shoparena score --catalog cat/ --problems suite.jsonl --answers answers.jsonl --mode strict
        """
        if mode not in ("upstream", "strict"):
            raise fail(f"--mode must be upstream or strict, not {mode!r}")
        if similarity not in get_args(SimilarityName):
            raise fail(f"--similarity must be minilm or lexical, not {similarity!r}")
        for label, path in (("--problems", problems), ("--answers", answers)):
            if not path.is_file():
                raise fail(f"{label} {path} is not a file")
        try:
            suite = load_problem_file(problems)
        except (ProblemFileError, ValueError) as exc:
            raise fail(str(exc)) from exc
        try:
            backend = open_catalog(catalog)
        except (CatalogDirError, FileNotFoundError, OSError, ValueError) as exc:
            raise fail(f"cannot open catalogue {catalog}: {exc}") from exc
        cache_path = None if str(cache) == "none" else (cache or default_cache_path())
        title_similarity = make_similarity(similarity, cache_path if similarity == "minilm" else None)
        good, bad = read_answers(answers)
        episodes, unmatched = match_answers(suite, good, source=str(answers))
        if not episodes:
            backend.close()
            _print_rejects([*bad, *unmatched])
            skipped = len(bad) + len(unmatched)
            raise fail(
                f"--answers {answers}: no usable answer to score"
                + (f" ({skipped} line(s) skipped, see above)" if skipped else " (the file holds no answers)"),
                code=1,
            )
        try:
            with progress_bar("scoring", len(episodes)) as advance:
                result = score_episodes(
                    suite,
                    episodes,
                    backend,
                    title_similarity,
                    mode,  # type: ignore[arg-type]
                    rejects=[*bad, *unmatched],
                    pass_k=pass_k or (),
                    n_bootstrap=bootstrap,
                    seed=seed,
                    progress=advance,
                    strict_denominator=True if strict_denominator else None,
                )
        except CatalogMismatchError as exc:
            raise fail(f"--catalog {catalog}: {exc}", code=1) from None
        except ValueError as exc:
            raise fail(str(exc)) from exc
        finally:
            backend.close()
        _print_rejects(result.rejects)
        for note in result.notes:
            err_console.print(f"[dim]note:[/] {note}", soft_wrap=True)
        console.print(render(result))
        if result.rejects:
            console.print(f"{len(result.rejects)} answer line(s) skipped (see above)")
        for item in result.pass_at_k:
            value = item.value
            if value.value is None:
                console.print(f"pass@{item.k}: no problem has ≥ {item.k} samples")
            else:
                console.print(
                    f"pass@{item.k} = {value.value:.3f} [{value.low:.3f}, {value.high:.3f}] "
                    f"over {item.n_problems} problems ({item.excluded} with < {item.k} samples left out)"
                )
        if json_out is not None:
            try:
                json_out.parent.mkdir(parents=True, exist_ok=True)
                json_out.write_bytes(orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2))
            except OSError as exc:
                raise fail(f"--json {json_out}: cannot write: {exc.strerror or exc}") from None
            console.print(f"wrote {json_out}")
