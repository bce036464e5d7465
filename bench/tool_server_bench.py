"""Tool server: per-call overhead and behaviour under load, the old ThreadingHTTPServer against the
uvicorn/FastAPI server (`shoparena.harness.tool_server`).

    .venv/bin/python bench/tool_server_bench.py                 # old = the last commit before the change
    .venv/bin/python bench/tool_server_bench.py --calls 5000 --old-ref 3ae2a60

The server runs in this process (as in an eval worker); the client runs in a separate Python process
(as a miner does), so neither competes for the other's GIL. Per-call latency is one
`calculate_voucher` call (no search: the tool itself costs ~0.03 ms) made three ways:
`sdk` — `miner_sdk.call_tool`, one new connection per call, as miners call; `keep-alive` — one
reused `http.client` connection (the server's own cost); `unix` — the SDK over the Unix socket (new
server only). Overhead = p50 of the HTTP call − p50 of the same `Episode.call` in process.
Target: ≤ 1 ms p50 on loopback. Load: N clients each open a connection at the same moment and make
one call (10 s socket timeout; a reset or timeout counts as a failure); and 100 connections opened
and left idle, then one request on each. The old server is loaded from `git show REF:...`.
Results: a table on stdout and bench/out/tool_server_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import types
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from bench.common import bench_catalogue, percentiles
from shoparena.harness import Episode
from shoparena.harness.record_limits import RecordLimits
from shoparena.harness.tool_server import ToolServer
from shoparena.index.catalog_dir import open_catalog

ROOT = Path(__file__).resolve().parents[1]
console = Console(width=max(120, Console().width))
TARGET_P50_MS = 1.0
ARGUMENTS = {
    "product_prices": "120.5,80,42",
    "voucher_type": "percentage",
    "discount_value": 20,
    "threshold": 100,
    "budget": 300,
    "cap": 50,
}
UNBOUNDED = RecordLimits(max_calls=10**7, max_episode_bytes=10**12)
"""The benchmark's episodes take every call (real ones end at their step cap)."""

CLIENT = r"""
import http.client, json, os, socket, sys, threading, time, importlib.util
mode, url, token, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
body = json.dumps(json.loads(sys.argv[5])).encode()
os.environ["SHOPARENA_TOOL_URL"], os.environ["SHOPARENA_SESSION"] = url, token
spec = importlib.util.spec_from_file_location("miner_sdk", sys.argv[6])
sdk = importlib.util.module_from_spec(spec); spec.loader.exec_module(sdk)
args = json.loads(body)
host, port = (url.split("//", 1)[1].rsplit(":", 1) + ["0"])[:2] if url.startswith("http") else ("", "0")
headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
raw = ("POST /v1/tools/calculate_voucher HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
       "Content-Length: %d\r\nConnection: close\r\n\r\n" % (token, len(body))).encode() + body
out = {}
if mode in ("sdk", "keep-alive"):
    connection = http.client.HTTPConnection(host, int(port), timeout=30) if mode == "keep-alive" else None
    samples = []
    for i in range(n + 50):
        started = time.perf_counter()
        if connection is None:
            reply = sdk.call_tool("calculate_voucher", **args)
        else:
            connection.request("POST", "/v1/tools/calculate_voucher", body=body, headers=headers)
            reply = json.loads(connection.getresponse().read())
        elapsed = time.perf_counter() - started
        assert reply["ok"], reply
        if i >= 50:
            samples.append(elapsed)
    out["samples"] = samples
elif mode == "burst":
    barrier, results = threading.Barrier(n), [None] * n
    def one(i):
        barrier.wait()
        try:
            with socket.create_connection((host, int(port)), timeout=10) as s:
                s.sendall(raw)
                data = b""
                while chunk := s.recv(65536):
                    data += chunk
            results[i] = "ok" if data.startswith(b"HTTP/1.1 200") else "bad reply"
        except OSError as exc:
            results[i] = type(exc).__name__
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    started = time.perf_counter()
    for t in threads: t.start()
    for t in threads: t.join()
    out["wall_s"] = time.perf_counter() - started
    out["outcomes"] = {k: results.count(k) for k in set(results)}
elif mode == "idle":
    started = time.perf_counter()
    try:
        socks = [socket.create_connection((host, int(port)), timeout=30) for _ in range(n)]
        out["open_s"] = time.perf_counter() - started
        for s in socks:
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        out["served"] = sum(s.recv(4096).startswith(b"HTTP/1.1 200") for s in socks)
    except OSError as exc:
        out["error"] = type(exc).__name__
    out["wall_s"] = time.perf_counter() - started
print(json.dumps(out))
"""


