"""`make demo`: the closed loop on its embedded defaults (`shoparena loop --out demo-out/loop`).

An eight-miner, two-validator (one dishonest), three-day arena season on a simulated clock → its
judged firehose → a corpus → every post-training stage for a couple of steps on a tiny random Qwen3 →
the distilled checkpoint served and raced against the season's agents → `demo-out/loop/report.html`.
Two to three minutes on a 2-core machine after the install; re-running resumes (delete demo-out/ to start
over; SHOPARENA_DEMO_DIR moves it). The small parts — a 3,000-product catalogue, 3 problems per race
and per qualifying run, 4 held-out problems, a ~271k-parameter model trained for 2 steps per stage —
are what make it fit: the numbers show the plumbing end to end, not learning.

`python -m shoparena.tour` is the older per-component tour (catalogue, search, harness, scoring,
reference agents, store, corpus)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rich.rule import Rule

from shoparena.cli.common import console, quiet_libraries, say

DEMO_DIR = Path(os.environ.get("SHOPARENA_DEMO_DIR", "demo-out"))


def rule(title: str) -> None:
    """A titled rule across the terminal (100 columns when the output is not a terminal)."""
    console.print(Rule(title), width=None if console.is_terminal else 100)


def main() -> int:
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__)
        return 0
    from shoparena.loop.config import LoopConfig
    from shoparena.loop.runner import LoopError, run_loop

    quiet_libraries()
    out = DEMO_DIR / "loop"
    rule("shoparena demo · the closed loop: season → firehose → corpus → training → race")
    try:
        result = run_loop(LoopConfig(), out, say)
    except LoopError as exc:
        say(f"[red]the loop stopped:[/] {exc}")
        return 1
    rule(f"done in {result.seconds:.0f} s")
    say(f"report: {result.report_html.resolve() if result.report_html else '-'}")
    say(f"        {result.report_md.resolve() if result.report_md else '-'}")
    say(
        "re-run `make demo` to resume (finished stages are skipped); "
        f"`.venv/bin/shoparena arena serve --dir {out}/06-final-race/arena` serves the final arena's leaderboard"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
