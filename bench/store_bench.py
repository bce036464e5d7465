"""Trajectory-store throughput: bulk ingest (new, then the same file again), JSONL and Parquet export.

    .venv/bin/python bench/store_bench.py                       # SQLite, 20,000 records
    .venv/bin/python bench/store_bench.py --n 50000 --pg postgresql://postgres@127.0.0.1:5432/postgres

Records are real: 24 scripted harness episodes over a generated catalogue, scored by the RuleScorer
(the store tests' fixtures), stored as `n` samples of many runs — ~13 KB each, mostly the trace and
the tool schemas. What is timed: `TrajectoryStore.ingest_paths` over one JSONL file (read, validate,
canonicalise, hash, insert in 2,000-record transactions), the same file again (every line a
duplicate: parse + hash + lookup), exports of everything, and a follower reading it all through the
feed (`store.feed.rows_after`, what `GET /v1/trajectories` pages on) 100 rows a page. `--pg` runs the same on a scratch
database created and dropped on that server. Target: ≥ 5,000 records/s ingest on SQLite.
Results: a table on stdout and bench/out/store_bench-<n>.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil
from rich.console import Console
from rich.table import Table

from shoparena.index.catalog_dir import build_synthetic, open_catalog
from shoparena.store import open_store
from shoparena.store.feed import FeedPosition, rows_after
from tests.store.conftest import copies, write_jsonl
from tests.store.conftest import records as records_fixture

FEED_PAGE = 100
"""What the arena's firehose serves per page by default."""


def measure(url: str, path: Path, n: int, size: int, out_dir: Path) -> list[dict]:
    rows = []
    with open_store(url) as store:
        for label in ("ingest (new)", "ingest (all duplicates)"):
            started = time.perf_counter()
            report = store.ingest_paths([path])
            wall = time.perf_counter() - started
            assert report.inserted + report.duplicates == n, report
            rows.append(
                {"step": label, "records": n, "wall_s": wall, "per_s": n / wall, "mb_s": size / wall / 1e6}
            )
        for fmt in ("jsonl", "parquet"):
            started = time.perf_counter()
            written = store.export(out_dir / f"export.{fmt}", fmt=fmt)
            wall = time.perf_counter() - started
            rows.append({"step": f"export {fmt}", "records": written, "wall_s": wall, "per_s": written / wall,
                         "mb_s": size / wall / 1e6})  # fmt: skip
        started = time.perf_counter()
        followed, position = 0, FeedPosition()
        while page := rows_after(store, position, FEED_PAGE):
            followed += len(page)
            position = page[-1].position
        wall = time.perf_counter() - started
        assert followed == n, followed
        rows.append({"step": f"follow (feed, pages of {FEED_PAGE})", "records": followed, "wall_s": wall,
                     "per_s": followed / wall, "mb_s": size / wall / 1e6})  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--pg", help="admin URL of a PostgreSQL server to also measure")
    args = parser.parse_args()
    console = Console()
    work = Path(tempfile.mkdtemp(prefix="store-bench-"))
    build_synthetic(work / "cat", 3000, seed=7, workers=1)
    catalog = open_catalog(work / "cat")
    base = records_fixture.__wrapped__(catalog, work / "cat")
    per = -(-args.n // len(base))
    bulk = [c for i, r in enumerate(base) for c in copies(r, per, f"bench-{i}")][: args.n]
    path = work / "bulk.jsonl"
    write_jsonl(path, bulk)
    size = path.stat().st_size
    del bulk
    results = {"sqlite": measure(str(work / "store.db"), path, args.n, size, work)}
    if args.pg:
        import psycopg

        name = f"store_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(args.pg, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
            try:
                results["postgresql"] = measure(
                    f"{args.pg.rsplit('/', 1)[0]}/{name}", path, args.n, size, work
                )
            finally:
                admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    table = Table(title=f"store bench · {args.n:,} records · {size / args.n / 1000:.1f} KB each")
    for column in ("database", "step", "records/s", "MB/s", "wall s"):
        table.add_column(column, justify="left" if column in ("database", "step") else "right")
    for database, rows in results.items():
        for row in rows:
            table.add_row(
                database, row["step"], f"{row['per_s']:,.0f}", f"{row['mb_s']:.1f}", f"{row['wall_s']:.2f}"
            )
    console.print(table)
    peak = psutil.Process().memory_info().rss / 1e6
    console.print(f"RSS at end {peak:.0f} MB")
    out = Path(__file__).parent / "out" / f"store_bench-{args.n}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({
        "when": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.platform(),
        "cpus": psutil.cpu_count(), "n": args.n, "bytes": size, "results": results, "rss_mb_end": peak,
    }, indent=2))  # fmt: skip
    catalog.close()


if __name__ == "__main__":
    main()
