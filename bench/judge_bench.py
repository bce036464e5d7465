"""Offline judge throughput: every verdict a validator or `corpus rewrite` computes, one record at a time.

The records are the corpus bench's (`bench/corpus_bench.py`): reference agentic and pipeline episodes
played on a generated catalogue (full search pages in the call log, 66 KB a record), varied per row.
Each is judged as it is, and — for the code-driven half — again as `corpus rewrite` rewrites it (the
reference rewriter's reasoning), the two loads a judge sees.

    .venv/bin/python bench/judge_bench.py --n 2000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from bench.common import percentiles
from bench.corpus_bench import synthetic_trajectories
from shoparena.corpus.rewrite import is_axis_b, rewrite_request, rewritten
from shoparena.corpus.rewriters import ReferenceRewriter
from shoparena.judge.offline import OfflineJudge
from shoparena.records.trajectory import TrajectoryRecord


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="records to judge")
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        source, _size = synthetic_trajectories(root, args.n, console.print)
        records = [TrajectoryRecord.model_validate_json(line) for line in source.open("rb")]
    rewriter = ReferenceRewriter()
    loads = {
        "as recorded": records,
        "rewritten (axis-B half)": [
            rewritten(r, request, rewriter(request), "reference")
            for r in records
            if is_axis_b(r)
            for request in [rewrite_request(r)]
        ],
    }
    judge = OfflineJudge()
    table = Table(title=f"offline judge · {len(records):,} records · 1 process")
    for column in ("load", "records", "records/s", "p50 ms", "p95 ms", "p99 ms"):
        table.add_column(column, justify="left" if column == "load" else "right")
    for name, batch in loads.items():
        samples = []
        started = time.perf_counter()
        for record in batch:
            one = time.perf_counter()
            judge(record)
            samples.append(time.perf_counter() - one)
        wall = time.perf_counter() - started
        stats = percentiles(samples)
        table.add_row(
            name,
            f"{len(batch):,}",
            f"{len(batch) / wall:,.0f}",
            f"{stats['p50_ms']:.1f}",
            f"{stats['p95_ms']:.1f}",
            f"{stats['p99_ms']:.1f}",
        )
    console.print(table)


if __name__ == "__main__":
    main()
