"""`shoparena store`: ingest run directories into the trajectory store, export, invalidate, summarise."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.markup import escape
from rich.table import Table
from sqlalchemy.exc import SQLAlchemyError

from shoparena.cli.common import console, err_console, fail, print_json, progress_bar
from shoparena.store import (
    EXPORT_FORMATS,
    STORE_ENV,
    RecordFilter,
    Reject,
    StoreError,
    open_store,
)
from shoparena.store.reading import TRAJECTORIES_FILE, count_lines

store_app = typer.Typer(
    name="store",
    help=(
        "The trajectory store: every evaluation kept append-only with its provenance, on a SQLite file "
        f"(default ./shoparena.db, or ${STORE_ENV}) or PostgreSQL (--store postgresql://user@host/db)."
    ),
    no_args_is_help=True,
)

StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        help=f"Database URL (sqlite:///path.db, postgresql://…) or a SQLite file path \\[default: ${STORE_ENV} or ./shoparena.db].",
        show_default=False,
    ),
]
SHOWN_REJECTS = 20


def _open(store: str | None, *, create: bool = False):
    """Only ingest creates a store: for the others a SQLite path that does not exist is a typo, not an
    empty store (SQLite would otherwise make the file and report 0 records)."""
    try:
        return open_store(store, create=create)
    except StoreError as exc:
        raise fail(str(exc)) from None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:
        return False


def _check_rejects_path(rejects: Path, inputs: list[Path]) -> None:
    """Opening --rejects truncates it: it must not be one of the inputs (that would erase them)."""
    if rejects.is_dir():
        raise fail(f"--rejects {rejects} is a directory; give a file path")
    for given in inputs:
        for candidate in (given, given / TRAJECTORIES_FILE):
            if _same_file(rejects, candidate):
                raise fail(
                    f"--rejects {rejects} is also an input ({candidate}); writing rejects would erase it"
                )


def _summary(report) -> str:
    line = (
        f"read {report.seen} · ingested {report.inserted} · duplicates {report.duplicates} · "
        f"rejected {report.rejected}"
    )
    if report.rejected_by_reason:
        reasons = sorted(report.rejected_by_reason.items(), key=lambda item: (-item[1], item[0]))
        line += " (" + ", ".join(f"{kind} {count}" for kind, count in reasons) + ")"
    return line


@store_app.command("ingest")
def ingest_cmd(
    inputs: Annotated[
        list[Path], typer.Argument(help="Run directories (their trajectories.jsonl) or JSONL files.")
    ],
    store: StoreOption = None,
    rejects: Annotated[
        Path | None,
        typer.Option(
            "--rejects",
            help="Write every reject here as JSONL (source, file, line, kind, reason).",
        ),
    ] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Records per transaction.")] = 2000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Store trajectory records; re-ingesting is harmless (the same record twice is one row).

    Bad lines and unreadable inputs are rejected with their file:line and reason, and the good records
    are stored regardless; the command then exits 1, after a summary of what was read, ingested,
    already stored, and rejected (per reason). The store is created if it does not exist.

    Examples:
      shoparena store ingest runs/eval-1 runs/eval-2
      shoparena store ingest trajectories.jsonl --store postgresql://user@host/shoparena --rejects rejects.jsonl
    """
    if rejects is not None:
        _check_rejects_path(rejects, inputs)
    opened = _open(store, create=True)
    try:
        reject_file = rejects.open("wb") if rejects else None
    except OSError as exc:
        opened.discard_if_unused()
        raise fail(f"--rejects {rejects}: cannot write: {exc.strerror or exc}") from None

    def on_reject(reject: Reject) -> None:
        if reject_file is not None:
            reject_file.write(orjson.dumps(reject.model_dump(exclude_none=True)) + b"\n")

    try:
        total = count_lines(inputs)
        with progress_bar("ingest", total) as advance:
            report = opened.ingest_paths(inputs, batch_size=batch_size, progress=advance, on_reject=on_reject)
    except (StoreError, SQLAlchemyError) as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise fail(
            f"store {opened.url} failed part-way: {reason}. Batches committed before it are stored; "
            "run the same command again to finish (ingest is idempotent)"
        ) from None
    finally:
        opened.discard_if_unused()  # a store this command created and stored nothing in is removed
        if reject_file is not None:
            reject_file.close()
    if as_json:
        print_json(report.model_dump(mode="json"))
    else:
        rate = report.seen / report.wall_s if report.wall_s > 0 else 0.0
        console.print(
            f"{_summary(report)} in {report.wall_s:.2f} s ({rate:,.0f}/s) → {opened.url}", soft_wrap=True
        )
        for reject in report.rejects[:SHOWN_REJECTS]:
            err_console.print(
                "[yellow]rejected[/] " + escape(f"{reject.source}: [{reject.kind}] {reject.reason}"),
                soft_wrap=True,
            )
        if report.rejected > SHOWN_REJECTS:
            where = f"all in {rejects}" if rejects else "use --rejects FILE to keep them all"
            err_console.print(f"… {report.rejected - SHOWN_REJECTS} more rejects ({where})")
    if report.conflicts:
        raise fail(
            f"{report.conflicts} record(s) conflict with stored records of the same id and were not stored "
            "(the store never overwrites)",
            code=1,
        )
    if report.rejected:
        kept = f"; all reasons in {rejects}" if rejects else ""
        raise fail(
            f"{report.rejected} rejected of {report.seen} read; {report.inserted} new record(s) stored, "
            f"{report.duplicates} stored already{kept}",
            code=1,
        )


