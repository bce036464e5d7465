"""`shoparena arena bank add|show`: grow the race bank and look at it and its current rotation."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from shoparena.cli.common import console, fail, print_json, progress_bar, say, say_err

bank_app = typer.Typer(
    name="bank",
    help=(
        "The race bank: problems generated on the arena's catalogue for races and qualifying, rotated "
        "through open and held-out leak clusters (never the formal suites)."
    ),
    no_args_is_help=True,
)

DirOption = Annotated[Path, typer.Option("--dir", help="The arena directory (`arena init` made it).")]


@bank_app.command("add")
def add_cmd(
    arena_dir: DirOption,
    n: Annotated[int, typer.Option("--n", min=1, help="Tasks to generate (split over the buckets).")],
    seed: Annotated[int, typer.Option("--seed", help="Generator seed: the same seed makes the same tasks.")],
    variants: Annotated[
        int, typer.Option("--variants", min=1, help="Surface forms per task; they share one leak cluster.")
    ] = 1,
    never_touch: Annotated[
        list[Path] | None,
        typer.Option(
            "--never-touch",
            help="Another formal suite file to keep out of the bank (repeatable); the arena's own suite always is.",
        ),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Generate tasks on the arena's catalogue and append the allowed, new ones to ARENA/race_bank.jsonl.

    A task in the leak cluster of a never-touch problem (the arena's suite, --never-touch files, and any
    suite named in the competition's never_touch_suites) is dropped; a task the bank holds already (a
    re-run with the same seed) is skipped. Both are counted. The bank is append-only.

    Examples:
      shoparena arena bank add --dir arena/ --n 300 --seed 1
      shoparena arena bank add --dir arena/ --n 60 --seed 2 --variants 3 --never-touch suites/v1.json
    """
    from shoparena.arena.competition.pools import PoolError, add_to_bank
    from shoparena.arena.errors import ArenaError

    try:
        with progress_bar(f"generating {n:,} tasks × {variants}", n) as advance:
            report = add_to_bank(
                arena_dir, n, seed, variants=variants, never_touch=never_touch or (), progress=advance
            )
    except (PoolError, ArenaError) as exc:
        raise fail(str(exc)) from None
    if json_output:
        print_json(report.model_dump(mode="json"))
    else:
        _say_added(report, arena_dir)
    if not report.added and not report.duplicates:  # all dropped: not a re-run, a bank that cannot grow
        raise fail(
            f"no problem added to the bank: all {n:,} generated fall in a never-touch leak cluster; "
            "try another --seed",
            1,
        )


def _say_added(report, arena_dir: Path) -> None:
    say(f"[green]added[/] {report.added:,} problems → {arena_dir / 'race_bank.jsonl'}")
    if report.dropped_never_touch:
        say(
            f"dropped {report.dropped_never_touch:,} in a never-touch leak cluster "
            f"(checked against {report.never_touch_problems:,} formal-suite problems)"
        )
    if report.duplicates:
        say(f"skipped {report.duplicates:,} already in the bank (same seed as an earlier add?)")
    say(f"bank: {report.bank_size:,} problems, sha256 {report.bank_sha256}")


def _rotation_summary(arena_dir: Path, config, bank, at: datetime, retired: set[str]) -> dict:
    """The rotation of `at`: the frozen manifest when there is one, else a preview (nothing is frozen
    by looking); `retired` are the leak clusters races have drawn."""
    from shoparena.arena.competition.pools import PoolError, fresh_heldout, manifest_path, preview_rotation

    try:
        manifest, frozen = preview_rotation(arena_dir, config, at, retired=retired)
    except PoolError as exc:
        return {"error": str(exc)}
    path = manifest_path(arena_dir, manifest.period)
    as_of = bank.as_of(manifest.bank_sha256)
    buckets = {}
    sides = (
        ("open", manifest.open_problem_ids),
        ("heldout", manifest.heldout_problem_ids),
        ("retired", manifest.retired_problem_ids),
    )
    for side, ids in sides:
        for pid in ids:
            bucket = as_of.by_id[pid].bucket or "unknown"
            buckets.setdefault(bucket, {"open": 0, "heldout": 0, "retired": 0})[side] += 1
    return {
        "period": manifest.period,
        "starts_at": manifest.starts_at.isoformat(),
        "ends_at": manifest.ends_at.isoformat(),
        "frozen": frozen,
        "file": str(path) if frozen else None,
        "sha256": manifest.sha256,
        "bank_sha256": manifest.bank_sha256,
        "open_clusters": len(manifest.open_clusters),
        "heldout_clusters": len(manifest.heldout_clusters),
        "retired_clusters": len(manifest.retired_clusters),
        "open_problems": len(manifest.open_problem_ids),
        "heldout_problems": len(manifest.heldout_problem_ids),
        "retired_problems": len(manifest.retired_problem_ids),
        "fresh_heldout_problems": len(fresh_heldout(manifest, bank, retired)),
        "by_bucket": dict(sorted(buckets.items())),
    }


