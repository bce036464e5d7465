"""`shoparena problems …`: generate, validate and summarise task files (SPEC §2)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from shoparena.cli.common import console, err_console, fail, print_json, progress_bar
from shoparena.index.catalog_dir import CatalogDirError, open_catalog
from shoparena.problems.generator import GENERATED_BUCKETS, GenerationError, ProblemGenerator
from shoparena.problems.io import ProblemFileError, read_problems, write_problems
from shoparena.problems.records import ProblemRecordError
from shoparena.problems.stats import problem_stats
from shoparena.problems.suite import SuiteError, write_suite

problems_app = typer.Typer(
    help=(
        "Generate, validate and summarise problem files: ShoppingBench JSONL, the arena's JSON list, "
        "and frozen shoparena suites (the format is detected from the content)."
    ),
    no_args_is_help=True,
)


def _parse_buckets(text: str) -> list[str]:
    buckets = [b.strip().lower() for b in text.split(",") if b.strip()]
    if not buckets:
        raise fail("--buckets is empty; use e.g. product,shop,voucher")
    for bucket in buckets:
        if bucket == "web":
            raise fail(
                "the generator cannot make web (knowledge) tasks: they need a knowledge source, "
                "which is not shipped; use product, shop and/or voucher"
            )
        if bucket not in GENERATED_BUCKETS:
            raise fail(f"unknown bucket {bucket!r}; choose from {', '.join(GENERATED_BUCKETS)}")
    return buckets


@problems_app.command("generate")
def generate(
    catalog: Annotated[
        Path, typer.Option("--catalog", help="A built catalogue directory (`catalog build`).")
    ],
    n: Annotated[int, typer.Option("--n", help="Distinct tasks to make, split evenly over the buckets.")],
    out: Annotated[Path, typer.Option("--out", help="File to write (JSONL, or a suite with --suite).")],
    seed: Annotated[int, typer.Option(help="Seed: same catalogue + seed + options → identical file.")] = 0,
    buckets: Annotated[
        str, typer.Option(help="Comma-separated buckets: product, shop, voucher (web is not generated).")
    ] = "product,shop,voucher",
    variants: Annotated[
        int,
        typer.Option(help="Surface forms per task (paraphrases sharing one leak_cluster_id); output n×K."),
    ] = 1,
    fmt: Annotated[
        str, typer.Option("--format", help="Without --suite: shoppingbench (JSONL) or arena (JSON list).")
    ] = "shoppingbench",
    suite: Annotated[str | None, typer.Option(help="Freeze the output as this suite name.")] = None,
    version: Annotated[
        str | None, typer.Option(help="Suite version (e.g. v4); required with --suite.")
    ] = None,
) -> None:
    """Sample answerable tasks from a catalogue with ShoppingBench's rules.

    Each task's gold products come from the catalogue and satisfy its reward spec; shop tasks take
    2–4 products of one shop; voucher budgets always cover the gold set after the voucher. Web
    (knowledge) tasks are not generated: there is no knowledge source to draw them from.

    Examples:
      shoparena problems generate --catalog cat/ --n 300 --seed 1 --out tasks.jsonl
      shoparena problems generate --catalog cat/ --n 50 --buckets shop,voucher --variants 3 --seed 2 --out v.jsonl
      shoparena problems generate --catalog cat/ --n 90 --seed 4 --out suites/v4.json --suite formal --version v4
    """
    chosen = _parse_buckets(buckets)
    if n < 1:
        raise fail("--n must be at least 1")
    if variants < 1:
        raise fail("--variants must be at least 1")
    if (suite is None) != (version is None):
        raise fail("give --suite and --version together")
    if fmt not in ("shoppingbench", "arena"):
        raise fail("--format must be shoppingbench or arena")
    try:
        backend = open_catalog(catalog)
    except CatalogDirError as exc:
        raise fail(str(exc)) from None
    try:
        generator = ProblemGenerator(backend, seed=seed)
        with progress_bar(f"generating {n:,} tasks × {variants}", n) as advance:
            problems = generator.generate(n, chosen, variants=variants, progress=advance)
        if suite is not None:
            written = write_suite(out, suite, version or "", problems)
            console.print(
                f"[green]suite[/] {suite} {version}: {written.header.n_problems:,} problems, "
                f"sha256 {written.header.content_hash[:12]}… → {out}"
            )
        else:
            write_problems(out, problems, fmt=fmt)
            console.print(f"[green]wrote[/] {len(problems):,} problems → {out}")
    except (GenerationError, SuiteError) as exc:
        raise fail(str(exc)) from None
    finally:
        backend.close()
    counts = Counter(p.bucket for p in problems)
    for bucket in chosen:
        console.print(f"  {bucket:<8} {counts.get(bucket, 0):>7,}")


@problems_app.command("validate")
def validate(
    files: Annotated[list[Path], typer.Argument(help="Problem files (any supported format).")],
    max_errors: Annotated[int, typer.Option(help="Print at most this many errors per file.")] = 50,
) -> None:
    """Check problem files record by record; exits non-zero if any record or file is bad.

    Every error names its place (`file:line` for JSONL, `file:\\[index]` for JSON lists), the field
    and the reason. A frozen suite whose content no longer matches its hash is an error, and so is a
    problem_id that several records share (`eval` refuses such a file), listed with each place.

    Examples:
      shoparena problems validate tasks.jsonl
      shoparena problems validate data/upstream/*.jsonl data/upstream/oro_problem_suite_v3.json
    """
    failed = False
    for path in files:
        try:
            result = read_problems(path)
        except (ProblemFileError, SuiteError, ProblemRecordError) as exc:
            failed = True
            err_console.print(f"[red]{escape(str(exc))}[/]", soft_wrap=True)
            console.print(f"{escape(str(path))}: [red]unreadable[/]", soft_wrap=True)
            continue
        for error in result.rejects[:max_errors]:
            err_console.print(f"[red]{escape(str(error))}[/]", soft_wrap=True)
        if len(result.rejects) > max_errors:
            err_console.print(
                f"[red]… {len(result.rejects) - max_errors} more error(s) in {escape(str(path))}[/]",
                soft_wrap=True,
            )
        duplicates = result.duplicate_ids()
        for duplicate in duplicates[:max_errors]:
            err_console.print(f"[red]{escape(str(path))}: {escape(str(duplicate))}[/]", soft_wrap=True)
        if len(duplicates) > max_errors:
            err_console.print(
                f"[red]… {len(duplicates) - max_errors} more duplicate id(s) in {escape(str(path))}[/]",
                soft_wrap=True,
            )
        buckets = ", ".join(f"{b} {c}" for b, c in sorted(result.bucket_counts().items()))
        problems = [f"{len(result.rejects)} error(s)"] if result.rejects else []
        if duplicates:
            problems.append(f"{len(duplicates)} duplicate problem_id(s)")
        status = f"[red]{', '.join(problems)}[/]" if problems else "[green]ok[/]"
        console.print(
            f"{escape(str(path))}: {status}: {len(result.problems)} valid problem(s) ({result.format}; {buckets})",
            soft_wrap=True,
        )
        failed = failed or bool(problems)
    if failed:
        raise typer.Exit(1)


def _table(title: str, counts: dict[str, int], total: int) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("value")
    table.add_column("count", justify="right")
    table.add_column("share", justify="right")
    for key, count in counts.items():
        table.add_row(key, f"{count:,}", f"{count / total:.0%}" if total else "-")
    return table


@problems_app.command("stats")
def stats(
    file: Annotated[Path, typer.Argument(help="A problem file (any supported format).")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON document instead of tables.")
    ] = False,
) -> None:
    """Counts per bucket and difficulty and how often each constraint type appears.

    Examples:
      shoparena problems stats tasks.jsonl
      shoparena problems stats suites/v4.json --json
    """
    try:
        result = read_problems(file)
    except (ProblemFileError, SuiteError) as exc:
        raise fail(str(exc)) from None
    if not result.problems:  # statistics of nothing would read as an empty suite
        raise fail(
            f"{file}: no valid problem ({len(result.rejects)} invalid record(s); run `problems validate`)", 1
        )
    summary = problem_stats(result.problems)
    if as_json:
        print_json(
            {
                **summary.model_dump(),
                "rejected": len(result.rejects),
                "duplicate_ids": len(result.duplicate_ids()),
                "format": result.format,
            }
        )
        return
    console.print(f"[bold]{escape(str(file))}[/] ({result.format}): {summary.n_problems:,} problems")
    if result.rejects:
        err_console.print(
            f"[yellow]{len(result.rejects)} invalid record(s) left out (run `problems validate`)[/]"
        )
    duplicates = result.duplicate_ids()
    if duplicates:
        err_console.print(
            f"[yellow]{len(duplicates)} problem_id(s) shared by several records; `eval` refuses this file "
            "(run `problems validate`)[/]"
        )
    console.print(_table("buckets", summary.buckets, summary.n_problems))
    console.print(_table("difficulty", summary.difficulty, summary.n_problems))
    gold_items = summary.constraints.get("title", 0)
    console.print(_table("constraints (share of gold items)", summary.constraints, gold_items))
    console.print(_table("gold items per problem", summary.items_per_problem, summary.n_problems))
    if summary.vouchers:
        console.print(_table("vouchers", summary.vouchers, sum(summary.vouchers.values())))
    console.print(f"leak clusters: {summary.leak_clusters:,}")


def register(app: typer.Typer) -> None:
    app.add_typer(problems_app, name="problems")
