"""Arena public API: the leaderboard, the firehose and the page under 50 concurrent loopback clients.

    .venv/bin/python bench/arena_public_bench.py [--miners 12] [--records 400] [--seconds 15]

The arena is real and its competition is played, not faked: `--miners` miners each submit the benign
miner (tests/agents/miners/good_miner.py), three validators evaluate the qualifying jobs through the
job layer (posting records re-cast from one real run of that miner), then two races run to completion
(so the leaderboard has every miner, two races, consensus weights). The store is then filled with
copies of real trajectory records up to `--records`. The server is `shoparena arena serve` in its own
process (one uvicorn worker, h11; what it mounts by default: `CompetitionView` over the arena), and
the load generator — 50 keep-alive connections spoken by hand over asyncio (bench.arena_bench's) —
runs in this one.

Phases, each `--seconds` long:
- `GET /v1/leaderboard` (the standings; `CompetitionView` caches them while the data they read is
  unchanged, and nothing is written during the phases, so after the first request they are hits);
- `GET /v1/trajectories?since=…&limit=100` (each client walks the firehose page by page with the
  cursors the API hands out, from the start again at the head);
- `GET /` (the leaderboard page: leaderboard + 10 races, both cached the same way, rendered).
Reported: requests/s, p50/p95/p99, the server's CPU time per request and share of a core, MB/s for the
firehose. Results: a table on stdout and bench/out/arena_public_bench.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import psutil
from rich.console import Console
from rich.table import Table

from bench.arena_bench import Connection, free_port, start_server
from bench.common import percentiles
from shoparena.arena.competition.engine import RaceEngine
from shoparena.index.catalog_dir import build_synthetic, open_catalog
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from shoparena.records.trajectory import TrajectoryRecord
from tests.arena.competition.race_helpers import by_miner, make_racing
from tests.arena.job_helpers import BENIGN_AGENT, EVALUATION

PAGE = 100


def real_records(catalog_dir: Path, bank: Path, out: Path) -> list[TrajectoryRecord]:
    """One real run of the benign miner over the race bank (no sandbox: it is our own file)."""
    from shoparena.eval.config import EvalConfig
    from shoparena.eval.run_dir import TRAJECTORIES_FILE, read_trajectories
    from shoparena.eval.runner import run_eval
    from shoparena.judge import OfflineJudge

    config = EvalConfig(
        catalog=catalog_dir,
        problems=bank,
        agent=f"file:{BENIGN_AGENT}",
        out=out,
        mode="strict",
        similarity=EVALUATION["similarity"],
        timeout=60,
        bootstrap=0,
        sandbox="none",
    )
    run_eval(config, judge=OfflineJudge())
    return read_trajectories(out / TRAJECTORIES_FILE).records


def play_season(work: Path, miners: int, records_wanted: int, console: Console) -> tuple[Path, dict]:
    build_synthetic(work / "cat", 500, seed=1, workers=1)
    catalog = open_catalog(work / "cat")
    generator = ProblemGenerator(catalog, seed=11)
    write_problems(work / "bank.jsonl", generator.generate(3, buckets=("product", "shop", "voucher")))
    write_problems(work / "race_bank.jsonl", generator.generate(8, buckets=("product", "shop", "voucher")))
    catalog.close()
    records = real_records(work / "cat", work / "race_bank.jsonl", work / "run")
    racing = make_racing(
        work,
        work / "cat",
        work / "bank.jsonl",
        work / "race_bank.jsonl",
        records,
        miners=miners,
        validators=3,
    )
    started = time.perf_counter()
    for index, miner in enumerate(racing.miners):
        racing.submit(miner, name=f"bench-miner-{index}", tweak=f"\n# miner {index}\n")
    racing.drain()
    engine = RaceEngine(racing.arena, clock=racing.clock, board=racing.board)
    rates = {miner.hotkey: (index % 5) / 4 for index, miner in enumerate(racing.miners)}
    for _race in range(2):
        engine.open_race()
        engine.start_race()
        racing.drain(outcome=by_miner(rates))
        racing.clock.advance(minutes=5)
        engine.close_race()
        racing.clock.advance(hours=1)
    played_s = time.perf_counter() - started
    store = racing.arena.store
    stored = list(store.records())
    index = 0
    while store.count() < records_wanted:
        base = stored[index % len(stored)]
        batch = [
            base.model_copy(update={"record_id": TrajectoryRecord.make_id(f"bench-{index}", "copy", n)})
            for n in range(min(50, records_wanted - store.count()))
        ]
        store.ingest(batch).raise_for_conflicts()
        index += 1
    total = store.count()
    racing.arena.close()
    console.print(f"season played in {played_s:.1f} s: {miners} miners, 2 races; store holds {total} records")
    return work / "arena", {"records": total, "season_s": played_s}


def cursors(url: str) -> list[str]:
    """Every page's `since`, as a follower would be handed them ("" = the start)."""
    found, since = [""], ""
    with httpx.Client(base_url=url, trust_env=False) as http:
        while True:
            response = http.get("/v1/trajectories", params={"since": since, "limit": PAGE})
            response.raise_for_status()
            if response.headers["X-More"] != "true":
                return found
            since = response.headers["X-Next-Cursor"]
            found.append(since)


