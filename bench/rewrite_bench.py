"""`corpus rewrite` throughput: N trajectories (half of them axis-B) through the offline reference
rewriter, the unchanged-check and the offline judge, into corpus rows — one process, as the command runs.

The records are the corpus bench's (`bench/corpus_bench.py`): reference agentic and pipeline episodes
played on a generated catalogue, judged offline, varied per row. The agentic half is read and left
alone (`not_axis_b`), as it would be in a real firehose. Time is split between the rewriter, the judge
and the rest (parsing the record, assembling and checking the row, writing it).

    .venv/bin/python bench/rewrite_bench.py --n 5000 --workers 2
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from bench.corpus_bench import synthetic_trajectories
from shoparena.corpus.rewrite import Engines, rewrite_file
from shoparena.corpus.rewriters import ReferenceRewriter, make_engines
from shoparena.judge.offline import OfflineJudge


class Timed:
    """Wraps a callable and adds up the seconds spent in it."""

    def __init__(self, inner):
        self.inner = inner
        self.seconds = 0.0
        self.name = getattr(inner, "name", "judge")

    def __call__(self, *args):
        started = time.perf_counter()
        try:
            return self.inner(*args)
        finally:
            self.seconds += time.perf_counter() - started

    def close(self) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="trajectories to read")
    parser.add_argument("--workers", type=int, default=2, help="also run with this many processes")
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        source, size = synthetic_trajectories(root, args.n, console.print)
        rewriter, judge = Timed(ReferenceRewriter()), Timed(OfflineJudge())
        started = time.perf_counter()
        report = rewrite_file(
            [source],
            root / "rewritten.jsonl",
            lambda: Engines(rewriter, judge),
            rejects=root / "rejects.jsonl",
        )
        wall = time.perf_counter() - started
        out_size = (root / "rewritten.jsonl").stat().st_size
        parallel = None
        if args.workers > 1:
            started = time.perf_counter()
            parallel = rewrite_file(
                [source],
                root / "rewritten-parallel.jsonl",
                partial(make_engines, "reference", "offline"),
                workers=args.workers,
            )
            parallel_wall = time.perf_counter() - started
            same = (root / "rewritten.jsonl").read_bytes() == (root / "rewritten-parallel.jsonl").read_bytes()
    table = Table(title=f"corpus rewrite · {report.read:,} trajectories ({size / 1e6:.0f} MB) · 1 process")
    for column in ("measure", "value"):
        table.add_column(column, justify="right" if column == "value" else "left")
    rest = wall - rewriter.seconds - judge.seconds
    table.add_row("wall", f"{wall:.2f} s")
    table.add_row("trajectories read / s", f"{report.read / wall:,.0f}")
    table.add_row("rows rewritten / s", f"{report.rewritten / wall:,.0f}")
    table.add_row(
        "rewritten / left alone", f"{report.rewritten:,} / {report.rejected.get('not_axis_b', 0):,}"
    )
    table.add_row(
        "other rejects", str({k: v for k, v in report.rejected.items() if k != "not_axis_b"} or "none")
    )
    table.add_row("judge quality of the rows", str(dict(sorted(report.qualities.items()))))
    table.add_row("time in the rewriter", f"{rewriter.seconds:.2f} s ({rewriter.seconds / wall:.0%})")
    table.add_row("time in the judge", f"{judge.seconds:.2f} s ({judge.seconds / wall:.0%})")
    table.add_row("parse, assemble, check, write", f"{rest:.2f} s ({rest / wall:.0%})")
    table.add_row("output", f"{out_size / 1e6:.0f} MB")
    if parallel is not None:
        table.add_row(
            f"{args.workers} workers: rows rewritten / s",
            f"{parallel.rewritten / parallel_wall:,.0f} ({parallel_wall:.2f} s; output identical: {same})",
        )
    console.print(table)


if __name__ == "__main__":
    main()
