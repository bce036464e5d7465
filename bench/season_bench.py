"""A whole season on this machine: `shoparena arena simulate` with 12 miners × 3 validators × 5 days.

    .venv/bin/python bench/season_bench.py
    .venv/bin/python bench/season_bench.py --miners 12 --validators 3 --days 5 --seed 0

What is measured: the season's wall time, episodes (one miner run on one problem, sandboxed, scored
strict and judged) per second, where the time goes per phase (setup: catalogue, problem bank, arena
init, race bank, keys; submit: signed submissions + admission; qualifying and race: validators
claiming and evaluating jobs, three at once; close: combining, promotion, weights, chain; write: the
season file), per day, and the CPU this process used (the server, the validators' threads, scoring, the
judge; the sandboxed miner processes are not among its waited-for children, so not counted). The machine's load average at start and end is reported: the standard machine is
shared. Results: a table on stdout and bench/out/season_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from shoparena.season.driver import Season
from shoparena.season.setup import SeasonSettings

OUT_DIR = Path(__file__).resolve().parent / "out"
console = Console()


def cpu_s() -> dict:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return {"self": own.ru_utime + own.ru_stime}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--miners", type=int, default=12)
    parser.add_argument("--validators", type=int, default=3)
    parser.add_argument("--days", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--dir", type=Path, default=None, help="Arena directory [default: a new temp dir].")
    args = parser.parse_args()

    load_start = os.getloadavg()
    cpu_start = cpu_s()
    settings = SeasonSettings(
        miners=args.miners, validators=args.validators, days=args.days, seed=args.seed, sandbox=args.sandbox
    )
    arena_dir = args.dir or Path(tempfile.mkdtemp(prefix="season-bench-")) / "arena"

    def show(day) -> None:
        console.print(
            f"day {day.day}: {day.race_id} {day.state} · {day.episodes} episodes · {day.qualifying_jobs} "
            f"qualifying + {day.race_jobs} race jobs · {day.wall_s:.1f} s"
        )

    started = time.perf_counter()
    season = Season(arena_dir, settings, progress=show).run()
    wall_s = time.perf_counter() - started
    cpu_end = cpu_s()
    load_end = os.getloadavg()
    season.write(arena_dir.parent / "season.json")
    timing = season.timing
    assert timing is not None

    table = Table(title=f"season: {args.miners} miners × {args.validators} validators × {args.days} days")
    table.add_column("phase")
    table.add_column("seconds", justify="right")
    table.add_column("share", justify="right")
    for phase, seconds in timing.phases.items():
        table.add_row(phase, f"{seconds:.1f}", f"{seconds / wall_s:.0%}")
    table.add_row("total", f"{wall_s:.1f}", "100%")
    console.print(table)
    console.print(
        f"{timing.episodes} episodes, {timing.episodes / wall_s:.2f}/s; CPU of this process "
        f"{cpu_end['self'] - cpu_start['self']:.0f} s; "
        f"load {load_start[0]:.1f} → {load_end[0]:.1f} on {os.cpu_count()} cores"
    )
    result = {
        "benchmark": "season",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "load_average": {"start": load_start, "end": load_end},
        "settings": settings.model_dump(),
        "sandbox": season.sandbox,
        "wall_s": round(wall_s, 2),
        "episodes": timing.episodes,
        "episodes_per_s": round(timing.episodes / wall_s, 3),
        "phases_s": timing.phases,
        "cpu_s": {k: round(cpu_end[k] - cpu_start[k], 1) for k in cpu_end},
        "days": [
            {"day": d.day, "episodes": d.episodes, "qualifying_jobs": d.qualifying_jobs, "race_jobs": d.race_jobs,
             "wall_s": d.wall_s, "state": d.state, "promoted": d.promoted}
            for d in season.progress
        ],
        "submissions": len(season.submissions),
        "races": [(r.race_id, r.state, len(r.results)) for r in season.races],
        "dishonest_gained_nothing": season.dishonest.gained_nothing if season.dishonest else None,
        "arena_dir": str(arena_dir),
    }  # fmt: skip
    OUT_DIR.mkdir(exist_ok=True)
    (OUT_DIR / "season_bench.json").write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"wrote {OUT_DIR / 'season_bench.json'}")


if __name__ == "__main__":
    main()
