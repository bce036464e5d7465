"""The closed loop on this machine: `shoparena loop` (the demo's settings unless a config is given), timed
per stage, then an unchanged re-run (what resuming a finished loop costs).

    .venv/bin/python bench/loop_bench.py
    .venv/bin/python bench/loop_bench.py --config configs/loop/gpu.yaml --out runs/loop-bench

What is measured: wall seconds per stage (season, firehose, corpus, train — the five stages and the
held-out evaluation of each checkpoint —, season agents, final race, report), the season's episodes,
the corpus' funnel, the final race's placement, and the re-run's wall time (every stage resumed). The
machine's load average at start and end is reported: the standard machine is shared. Results: a table
on stdout and bench/out/loop_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from shoparena.cli.common import quiet_libraries
from shoparena.loop.config import LoopConfig
from shoparena.loop.runner import run_loop

OUT_DIR = Path(__file__).resolve().parent / "out"
console = Console()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", type=Path, default=None, help="Loop config [default: the demo's].")
    parser.add_argument("--out", type=Path, default=None, help="Loop directory [default: a new temp dir].")
    args = parser.parse_args()
    quiet_libraries()
    config = LoopConfig.from_file(args.config)
    out = args.out or Path(tempfile.mkdtemp(prefix="loop-bench-")) / "loop"

    load_start = os.getloadavg()
    started = time.perf_counter()
    result = run_loop(config, out, lambda line: console.print(line, highlight=False, markup=False))
    wall_s = time.perf_counter() - started
    started = time.perf_counter()
    again = run_loop(config, out, lambda _line: None)
    rerun_s = time.perf_counter() - started
    load_end = os.getloadavg()

    table = Table(title=f"shoparena loop ({args.config or 'demo settings'})")
    table.add_column("stage")
    table.add_column("seconds", justify="right")
    table.add_column("share", justify="right")
    for stage in result.stages:
        table.add_row(stage.stage, f"{stage.seconds:.1f}", f"{stage.seconds / wall_s:.0%}")
    report_s = wall_s - sum(stage.seconds for stage in result.stages)
    table.add_row("report (and bookkeeping)", f"{report_s:.1f}", f"{report_s / wall_s:.0%}")
    table.add_row("total", f"{wall_s:.1f}", "100%")
    console.print(table)
    console.print(
        f"unchanged re-run: {rerun_s:.1f} s ({sum(s.resumed for s in again.stages)} of {len(again.stages)} "
        f"stages resumed); load {load_start[0]:.1f} → {load_end[0]:.1f} on {os.cpu_count()} cores"
    )
    summaries = {stage.stage: stage.summary for stage in result.stages}
    record = {
        "benchmark": "loop",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "load_average": {"start": load_start, "end": load_end},
        "config": str(args.config) if args.config else "embedded demo defaults",
        "wall_s": round(wall_s, 2),
        "stages_s": {stage.stage: round(stage.seconds, 2) for stage in result.stages},
        "report_s": round(report_s, 2),
        "rerun_s": round(rerun_s, 2),
        "summaries": summaries,
        "out": str(out),
    }
    OUT_DIR.mkdir(exist_ok=True)
    (OUT_DIR / "loop_bench.json").write_text(json.dumps(record, indent=2, default=str) + "\n")
    console.print(f"wrote {OUT_DIR / 'loop_bench.json'}")


if __name__ == "__main__":
    main()