EXTENSION_FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet"}


def _export_format(fmt: str | None, out: Path) -> str:
    """--format if given, else what --out's extension says, else jsonl; never a JSONL file named .parquet."""
    if fmt is not None and fmt not in EXPORT_FORMATS:
        raise fail(f"--format {fmt!r}: use one of {', '.join(EXPORT_FORMATS)}")
    implied = EXTENSION_FORMATS.get(out.suffix.lower())
    if fmt is not None and implied is not None and fmt != implied:
        raise fail(
            f"--format {fmt} contradicts --out {out} (a {out.suffix} file is {implied}); "
            f"drop --format, or name the file for {fmt}"
        )
    return fmt or implied or "jsonl"


def _when(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    try:
        return RecordFilter.model_validate({"since": value}).since
    except ValueError:
        raise fail(
            f"{option} {value!r}: give an ISO-8601 date or time, e.g. 2025-03-01 or 2025-03-01T12:00Z"
        ) from None


@store_app.command("export")
def export_cmd(
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Output file (replaced when complete); .jsonl/.json or .parquet sets the format.",
        ),
    ],
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            help="jsonl (canonical records) or parquet \\[default: from the --out extension, else jsonl].",
            show_default=False,
        ),
    ] = None,
    agent: Annotated[str | None, typer.Option(help="Agent id or spec.")] = None,
    miner: Annotated[str | None, typer.Option(help="Miner hotkey.")] = None,
    problem: Annotated[str | None, typer.Option(help="Problem id.")] = None,
    suite: Annotated[str | None, typer.Option(help="Suite name.")] = None,
    bucket: Annotated[str | None, typer.Option(help="product, shop, voucher or web.")] = None,
    run: Annotated[str | None, typer.Option(help="Run id.")] = None,
    since: Annotated[
        str | None, typer.Option(help="Episodes started at or after (ISO-8601; UTC if no offset).")
    ] = None,
    until: Annotated[str | None, typer.Option(help="Episodes started before (ISO-8601).")] = None,
    min_rule: Annotated[float | None, typer.Option("--min-rule", help="Minimum rule score.")] = None,
    max_rule: Annotated[float | None, typer.Option("--max-rule", help="Maximum rule score.")] = None,
    success: Annotated[
        bool | None, typer.Option("--success/--failure", help="Only successful / only failed episodes.")
    ] = None,
    min_quality: Annotated[float | None, typer.Option("--min-quality", help="Minimum judge quality.")] = None,
    include_invalidated: Annotated[
        bool, typer.Option("--include-invalidated", help="Also export invalidated evaluations.")
    ] = False,
    store: StoreOption = None,
) -> None:
    """Export selected evaluations as JSONL (the records exactly as ingested) or Parquet.

    The format follows --out's extension (.jsonl or .json: JSONL, .parquet: Parquet) unless --format
    says otherwise; a --format that contradicts the extension is refused rather than written into a
    misleadingly named file. Other extensions are JSONL unless --format says parquet.

    Examples:
      shoparena store export --out all.jsonl
      shoparena store export --out ref.parquet --agent reference:pipeline --since 2025-03-01
      shoparena store export -f parquet --out failures.pq --failure --include-invalidated
    """
    fmt = _export_format(fmt, out)
    where = RecordFilter(
        agent=agent,
        miner=miner,
        problem=problem,
        suite=suite,
        bucket=bucket,
        run=run,
        since=_when(since, "--since"),
        until=_when(until, "--until"),
        min_rule=min_rule,
        max_rule=max_rule,
        success=success,
        min_quality=min_quality,
        include_invalidated=include_invalidated,
    )
    opened = _open(store)
    try:
        total = opened.count(where)
        with progress_bar(f"export {fmt}", total) as advance:
            written = opened.export(out, where, fmt, progress=advance)  # type: ignore[arg-type]
    except StoreError as exc:
        raise fail(str(exc)) from None
    finally:
        opened.close()
    console.print(f"exported {written} records → {out}")


