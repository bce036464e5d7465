"""The store's stage of the demo: eval run directories in, a stored and exported corpus input out.

`store_runs` is what `shoparena.tour` (the component tour) calls after the eval stage; the corpus stage then reads the JSONL
it exports (the canonical records, byte for byte as the runner wrote them).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from shoparena.store.ingest import IngestReport
from shoparena.store.query import RecordFilter
from shoparena.store.store import StoreStats, open_store


class StoredRuns(BaseModel):
    store_url: str
    first: IngestReport
    again: IngestReport
    """The same run directories ingested a second time: every record a duplicate."""
    stats: StoreStats
    jsonl: Path
    parquet: Path


def store_runs(
    run_dirs: Sequence[Path], out_dir: Path, console: Console | None = None, store: str | None = None
) -> StoredRuns:
    """Ingest the runs into `store` (default: out_dir/shoparena.db), twice to show it is idempotent;
    export everything to out_dir/store-export.jsonl and .parquet; print what happened."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with open_store(store or out_dir / "shoparena.db") as opened:
        first = opened.ingest_paths(run_dirs)
        again = opened.ingest_paths(run_dirs)
        stats = opened.stats()
        jsonl, parquet = out_dir / "store-export.jsonl", out_dir / "store-export.parquet"
        opened.export(jsonl, RecordFilter(), "jsonl")
        opened.export(parquet, RecordFilter(), "parquet")
        url = opened.url
    if console is not None:
        console.print(
            f"store {url}: ingested {first.inserted} new, {first.duplicates} duplicate, "
            f"{first.rejected} rejected in {first.wall_s:.2f} s; again: {again.inserted} new, "
            f"{again.duplicates} duplicate (idempotent)",
            soft_wrap=True,
        )
        table = Table(title="Stored evaluations per agent", title_justify="left")
        for column in ("agent", "evaluations", "success", "mean rule", "mean judge q"):
            table.add_column(column, justify="left" if column == "agent" else "right")
        for group in stats.by_agent:
            table.add_row(
                group.key or "–",
                str(group.evaluations),
                f"{group.successes / group.evaluations:.2f}" if group.evaluations else "–",
                f"{group.mean_rule:.3f}" if group.mean_rule is not None else "–",
                f"{group.mean_quality:.2f}" if group.mean_quality is not None else "–",
            )
        console.print(table)
        console.print(f"exported {stats.evaluations} records → {jsonl} and {parquet.name}", soft_wrap=True)
    return StoredRuns(store_url=url, first=first, again=again, stats=stats, jsonl=jsonl, parquet=parquet)
