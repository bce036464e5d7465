"""How long `shoparena` takes to start: `--help`, `--version` and a few simple commands, each run N times
as a fresh process (median wall time and median CPU time, user + system, of the child), old against new in
one run.

    python bench/cli_startup.py                      # this checkout against 690ffc1 (the last commit
                                                     # before the lazy CLI), 7 runs each
    python bench/cli_startup.py --old '' --runs 15   # this checkout only

The old revision is checked out once as a detached git worktree under /tmp (kept for later runs) and
run from there with PYTHONPATH, so both sides use the same interpreter and packages. CPU time is the
steadier figure on a shared machine: wall time includes waiting for a core. The load average before
and after is printed with the results (and written to bench/out/cli_startup.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENTRY = "import sys; from shoparena.cli import main; sys.exit(main())"  # what the `shoparena` script runs
COMMANDS = [
    ["--help"],
    ["--version"],
    ["tools"],
    ["keys", "show", "--help"],
    ["train", "sft", "--help"],
    ["eval", "--help"],
]


def checkout(rev: str) -> Path:
    """A detached worktree of `rev` under /tmp, made once."""
    path = Path(tempfile.gettempdir()) / f"shoparena-cli-startup-{rev}"
    if not (path / "shoparena" / "cli").is_dir():
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), rev],
            check=True,
            capture_output=True,
        )
    return path


def run_once(source: Path, args: list[str]) -> tuple[float, float, int]:
    """(wall s, child CPU s, exit code) of one fresh `shoparena ARGS` from `source`."""
    env = {**os.environ, "PYTHONPATH": str(source), "COLUMNS": "100", "NO_COLOR": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", ENTRY, *args], env=env, capture_output=True, cwd=tempfile.gettempdir()
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def _line(row: dict) -> str:
    codes = ",".join(str(code) for code in row["exit_codes"])
    return f"| `{row['command']}` | {row['source']} | {row['wall_median_s']:.3f} | {row['cpu_median_s']:.3f} | {codes} |"


def measure(sources: dict[str, Path], runs: int) -> list[dict]:
    """Per command and source: median wall and CPU over `runs` (the sides interleaved run by run); each
    row printed as soon as it is measured."""
    print("| command | source | wall (s) | CPU (s) | exit |")
    print("|---|---|---:|---:|---|", flush=True)
    rows = []
    for args in COMMANDS:
        samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in sources}
        for _ in range(runs):
            for name, source in sources.items():
                samples[name].append(run_once(source, args))
        for name, taken in samples.items():
            rows.append(
                {
                    "command": "shoparena " + " ".join(args),
                    "source": name,
                    "runs": runs,
                    "wall_median_s": round(statistics.median(s[0] for s in taken), 3),
                    "cpu_median_s": round(statistics.median(s[1] for s in taken), 3),
                    "exit_codes": sorted({s[2] for s in taken}),
                }
            )
            print(_line(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--old", default="690ffc1", help="git revision to compare against ('' for none)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "cli_startup.json")
    options = parser.parse_args()

    sources = {"new": ROOT}
    if options.old:
        sources = {f"old ({options.old})": checkout(options.old), **sources}
    load_before = os.getloadavg()
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {machine}; load {load_before[0]:.2f}; median of {options.runs} runs\n",
        flush=True,
    )
    rows = measure(sources, options.runs)
    load_after = os.getloadavg()
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    loads = f"{load_before[0]:.2f} before, {load_after[0]:.2f} after (1-min load average)"
    print(f"\nload: {loads}")
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(
        json.dumps({"date": when, "machine": machine, "load": loads, "rows": rows}, indent=2) + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