@store_app.command("invalidate")
def invalidate_cmd(
    record_id: Annotated[str, typer.Argument(help="The record to withdraw.")],
    reason: Annotated[str, typer.Option("--reason", help="Why (kept with the invalidation).")],
    by: Annotated[str | None, typer.Option("--by", help="Who invalidates (e.g. a validator hotkey).")] = None,
    store: StoreOption = None,
) -> None:
    """Withdraw an evaluation: appends an invalidation row; the evaluation itself is never changed.

    Examples:
      shoparena store invalidate RECORD_ID --reason "scored on the wrong catalogue"
      shoparena store invalidate RECORD_ID --reason "judge bug" --by HOTKEY --store postgresql://user@host/shoparena
    """
    opened = _open(store)
    try:
        info = opened.invalidate(record_id, reason, by=by)
    except StoreError as exc:
        raise fail(str(exc)) from None
    finally:
        opened.close()
    console.print(
        f"invalidated {info.record_id} at {info.created_at.isoformat(timespec='seconds')}: {info.reason}"
    )


def _group_table(title: str, groups) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("", "evaluations", "success", "mean rule", "mean quality"):
        table.add_column(column, justify="left" if not column else "right")
    for group in groups:
        table.add_row(
            group.key or "–",
            str(group.evaluations),
            f"{group.successes / group.evaluations:.3f}" if group.evaluations else "–",
            f"{group.mean_rule:.3f}" if group.mean_rule is not None else "–",
            f"{group.mean_quality:.2f}" if group.mean_quality is not None else "–",
        )
    return table


@store_app.command("stats")
def stats_cmd(
    store: StoreOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the statistics as JSON.")] = False,
) -> None:
    """What the store holds: counts, time span, and per agent / bucket / suite (invalidated rows excluded).

    Examples:
      shoparena store stats
      shoparena store stats --store postgresql://user@host/shoparena --json
    """
    opened = _open(store)
    try:
        stats = opened.stats()
    finally:
        opened.close()
    if as_json:
        print_json(stats.model_dump(mode="json"))
        return
    span = (
        f"{stats.first_episode:%Y-%m-%d %H:%M} – {stats.last_episode:%Y-%m-%d %H:%M} UTC"
        if stats.first_episode and stats.last_episode
        else "–"
    )
    console.print(
        f"{stats.url} (schema {stats.revision}): {stats.evaluations} evaluations "
        f"({stats.invalidated} invalidated, not counted) · {stats.runs} runs · {stats.problems} problems · {span}"
    )
    for title, groups in (
        ("by agent", stats.by_agent),
        ("by bucket", stats.by_bucket),
        ("by suite", stats.by_suite),
    ):
        if groups:
            console.print(_group_table(title, groups))


def register(app: typer.Typer) -> None:
    app.add_typer(store_app, name="store")
