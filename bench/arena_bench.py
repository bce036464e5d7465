"""Arena API: signature verification, then the real server under 50 concurrent loopback clients.

    .venv/bin/python bench/arena_bench.py                          # SQLite state + SQLite nonces
    .venv/bin/python bench/arena_bench.py --redis redis://127.0.0.1:6379/0 \
        --pg postgresql://postgres@127.0.0.1:5432/postgres         # Redis nonces, PostgreSQL state

What is timed:
- sr25519 verification of one request's signature (the server's `Keypair(ss58).verify` over the
  version-2 message `shoparena-sig-v2\nMETHOD\ntarget\nhotkey:timestamp:nonce:sha256(body)`, body
  1 KiB), and the client's signing, one core; beside it, in the same loop, the same operations over the
  version-1 message `hotkey:timestamp:nonce:sha256(body)` that signed no method or target (issue 22).
- signed submissions: `--miners` registered hotkeys (one submission each: the cooldown allows no more),
  sent by 50 concurrent clients; latency per request, then a check that every 202 is in the ledger
  with its code stored (nothing lost). Admission is whatever `shoparena.admission` holds.
- status reads: 50 concurrent clients, each reading its own submission (`GET
  /v1/miner/submissions/{id}`, signed, a fresh nonce each) for `--seconds`; requests/s and latency.
The server is `shoparena arena serve` in its own process (one uvicorn worker); the load generator
(asyncio with a hand-written keep-alive HTTP/1.1 client, signing every request) runs in this one, so on a 2-core machine they share the CPU.
The server's CPU time per request (and the share of a core it got) is reported beside the wall-clock
figures: on a busy shared machine the latter say more about the neighbours than about the server.
Targets: verification ≤ 1 ms; status reads ≥ 500 requests/s. Results: a table on stdout and
bench/out/arena_bench.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import orjson
import psutil
from rich.console import Console
from rich.table import Table

from bench.common import percentiles
from shoparena.arena import init_arena, open_arena
from shoparena.arena.auth.keys import keypair_from_seed, new_key_file, public_keypair
from shoparena.arena.auth.signing import body_sha256, request_target, signed_headers, signing_message
from shoparena.index.catalog_dir import build_synthetic, open_catalog
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems

AGENT = b'''"""Benchmark agent."""

import re


def agent_main(problem_data):
    query = re.sub(r"\\s+", " ", problem_data["query"]).strip()
    return [{"tool": "find_product", "args": {"q": query}}]
'''


def version1_message(hotkey: str, timestamp: str, nonce: str, body_digest: str) -> bytes:
    """What version 1 signed (no method, no target): kept here only to compare costs."""
    return f"{hotkey}:{timestamp}:{nonce}:{body_digest}".encode()


TARGET = "/v1/miner/submissions/0123456789abcdef0123456789abcdef"


def verification(n: int) -> dict:
    """Both message versions timed in one loop, alternating, over the same key and body."""
    keypair = keypair_from_seed(new_key_file().secret_seed)
    hotkey = keypair.ss58_address
    body = os.urandom(1024)
    times: dict[str, list[float]] = {}
    messages = {
        "v1": lambda i, digest: version1_message(hotkey, str(1_700_000_000 + i), f"n{i}", digest),
        "v2": lambda i, digest: signing_message(
            "GET", request_target(TARGET), hotkey, str(1_700_000_000 + i), f"n{i}", digest
        ),
    }
    for i in range(n):
        for version, message_of in messages.items():
            message = message_of(i, body_sha256(body))
            started = time.perf_counter()
            signature = keypair.sign(message)
            times.setdefault(f"sign {version}", []).append(time.perf_counter() - started)
            started = time.perf_counter()
            assert public_keypair(hotkey).verify(message, signature)
            times.setdefault(f"verify {version}", []).append(time.perf_counter() - started)
            started = time.perf_counter()  # what the server does per request: hash, rebuild, verify
            assert public_keypair(hotkey).verify(message_of(i, body_sha256(body)), signature)
            times.setdefault(f"hash+verify (1 KiB) {version}", []).append(time.perf_counter() - started)
    return {name: percentiles(values) for name, values in sorted(times.items())}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(arena_dir: Path, port: int) -> subprocess.Popen:
    command = [sys.executable, "-c", "from shoparena.cli import main; main()", "arena", "serve", "--dir",
               str(arena_dir), "--port", str(port), "--log-level", "warning"]  # fmt: skip
    # stderr to a file, never an unread pipe: a server that logs more than the pipe holds would block
    log = tempfile.TemporaryFile()  # noqa: SIM115  (lives as long as the server process)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    process.wait()
    log.seek(0)
    raise SystemExit(f"arena serve did not start: {log.read().decode(errors='replace')}")


class Connection:
    """One keep-alive HTTP/1.1 connection spoken by hand: the load generator must cost far less than
    the server it measures (httpx's async client spends ~4 ms of CPU per request here)."""

    def __init__(self, port: int):
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(
        self, method: str, path: str, headers: dict[str, str], body: bytes = b""
    ) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        fields = dict(line.split(b":", 1) for line in head.lower().split(b"\r\n")[1:] if b":" in line)
        content = await self.reader.readexactly(int(fields.get(b"content-length", b"0")))
        if fields.get(b"connection", b"").strip() == b"close":
            self.writer.close()
            self.writer = None
        return status, content

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def submissions(port: int, keys: list, concurrency: int) -> tuple[list[float], dict[int, int], dict]:
    queue: asyncio.Queue = asyncio.Queue()
    for i, key in enumerate(keys):
        queue.put_nowait((i, key))
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    ids: dict = {}

    async def worker(connection: Connection) -> None:
        while not queue.empty():
            i, key = queue.get_nowait()
            body = orjson.dumps({"name": f"bench-{i}", "code": (AGENT + f"# miner {i}\n".encode()).decode()})
            headers = signed_headers(key, "POST", "/v1/miner/submit", body)
            started = time.perf_counter()
            status, content = await connection.request("POST", "/v1/miner/submit", headers, body)
            latencies.append(time.perf_counter() - started)
            statuses[status] = statuses.get(status, 0) + 1
            if status == 202:
                ids[key.ss58_address] = orjson.loads(content)["submission_id"]

    connections = [Connection(port) for _ in range(concurrency)]
    await asyncio.gather(*(worker(connection) for connection in connections))
    for connection in connections:
        connection.close()
    return latencies, statuses, ids


async def status_reads(port: int, owners: list, ids: dict, concurrency: int, seconds: float):
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    stop = time.perf_counter() + seconds

    async def worker(connection: Connection, key) -> None:
        path = f"/v1/miner/submissions/{ids[key.ss58_address]}"
        while time.perf_counter() < stop:
            headers = signed_headers(key, "GET", path, b"")
            started = time.perf_counter()
            status, content = await connection.request("GET", path, headers)
            latencies.append(time.perf_counter() - started)
            statuses[status] = statuses.get(status, 0) + 1
            assert status != 200 or orjson.loads(content)["status"] == "queued"

    connections = [Connection(port) for _ in range(concurrency)]
    started = time.perf_counter()
    await asyncio.gather(*(worker(connections[i], owners[i % len(owners)]) for i in range(concurrency)))
    wall = time.perf_counter() - started
    for connection in connections:
        connection.close()
    return latencies, statuses, wall


def run_server_bench(work: Path, label: str, keys: list, args, **settings) -> dict:
    arena_dir = work / f"arena-{label}"
    arena = init_arena(arena_dir, work / "cat", work / "bank.jsonl", **settings)
    for key in keys:
        arena.metagraph.register(key.ss58_address, "miner")
    arena.close()
    port = free_port()
    server = start_server(arena_dir, port)
    process = psutil.Process(server.pid)

    def cpu_s(of: psutil.Process = process) -> float:
        times = of.cpu_times()
        return times.user + times.system

    me = psutil.Process()

    try:
        cpu0, started, client0 = cpu_s(), time.perf_counter(), cpu_s(me)
        sub_latencies, sub_statuses, ids = asyncio.run(submissions(port, keys, args.concurrency))
        sub_wall, cpu1, client1 = time.perf_counter() - started, cpu_s(), cpu_s(me)
        read_latencies, read_statuses, read_wall = asyncio.run(
            status_reads(port, keys[: args.concurrency], ids, args.concurrency, args.seconds)
        )
        cpu2, client2 = cpu_s(), cpu_s(me)
    finally:
        server.terminate()
        server.wait(30)
    with open_arena(arena_dir) as opened:  # nothing lost: every 202 is in the ledger, its code stored
        stored = {s.submission_id for key in keys for s in opened.ledger.list_for(key.ss58_address)}
        missing_code = sum(not opened.code.exists(opened.ledger.get(sid).code_sha256) for sid in stored)
    lost = len(set(ids.values()) - stored)
    return {
        "label": label,
        "submissions": {
            **percentiles(sub_latencies),
            "statuses": sub_statuses,
            "per_s": len(sub_latencies) / sub_wall,
            "accepted": len(ids),
            "stored": len(stored),
            "lost": lost,
            "code_missing": missing_code,
            "server_cpu_ms_per_request": (cpu1 - cpu0) / len(sub_latencies) * 1000,
            "server_cpu_share": (cpu1 - cpu0) / sub_wall,
            "client_cpu_share": (client1 - client0) / sub_wall,
        },
        "status_reads": {
            **percentiles(read_latencies),
            "statuses": read_statuses,
            "per_s": len(read_latencies) / read_wall,
            "wall_s": read_wall,
            "server_cpu_ms_per_request": (cpu2 - cpu1) / len(read_latencies) * 1000,
            "server_cpu_share": (cpu2 - cpu1) / read_wall,
            "client_cpu_share": (client2 - client1) / read_wall,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--verify-n", type=int, default=5000)
    parser.add_argument("--miners", type=int, default=500, help="registered miners, one submission each")
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=15.0, help="duration of the status-read phase")
    parser.add_argument("--redis", help="also run with the nonce store on this Redis (a scratch key prefix)")
    parser.add_argument(
        "--pg", help="also run with the state on a scratch database of this PostgreSQL (admin URL)"
    )
    args = parser.parse_args()
    console = Console(width=160)
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="arena-bench-"))
    build_synthetic(work / "cat", 500, seed=1, workers=1)
    catalog = open_catalog(work / "cat")
    write_problems(work / "bank.jsonl", ProblemGenerator(catalog, seed=1).generate(6))
    catalog.close()

    verify = verification(args.verify_n)
    keys = [keypair_from_seed(new_key_file().secret_seed) for _ in range(args.miners)]
    runs = [run_server_bench(work, "sqlite", keys, args)]
    if args.redis:
        prefix = f"arena-bench:{uuid.uuid4().hex[:8]}:"  # keys expire by themselves within 61 s
        runs.append(
            run_server_bench(
                work, "sqlite + redis nonces", keys, args, nonce_store=args.redis, nonce_prefix=prefix
            )
        )
    if args.pg:
        import psycopg

        name = f"arena_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(args.pg, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
            try:
                store = f"{args.pg.rsplit('/', 1)[0]}/{name}"
                extra = (
                    {"nonce_store": args.redis, "nonce_prefix": f"arena-bench:{uuid.uuid4().hex[:8]}:"}
                    if args.redis
                    else {}
                )
                runs.append(
                    run_server_bench(
                        work,
                        "postgresql" + (" + redis nonces" if args.redis else ""),
                        keys,
                        args,
                        store=store,
                        **extra,
                    )
                )
            finally:
                admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')

    table = Table(title=f"signatures · {args.verify_n:,} × 1 KiB bodies")
    for column in ("operation", "p50 µs", "p99 µs", "mean µs"):
        table.add_column(column, justify="left" if column == "operation" else "right")
    for name, stats in verify.items():
        table.add_row(
            name,
            f"{stats['p50_ms'] * 1000:.0f}",
            f"{stats['p99_ms'] * 1000:.0f}",
            f"{stats['mean_ms'] * 1000:.0f}",
        )
    console.print(table)
    table = Table(title=f"server · {args.concurrency} concurrent loopback clients")
    columns = ("state / nonces", "phase", "requests", "req/s", "p50 ms", "p99 ms", "server CPU ms/req",
               "server CPU share", "client CPU share", "statuses", "lost")  # fmt: skip
    for column in columns:
        table.add_column(
            column, justify="left" if column in ("state / nonces", "phase", "statuses") else "right"
        )
    for run in runs:
        for phase in ("submissions", "status_reads"):
            row = run[phase]
            table.add_row(run["label"], phase, f"{row['n']:,}", f"{row['per_s']:,.0f}", f"{row['p50_ms']:.1f}",
                          f"{row['p99_ms']:.1f}", f"{row['server_cpu_ms_per_request']:.2f}",
                          f"{row['server_cpu_share']:.0%}", f"{row['client_cpu_share']:.0%}", json.dumps(row["statuses"]),
                          str(row.get("lost", "")))  # fmt: skip
    console.print(table)
    load_after = os.getloadavg()
    console.print(
        f"load average (1 min) before {load_before[0]:.1f}, after {load_after[0]:.1f} on {psutil.cpu_count()} CPUs"
    )
    out = Path(__file__).parent / "out" / "arena_bench.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({
        "when": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.platform(),
        "cpus": psutil.cpu_count(), "python": platform.python_version(), "args": vars(args),
        "verification": verify, "server": runs, "loadavg_before": load_before, "loadavg_after": load_after,
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