@bank_app.command("show")
def show_cmd(
    arena_dir: DirOption,
    at: Annotated[
        datetime | None,
        typer.Option("--at", help="Show the rotation at this time (ISO; UTC when no zone) \\[default: now]."),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """The race bank's size, sha256, leak clusters and per-bucket counts, and the current rotation.

    The rotation shown is the frozen manifest of the period when one exists; otherwise a preview of
    what the first use in the period will freeze (show itself freezes nothing).

    Examples:
      shoparena arena bank show --dir arena/
      shoparena arena bank show --dir arena/ --at 2026-12-01T00:00:00Z --json
    """
    from shoparena.arena import open_arena
    from shoparena.arena.competition.freshness import retired_clusters
    from shoparena.arena.competition.pools import PoolError, read_bank
    from shoparena.arena.config import read_config
    from shoparena.arena.errors import ArenaError

    when = datetime.now(UTC) if at is None else (at if at.tzinfo else at.replace(tzinfo=UTC))
    try:
        config = read_config(arena_dir)
        bank = read_bank(arena_dir)
        with open_arena(arena_dir) as arena, arena.store.engine.connect() as connection:
            retired = retired_clusters(connection)
    except (PoolError, ArenaError) as exc:
        raise fail(str(exc)) from None
    clusters = bank.clusters()
    cluster_buckets: dict[str, int] = {}
    for members in clusters.values():
        bucket = bank.by_id[members[0]].bucket or "unknown"
        cluster_buckets[bucket] = cluster_buckets.get(bucket, 0) + 1
    summary = {
        "path": str(bank.path),
        "size": bank.size,
        "sha256": bank.sha256,
        "clusters": len(clusters),
        "buckets": {
            b: {"problems": count, "clusters": cluster_buckets.get(b, 0)}
            for b, count in bank.bucket_counts().items()
        },
        "rotation": _rotation_summary(arena_dir, config, bank, when, retired)
        if bank.size
        else {"error": "the bank is empty"},
    }
    if json_output:
        print_json(summary)
        return
    say(f"race bank {summary['path']}: {bank.size:,} problems in {len(clusters):,} leak clusters")
    say(f"sha256 {bank.sha256}")
    table = Table(title="by bucket", title_justify="left")
    for column in ("bucket", "problems", "clusters"):
        table.add_column(column, justify="left" if column == "bucket" else "right")
    for bucket, counts in summary["buckets"].items():
        table.add_row(bucket, f"{counts['problems']:,}", f"{counts['clusters']:,}")
    console.print(table)
    rotation = summary["rotation"]
    if "error" in rotation:
        say_err(f"rotation: {rotation['error']}")
        return
    state = f"frozen in {rotation['file']}" if rotation["frozen"] else "preview (frozen at first use)"
    say(
        f"rotation period {rotation['period']} ({rotation['starts_at']} → {rotation['ends_at']}), {state}: "
        f"{rotation['open_clusters']} open clusters / {rotation['open_problems']} problems, "
        f"{rotation['heldout_clusters']} held out / {rotation['heldout_problems']} problems "
        f"({rotation['fresh_heldout_problems']} fresh: not raced yet), {rotation['retired_clusters']} retired / "
        f"{rotation['retired_problems']} problems"
    )
    for bucket, counts in rotation["by_bucket"].items():
        say(
            f"  {bucket:<8} open {counts['open']:>6,}  held out {counts['heldout']:>6,}  "
            f"retired {counts['retired']:>6,}"
        )


def register(arena_app: typer.Typer) -> None:
    arena_app.add_typer(bank_app, name="bank")