async def load(port: int, paths: list[str], concurrency: int, seconds: float):
    """Each client requests `paths` in turn (offset by its index) until time is up."""
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    sizes: list[int] = []
    stop = time.perf_counter() + seconds

    async def worker(connection: Connection, offset: int) -> None:
        turn = offset
        while time.perf_counter() < stop:
            path = paths[turn % len(paths)]
            turn += 1
            started = time.perf_counter()
            status, content = await connection.request("GET", path, {})
            latencies.append(time.perf_counter() - started)
            statuses[status] = statuses.get(status, 0) + 1
            sizes.append(len(content))

    connections = [Connection(port) for _ in range(concurrency)]
    started = time.perf_counter()
    await asyncio.gather(*(worker(connections[i], i) for i in range(concurrency)))
    wall = time.perf_counter() - started
    for connection in connections:
        connection.close()
    return latencies, statuses, sizes, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--miners", type=int, default=12)
    parser.add_argument("--records", type=int, default=400, help="trajectory records in the store")
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=15.0, help="duration of each phase")
    args = parser.parse_args()
    console = Console(width=160)
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="arena-public-bench-"))
    arena_dir, built = play_season(work, args.miners, args.records, console)
    port = free_port()
    server = start_server(arena_dir, port)
    process = psutil.Process(server.pid)

    def cpu_s() -> float:
        times = process.cpu_times()
        return times.user + times.system

    url = f"http://127.0.0.1:{port}"
    phases = {
        "GET /v1/leaderboard": ["/v1/leaderboard"],
        f"GET /v1/trajectories (limit {PAGE})": [
            f"/v1/trajectories?limit={PAGE}" + (f"&since={since}" if since else "") for since in cursors(url)
        ],
        "GET / (page)": ["/"],
    }
    rows = []
    try:
        entries = len(httpx.get(f"{url}/v1/leaderboard", trust_env=False).json())
        for name, paths in phases.items():
            cpu0 = cpu_s()
            latencies, statuses, sizes, wall = asyncio.run(load(port, paths, args.concurrency, args.seconds))
            cpu = cpu_s() - cpu0
            rows.append({
                "phase": name, **percentiles(latencies), "statuses": statuses, "per_s": len(latencies) / wall,
                "mb_s": sum(sizes) / wall / 1e6, "mean_body_kb": sum(sizes) / len(sizes) / 1000,
                "server_cpu_ms_per_request": cpu / len(latencies) * 1000, "server_cpu_share": cpu / wall,
            })  # fmt: skip
    finally:
        server.terminate()
        server.wait(30)
    table = Table(
        title=f"arena public API · {args.concurrency} concurrent loopback clients · {entries} ranked · "
        f"{built['records']} records"
    )
    columns = ("phase", "requests", "req/s", "p50 ms", "p95 ms", "p99 ms", "body KB", "MB/s",
               "server CPU ms/req", "server CPU share", "statuses")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column in ("phase", "statuses") else "right")
    for row in rows:
        table.add_row(row["phase"], f"{row['n']:,}", f"{row['per_s']:,.0f}", f"{row['p50_ms']:.1f}",
                      f"{row['p95_ms']:.1f}", f"{row['p99_ms']:.1f}", f"{row['mean_body_kb']:.1f}",
                      f"{row['mb_s']:.1f}", f"{row['server_cpu_ms_per_request']:.2f}",
                      f"{row['server_cpu_share']:.0%}", json.dumps(row["statuses"]))  # fmt: skip
    console.print(table)
    load_after = os.getloadavg()
    console.print(
        f"load average (1 min) before {load_before[0]:.1f}, after {load_after[0]:.1f} on {psutil.cpu_count()} CPUs"
    )
    out = Path(__file__).parent / "out" / "arena_public_bench.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({
        "when": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.platform(),
        "cpus": psutil.cpu_count(), "python": platform.python_version(), "args": vars(args),
        "arena": {**built, "ranked": entries}, "phases": rows,
        "loadavg_before": load_before, "loadavg_after": load_after,
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
