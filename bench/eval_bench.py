"""Eval runner throughput: episodes/s of `run_eval` with `reference:pipeline` (no model) on a 100k catalogue,
or with a miner file, sandboxed and not.

    .venv/bin/python bench/eval_bench.py                       # 100k products, 300 problems, 1 and 2 workers
    .venv/bin/python bench/eval_bench.py --problems 600 --workers 1,2,4
    .venv/bin/python bench/eval_bench.py --catalog /tmp/shoparena-bench/cat-100000
    .venv/bin/python bench/eval_bench.py --agent file:tests/agents/miners/good_miner.py --sandbox bwrap,none \
        --problems 100

With a miner file (`file:PATH`) every setting runs once per `--sandbox` backend, so the sandbox's cost
per episode is the difference between the `bwrap` and `none` rows.

What is measured is the harness plus the runner: worker dispatch, every tool call of the pipeline
agent (BM25 searches, product pages, match checks), rule scoring (lexical similarity), building the
trajectory record and appending it to trajectories.jsonl. Two rates per setting:
- steady: episodes/s between the first and the last finished episode (the pool's throughput);
- end to end: episodes / the whole `run_eval` call (worker start-up, final metrics with bootstrap).
For the inline executor also CPU ms per episode (agent build and metrics included), which a busy
shared machine moves much less than the rates: compare code by it.
Target: steady ≥ 50 episodes/s with 2 workers on 2 cores. Results: a table on stdout and
bench/out/eval_bench-<size>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from bench.common import bench_catalogue
from shoparena.eval.config import EvalConfig
from shoparena.eval.runner import run_eval
from shoparena.index.catalog_dir import open_catalog, read_meta
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems

TARGET_EPISODES_PER_S = 50.0
console = Console(width=max(120, Console().width))


def _cpu_s() -> float:
    """CPU seconds of this process: all of an inline run's work (a pool's workers are the forkserver's
    children, out of reach of getrusage, so pools get no CPU figure)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def one_setting(
    catalog: Path,
    problems_path: Path,
    executor: str,
    workers: int,
    samples: int,
    agent: str = "reference:pipeline",
    sandbox: str | None = None,
) -> dict:
    finished: list[float] = []

    def progress(state) -> None:
        if state.done > state.resumed:
            finished.append(time.perf_counter())

    out = Path(tempfile.mkdtemp(prefix="eval-bench-"))
    cpu_before = _cpu_s()
    try:
        started = time.perf_counter()
        result = run_eval(
            EvalConfig(
                catalog=catalog,
                problems=problems_path,
                agent=agent,
                out=out,
                samples=samples,
                workers=workers,
                executor=executor,
                similarity="lexical",
                bootstrap=1000,
                **({"sandbox": sandbox} if sandbox else {}),
            ),
            progress=progress,
        )
        wall = time.perf_counter() - started
        size = (out / "trajectories.jsonl").stat().st_size
    finally:
        shutil.rmtree(out, ignore_errors=True)
    n = result.episodes_run
    cpu = _cpu_s() - cpu_before
    steady = (len(finished) - 1) / (finished[-1] - finished[0]) if len(finished) > 2 else None
    return {
        "executor": executor,
        "workers": workers,
        "sandbox": sandbox,
        "episodes": n,
        "steady_episodes_per_s": round(steady, 2) if steady else None,
        "end_to_end_episodes_per_s": round(n / wall, 2),
        "wall_s": round(wall, 2),
        "cpu_ms_per_episode": round(cpu * 1000 / max(n, 1), 2) if executor == "inline" else None,
        "first_episode_after_s": round(finished[0] - started, 2) if finished else None,
        "asr": result.metrics["headline"]["asr"]["value"],
        "mean_episode_s": result.metrics["timing"]["mean_episode_s"],
        "trajectory_bytes_per_episode": round(size / max(n, 1)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--catalog", help="Use this catalogue directory.")
    parser.add_argument(
        "--problems", type=int, default=300, help="Generated problems (product/shop/voucher)."
    )
    parser.add_argument("--samples", type=int, default=1)
    parser.add_argument("--workers", default="1,2", help="Comma-separated worker counts (process pool).")
    parser.add_argument("--inline", action="store_true", help="Also time the inline executor.")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--agent", default="reference:pipeline", help="The agent spec (e.g. file:MINER.py).")
    parser.add_argument("--sandbox", default="bwrap,none", help="file: agents: comma-separated backends.")
    args = parser.parse_args()

    catalog = bench_catalogue(args.products, args.catalog, "eval", console)
    backend = open_catalog(catalog)
    try:
        problems = ProblemGenerator(backend, seed=args.seed).generate(args.problems)
    finally:
        backend.close()
    work = Path(tempfile.mkdtemp(prefix="eval-bench-problems-"))
    problems_path = work / "problems.jsonl"
    write_problems(problems_path, problems)

    settings = [("process", int(w)) for w in args.workers.split(",")]
    if args.inline:
        settings.insert(0, ("inline", 1))
    sandboxes = args.sandbox.split(",") if args.agent.startswith("file:") else [None]
    rows = [
        one_setting(catalog, problems_path, executor, workers, args.samples, args.agent, sandbox)
        for executor, workers in settings
        for sandbox in sandboxes
    ]
    shutil.rmtree(work, ignore_errors=True)

    n_products = read_meta(catalog).n_products
    table = Table(
        title=f"eval runner · {args.agent} · {n_products:,} products · {len(problems)} problems × {args.samples}"
    )
    for column in (
        "executor",
        "workers",
        "sandbox",
        "episodes",
        "steady ep/s",
        "end-to-end ep/s",
        "wall s",
        "CPU ms/episode",
        "first after s",
        "ASR",
        "bytes/episode",
    ):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(
            row["executor"],
            str(row["workers"]),
            row["sandbox"] or "-",
            str(row["episodes"]),
            f"{row['steady_episodes_per_s']}",
            f"{row['end_to_end_episodes_per_s']}",
            f"{row['wall_s']}",
            f"{row['cpu_ms_per_episode']}",
            f"{row['first_episode_after_s']}",
            f"{row['asr']:.3f}",
            f"{row['trajectory_bytes_per_episode']:,}",
        )
    console.print(table)
    two = next((r for r in rows if r["executor"] == "process" and r["workers"] == 2), None)
    if two is not None and two["steady_episodes_per_s"] and args.agent == "reference:pipeline":
        verdict = "meets" if two["steady_episodes_per_s"] >= TARGET_EPISODES_PER_S else "misses"
        console.print(
            f"2 workers: {two['steady_episodes_per_s']} episodes/s steady — {verdict} the target of {TARGET_EPISODES_PER_S}"
        )

    out_dir = Path(__file__).resolve().parent / "out"
    out_dir.mkdir(exist_ok=True)
    report = {
        "benchmark": "eval_bench",
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "products": n_products,
        "catalog": str(catalog),
        "problems": len(problems),
        "samples": args.samples,
        "agent": args.agent,
        "similarity": "lexical",
        "target_episodes_per_s_2_workers": TARGET_EPISODES_PER_S,
        "results": rows,
    }
    tag = "" if args.agent == "reference:pipeline" else "-" + Path(args.agent.partition(":")[2]).stem
    path = out_dir / f"eval_bench-{n_products}{tag}.json"
    path.write_text(json.dumps(report, indent=2))
    console.print(f"wrote {path}")


if __name__ == "__main__":
    main()