def load_old_server(ref: str) -> types.ModuleType:
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{ref}:shoparena/harness/tool_server.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if "ThreadingHTTPServer" not in source:
        raise SystemExit(f"{ref}: its tool_server.py is not the ThreadingHTTPServer one; pass --old-ref")
    module = types.ModuleType("old_tool_server")
    sys.modules[module.__name__] = module  # dataclasses look their module up there
    exec(compile(source, f"{ref}:tool_server.py", "exec"), module.__dict__)
    return module


def client(mode: str, url: str, token: str, n: int) -> dict:
    sdk = ROOT / "shoparena" / "agents" / "miner" / "sdk.py"
    command = [sys.executable, "-c", CLIENT, mode, url, token, str(n), json.dumps(ARGUMENTS), str(sdk)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"client {mode} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def in_process(backend, n: int) -> list[float]:
    episode = Episode(backend, "benchmark", step_cap=10**7, limits=UNBOUNDED)
    samples = []
    for i in range(n + 50):
        started = time.perf_counter()
        assert episode.call("calculate_voucher", ARGUMENTS).ok
        if i >= 50:
            samples.append(time.perf_counter() - started)
    return samples


def measure(label: str, server, backend, args, unix: bool) -> dict:
    result: dict = {}
    episode = Episode(backend, "benchmark", step_cap=10**7, limits=UNBOUNDED)
    token = server.register(episode)
    url = server.tcp_url if hasattr(server, "tcp_url") else server.url
    for mode in ("sdk", "keep-alive"):
        result[mode] = percentiles(client(mode, url, token, args.calls)["samples"])
    if unix:
        result["unix"] = percentiles(client("sdk", server.unix_url, token, args.calls)["samples"])
    for n in args.bursts:
        burst = client("burst", url, token, n)
        result[f"burst-{n}"] = {"failed": n - burst["outcomes"].get("ok", 0), **burst}
    result["idle-100"] = client("idle", url, token, 100)
    console.print(f"{label}: done")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--products", type=int, default=20_000, help="catalogue size (built once, cached)")
    parser.add_argument("--catalog", help="reuse a built catalogue directory")
    parser.add_argument("--calls", type=int, default=3000, help="timed calls per client mode")
    parser.add_argument("--bursts", type=lambda s: [int(x) for x in s.split(",")], default=[50, 100, 300])
    parser.add_argument("--old-ref", default="3ae2a60", help="git ref of the ThreadingHTTPServer version")
    parser.add_argument(
        "--ab",
        type=int,
        default=0,
        help="instead: N alternating rounds of the guarded h11 parser against plain httptools (unix, keep-alive)",
    )
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "out"))
    args = parser.parse_args()

    directory = bench_catalogue(args.products, args.catalog, "toolserver", console)
    backend = open_catalog(directory)
    baseline = percentiles(in_process(backend, args.calls))
    if args.ab:
        return parser_ab(backend, args, baseline)
    results = {"in-process": baseline}
    old = load_old_server(args.old_ref)
    with old.ToolServer() as server:
        results["old"] = measure("old (ThreadingHTTPServer)", server, backend, args, unix=False)
    with (
        tempfile.TemporaryDirectory(prefix="tsb-", dir="/tmp") as where,
        ToolServer(socket_path=os.path.join(where, "tools.sock")) as server,
    ):
        results["new"] = measure("new (uvicorn)", server, backend, args, unix=True)

    table = Table(title=f"Tool server per call ({args.calls:,} calls, calculate_voucher): p50 / p99 ms")
    for column in ("server", "client", "p50", "p95", "p99", "overhead p50", f"≤ {TARGET_P50_MS} ms"):
        table.add_column(column, justify="left" if column in ("server", "client") else "right")
    table.add_row(
        "in process",
        "Episode.call",
        f"{baseline['p50_ms']:.3f}",
        f"{baseline['p95_ms']:.3f}",
        f"{baseline['p99_ms']:.3f}",
        "-",
        "-",
    )
    for server_name in ("old", "new"):
        for mode in ("sdk", "keep-alive", "unix"):
            stats = results[server_name].get(mode)
            if stats is None:
                continue
            overhead = stats["p50_ms"] - baseline["p50_ms"]
            stats["overhead_p50_ms"] = round(overhead, 4)
            table.add_row(
                server_name,
                mode,
                f"{stats['p50_ms']:.3f}",
                f"{stats['p95_ms']:.3f}",
                f"{stats['p99_ms']:.3f}",
                f"{overhead:.3f}",
                "[green]yes[/]" if overhead <= TARGET_P50_MS else "[red]NO[/]",
            )
    console.print(table)
    load = Table(title="Under load: failed requests (resets, timeouts) and wall time")
    for column in ("server", *[f"{n} at once" for n in args.bursts], "100 idle: open / all served"):
        load.add_column(column, justify="left" if column == "server" else "right")
    for server_name in ("old", "new"):
        row = [server_name]
        for n in args.bursts:
            burst = results[server_name][f"burst-{n}"]
            row.append(f"{burst['failed']} failed, {burst['wall_s']:.2f} s")
        idle = results[server_name]["idle-100"]
        row.append(
            f"{idle.get('open_s', float('nan')):.2f} s / {idle['wall_s']:.2f} s ({idle.get('served', 0)} ok)"
        )
        load.add_row(*row)
    console.print(load)

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    out_file = out_dir / "tool_server_bench.json"
    report = {
        "bench": "tool_server_bench",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "old_ref": args.old_ref,
        "catalogue": str(directory),
        "results": results,
    }
    for server_name in ("old", "new"):  # the raw samples stay out of the file; their summaries are in
        for value in results[server_name].values():
            value.pop("samples", None)
    out_file.write_text(json.dumps(report, indent=2))
    console.print(f"wrote {out_file}")


