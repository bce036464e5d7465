"""Sandbox start-up overhead per run: `run_sandboxed` (bwrap, production limits) against a bare
subprocess running the same program the same way (`python -I`, input on stdin, result in a file).

    .venv/bin/python bench/sandbox_bench.py                 # 60 rounds of each program
    .venv/bin/python bench/sandbox_bench.py --rounds 200

Bare runs twice: `python -I` as the file agent ran a miner before the sandbox (it loads the host's site-packages,
which on this machine hold hundreds of packages and .pth hooks), and `python -I -S` (no site-packages:
the same interpreter work the sandbox does, since it hides them) — the second is the fair baseline
for what the isolation itself costs. Two programs: `empty` (write a one-line result) and `tool-call` (what a miner's first step looks like:
import the HTTP client, read the problem from stdin, make one request to the proxy over its Unix
socket, return the answer). Per round every variant runs once, interleaved, so machine noise falls on
all of them alike. Variants: `bare` (subprocess.Popen), `none` (run_sandboxed without isolation: the
supervisor's own cost — cgroup, launcher, capped pipes, FIFO), `bwrap` (the embedded default).
Overhead = p50(bwrap) − p50(bare), against both bare variants. Target: ≤ 150 ms at p50. Results: a table on stdout and
bench/out/sandbox_bench.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from bench.common import percentiles
from shoparena.sandbox import NoSandboxWarning, SandboxLimits, check_sandbox, run_sandboxed
from shoparena.sandbox.interpreter import default_python

TARGET_OVERHEAD_MS = 150.0
console = Console(width=max(120, Console().width))

PROGRAMS = {
    "empty": """
import os
with open(os.environ["SHOPARENA_RESULT_PATH"], "w") as handle:
    handle.write('{"ok": true}')
""",
    "tool-call": """
import http.client, json, os, socket, sys

class UnixConnection(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(os.environ["SHOPARENA_PROXY_SOCKET"])

problem = json.loads(sys.stdin.read())
conn = UnixConnection("proxy")
conn.request("POST", "/v1/tools/find_product", body=json.dumps({"q": problem["query"]}))
answer = json.loads(conn.getresponse().read())
with open(os.environ["SHOPARENA_RESULT_PATH"], "w") as handle:
    json.dump({"ok": True, "answer": answer}, handle)
""",
}
PROBLEM = json.dumps({"query": "yoga mat", "id": "p1"}).encode()


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        reply = json.dumps({"ok": True, "result": json.loads(body)}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args) -> None:
        pass

    def address_string(self) -> str:
        return "unix"


def bare(program: Path, socket_path: Path, work: Path, python: str, flags: list[str]) -> float:
    result = work / "result.json"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(work),
        "TMPDIR": str(work),
        "LANG": "C.UTF-8",
        "SHOPARENA_PROXY_SOCKET": str(socket_path),
        "SHOPARENA_RESULT_PATH": str(result),
    }
    started = time.perf_counter()
    done = subprocess.run(
        [python, *flags, str(program)], input=PROBLEM, env=env, cwd=work, capture_output=True
    )
    data = result.read_bytes()
    elapsed = time.perf_counter() - started
    assert done.returncode == 0 and json.loads(data)["ok"], done.stderr
    result.unlink()
    return elapsed


def sandboxed(source: str, socket_path: Path, backend: str) -> tuple[float, float]:
    started = time.perf_counter()
    outcome = run_sandboxed(
        source, stdin=PROBLEM, socket_path=socket_path, backend=backend, limits=SandboxLimits(wall_s=60)
    )
    elapsed = time.perf_counter() - started
    assert outcome.ok and json.loads(outcome.result)["ok"], outcome
    return elapsed, outcome.setup_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore", NoSandboxWarning)
    logging.getLogger("shoparena.sandbox").setLevel(logging.ERROR)  # `none` warns on every run
    console.print(check_sandbox())

    work = Path(tempfile.mkdtemp(prefix="sandbox-bench-"))
    socket_dir = work / "proxy"
    socket_dir.mkdir(mode=0o700)
    socket_path = socket_dir / "proxy.sock"
    server = socketserver.ThreadingUnixStreamServer(str(socket_path), _Handler)
    server.daemon_threads = True
    os.chmod(socket_path, 0o666)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    python = default_python()

    rows = []
    try:
        for name, source in PROGRAMS.items():
            program = work / f"{name}.py"
            program.write_text(source)
            times: dict[str, list[float]] = {"bare": [], "bare_nosite": [], "none": [], "bwrap": []}
            setup: list[float] = []
            for round_ in range(args.warmup + args.rounds):
                measured = round_ >= args.warmup
                sample = {
                    "bare": bare(program, socket_path, work, python, ["-I"]),
                    "bare_nosite": bare(program, socket_path, work, python, ["-I", "-S"]),
                }
                sample["none"], _ = sandboxed(source, socket_path, "none")
                sample["bwrap"], setup_s = sandboxed(source, socket_path, "bwrap")
                if measured:
                    for key, value in sample.items():
                        times[key].append(value)
                    setup.append(setup_s)
            stats = {key: percentiles(values) for key, values in times.items()}
            rows.append(
                {
                    "program": name,
                    **stats,
                    "bwrap_setup": percentiles(setup),
                    "overhead_p50_ms": round(stats["bwrap"]["p50_ms"] - stats["bare"]["p50_ms"], 2),
                    "overhead_vs_nosite_p50_ms": round(
                        stats["bwrap"]["p50_ms"] - stats["bare_nosite"]["p50_ms"], 2
                    ),
                    "supervisor_overhead_p50_ms": round(stats["none"]["p50_ms"] - stats["bare"]["p50_ms"], 2),
                }
            )
    finally:
        server.shutdown()
        server.server_close()
        subprocess.run(["rm", "-rf", str(work)], check=False)

    table = Table(title=f"sandbox start-up per run · {args.rounds} rounds · ms p50 / p95")
    columns = (
        "program",
        "bare -I",
        "bare -I -S",
        "none",
        "bwrap",
        "bwrap setup",
        "overhead p50",
        "vs -S",
        "target",
    )
    for column in columns:
        table.add_column(column, justify="right")
    for row in rows:

        def cell(stats: dict) -> str:
            return f"{stats['p50_ms']:.1f} / {stats['p95_ms']:.1f}"

        table.add_row(
            row["program"],
            cell(row["bare"]),
            cell(row["bare_nosite"]),
            cell(row["none"]),
            cell(row["bwrap"]),
            cell(row["bwrap_setup"]),
            f"{row['overhead_p50_ms']:.1f}",
            f"{row['overhead_vs_nosite_p50_ms']:.1f}",
            "met"
            if max(row["overhead_p50_ms"], row["overhead_vs_nosite_p50_ms"]) <= TARGET_OVERHEAD_MS
            else "MISSED",
        )
    console.print(table)
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    report = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "kernel": platform.release(),
        },
        "rounds": args.rounds,
        "target_overhead_p50_ms": TARGET_OVERHEAD_MS,
        "rows": rows,
    }
    (out / "sandbox_bench.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