def parser_ab(backend, args, baseline: dict) -> None:
    """The guarded h11 protocol the tool server uses against uvicorn's httptools (which bounds no
    request head), alternated round by round so a noisy machine's load falls on both alike."""
    table = Table(title=f"Parser A/B ({args.calls:,} calls per row): p50 ms, overhead = p50 − in-process")
    for column in ("round", "parser", "unix sdk p50", "keep-alive p50", "unix overhead"):
        table.add_column(column, justify="left" if column in ("round", "parser") else "right")
    rows = []
    for round_no in range(args.ab):
        for parser in ("h11-guarded", "httptools"):
            with tempfile.TemporaryDirectory(prefix="tsb-", dir="/tmp") as where:
                server = ToolServer(socket_path=os.path.join(where, "tools.sock"))
                if parser == "httptools":
                    server.http_protocol = "httptools"
                with server:
                    token = server.register(Episode(backend, "benchmark", step_cap=10**7, limits=UNBOUNDED))
                    unix = percentiles(client("sdk", server.unix_url, token, args.calls)["samples"])
                    kept = percentiles(client("keep-alive", server.tcp_url, token, args.calls)["samples"])
            rows.append({"round": round_no, "parser": parser, "unix": unix, "keep-alive": kept})
            table.add_row(
                str(round_no),
                parser,
                f"{unix['p50_ms']:.3f}",
                f"{kept['p50_ms']:.3f}",
                f"{unix['p50_ms'] - baseline['p50_ms']:.3f}",
            )
    console.print(table)
    for parser in ("h11-guarded", "httptools"):
        mine = [r for r in rows if r["parser"] == parser]
        unix = sorted(r["unix"]["p50_ms"] for r in mine)
        kept = sorted(r["keep-alive"]["p50_ms"] for r in mine)
        console.print(
            f"{parser}: median of rounds — unix sdk p50 {unix[len(unix) // 2]:.3f} ms, keep-alive p50 {kept[len(kept) // 2]:.3f} ms"
        )


if __name__ == "__main__":
    main()
