"""Inference proxy: what one chat completion costs through the proxy against calling the upstream directly.

    .venv/bin/python bench/inference_proxy_bench.py                # 2,000 calls per path
    .venv/bin/python bench/inference_proxy_bench.py --calls 5000

Three processes, as in an evaluation: the upstream (an OpenAI-compatible server on loopback answering
every request at once with the same completion: one tool call, reported usage; HTTP/1.1 keep-alive,
TCP_NODELAY, as serving stacks are), the proxy (a tool
server with `InferenceProxy` mounted, in this process, as in an eval worker), and the client (as a
miner). The request is a realistic turn: the oro7 tool schemas and a conversation of a
query, two searches and a product view with their results, which are real results of the registered
episode (so the proxy's history check verifies them, as for an honest miner), and the upstream's tool
call views a product the first search showed.

- `direct`: the client POSTs the request to the upstream itself the way `miner_sdk` does (encode the
  JSON, `http.client` on a new connection per call, decode the reply);
- `proxy`: `miner_sdk.chat(...)` to the proxy over loopback TCP; the proxy checks, forwards with the
  OpenAI agent's `ChatCompletionsClient` (a kept connection per proxy thread), logs, offers the tool
  call to the ledger, and answers;
- `proxy-unix`: the same over the tool server's Unix socket (what a sandbox gets).

The paths are called in turn, round after round, by one client, so load on the machine falls on
all of them alike; added = the median over rounds of (proxy − direct). Target: ≤ 1 ms at p50. Also timed: the offline
reference model's first turn through the proxy (an upstream's own time, not overhead). Results: a table on stdout and
bench/out/inference_proxy_bench.json.
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
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from bench.common import bench_catalogue, percentiles
from shoparena.harness import Episode, tool_schemas
from shoparena.harness.record_limits import RecordLimits
from shoparena.harness.tool_server import ToolServer
from shoparena.index.catalog_dir import open_catalog
from shoparena.inference.proxy import InferenceProxy, ProxyLimits
from shoparena.inference.upstreams import HttpUpstream

ROOT = Path(__file__).resolve().parents[1]
console = Console(width=max(120, Console().width))
TARGET_P50_MS = 1.0
WARMUP = 50

UPSTREAM = r"""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
ids = sys.argv[1]
reply = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "reasoning_content": "The first hits need their attributes checked before I choose.",
        "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "view_product_information", "arguments": json.dumps({"product_ids": ids})}}]}}],
    "usage": {"prompt_tokens": 1500, "completion_tokens": 40, "total_tokens": 1540}}).encode()
raw = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(reply)) + reply
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as any serving stack does (uvicorn, vLLM)
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.wfile.write(raw)  # status, headers and body in one write
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
"""

CLIENT = r"""
import http.client, json, os, sys, time, importlib.util
upstream, tcp, unix, token, n, request_file, sdk_path = sys.argv[1:8]
n = int(n)
request = json.load(open(request_file))
spec = importlib.util.spec_from_file_location("miner_sdk", sdk_path)
sdk = importlib.util.module_from_spec(spec); spec.loader.exec_module(sdk)
os.environ["SHOPARENA_SESSION"] = token
host, port = upstream.split("//", 1)[1].split("/")[0].rsplit(":", 1)

def direct():  # what the SDK does, to the upstream: encode, one new connection, decode
    body = json.dumps(request).encode()
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
    reply = json.loads(connection.getresponse().read())
    connection.close()
    return reply

def through(url):
    def call():
        os.environ["SHOPARENA_TOOL_URL"] = url
        return sdk.chat(request["messages"], tools=request["tools"], model=request.get("model"))
    return call

paths = {"direct": direct, "proxy": through(tcp), "proxy-unix": through(unix)}
if request.get("model") != "bench":
    paths = {"offline-model": through(tcp)}
samples = {name: [] for name in paths}
for i in range(n + 50):
    for name, call in paths.items():  # interleaved: the machine's load falls on every path alike
        started = time.perf_counter()
        reply = call()
        elapsed = time.perf_counter() - started
        assert reply["choices"], reply
        if i >= 50:
            samples[name].append(elapsed)
print(json.dumps(samples))
"""


def conversation(backend, limits: RecordLimits) -> tuple[Episode, str]:
    """A realistic episode: a query, two searches and a view with their results (its `messages` are
    the request); and the ids of three hits of the first search (what the upstream's call views)."""
    episode = Episode(
        backend, "a pair of wireless earbuds under 2000 with free shipping", profile="oro7",
        step_cap=10**7, limits=limits,
    )  # fmt: skip
    for arguments in ({"q": "wireless earbuds", "price": "0-2000"}, {"q": "bluetooth earbuds"}):
        episode.call("find_product", arguments)
    hits = [c.result for c in episode.calls if c.result]
    first = hits[0][0]["product_id"] if hits and hits[0] else "1"
    episode.call("view_product_information", {"product_ids": first})
    ids = ",".join(hit["product_id"] for hit in (hits[0] if hits else [])[:3]) or "1"
    return episode, ids


def history_check_us(episode: Episode, messages: list[dict]) -> dict[str, float] | None:
    """The proxy's history check alone on the request (µs): cold (every tool message verified from
    scratch, as for new messages) and warm (remembered, as for the resent history). None before the
    check existed."""
    try:
        from shoparena.harness.verified_history import HistoryCheck
    except ImportError:
        return None
    shown, rounds = episode.shown, 2000
    started = time.perf_counter()
    for _ in range(rounds):
        HistoryCheck().check(messages, shown)
    cold = (time.perf_counter() - started) / rounds * 1e6
    check = HistoryCheck()
    started = time.perf_counter()
    for _ in range(rounds):
        verdict = check.check(messages, shown)
    warm = (time.perf_counter() - started) / rounds * 1e6
    assert verdict.unverified == 0 and verdict.ids, verdict
    return {"cold_us": round(cold, 1), "warm_us": round(warm, 1)}


def client(
    upstream: str, tcp: str, unix: str, token: str, n: int, request_file: Path
) -> dict[str, list[float]]:
    sdk = ROOT / "shoparena" / "agents" / "miner" / "sdk.py"
    command = [sys.executable, "-c", CLIENT, upstream, tcp, unix, token, str(n), str(request_file), str(sdk)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"client failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def paired_added(proxy: list[float], direct: list[float]) -> float:
    """Median of the per-round differences (ms): robust to load that comes and goes during the run."""
    differences = sorted(p - d for p, d in zip(proxy, direct, strict=True))
    return round(differences[len(differences) // 2] * 1000, 4)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--products", type=int, default=20_000, help="catalogue size (built once, cached)")
    parser.add_argument("--catalog", help="reuse a built catalogue directory")
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per path")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "out"))
    args = parser.parse_args()

    backend = open_catalog(bench_catalogue(args.products, args.catalog, "toolserver", console))
    limits = RecordLimits(max_calls=10**7, max_episode_bytes=10**12)
    episode, viewed = conversation(backend, limits)
    messages = episode.messages
    request = {"model": "bench", "messages": messages, "tools": tool_schemas("oro7"), "temperature": 0}
    checked = history_check_us(episode, messages)
    upstream = subprocess.Popen(
        [sys.executable, "-c", UPSTREAM, viewed], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    samples: dict[str, list[float]] = {}
    try:
        port = int(upstream.stdout.readline())
        base_url = f"http://127.0.0.1:{port}/v1"
        proxy = InferenceProxy(
            {
                "bench": HttpUpstream(base_url, max_retries=0),
                "reference-agentic": "offline:reference-agentic",
            },
            limits=ProxyLimits(
                max_requests=10**7, requests_per_minute=10**9, burst=10**6, token_budget=10**12
            ),
        )
        with (
            tempfile.TemporaryDirectory(prefix="ipb-", dir="/tmp") as where,
            ToolServer(socket_path=os.path.join(where, "proxy.sock"), routers=[proxy.router]) as server,
        ):
            request_file = Path(where) / "request.json"
            request_file.write_text(json.dumps(request))
            token = server.register(episode, state=proxy.new_state())
            samples = client(base_url, server.tcp_url, server.unix_url, token, args.calls, request_file)
            console.print("direct / proxy / proxy-unix: done")
            offline = {**request, "model": "reference-agentic", "messages": messages[:1]}
            request_file.write_text(json.dumps(offline))
            episode = Episode(backend, "benchmark", profile="oro7", step_cap=10**7, limits=limits)
            token = server.register(episode, state=proxy.new_state())
            samples |= client(base_url, server.tcp_url, server.unix_url, token, args.calls // 4, request_file)
    finally:
        os.killpg(upstream.pid, 9)
        upstream.wait()

    results = {name: percentiles(values) for name, values in samples.items()}
    added = {name: paired_added(samples[name], samples["direct"]) for name in ("proxy", "proxy-unix")}
    table = Table(
        title=f"Inference proxy per chat completion ({args.calls:,} rounds, ~{len(json.dumps(request)) // 1024} KB request)"
    )
    for column in ("path", "p50 ms", "p95 ms", "p99 ms", "added at p50 (paired)", f"≤ {TARGET_P50_MS} ms"):
        table.add_column(column, justify="left" if column == "path" else "right")
    for label, row in results.items():
        extra = added.get(label)
        table.add_row(
            label,
            f"{row['p50_ms']:.3f}",
            f"{row['p95_ms']:.3f}",
            f"{row['p99_ms']:.3f}",
            f"{extra:.3f}" if extra is not None else "–",
            ("yes" if extra <= TARGET_P50_MS else "NO") if extra is not None else "–",
        )
    console.print(table)
    if checked is not None:
        console.print(f"history check alone: {checked['cold_us']} µs cold, {checked['warm_us']} µs warm")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "python": platform.python_version(),
        "calls": args.calls,
        "request_bytes": len(json.dumps(request)),
        "results": results,
        "added_p50_ms_paired": added,
        "history_check": checked,
        "added_p50_ms_unpaired": {
            k: round(results[k]["p50_ms"] - results["direct"]["p50_ms"], 4) for k in added
        },
    }
    (out / "inference_proxy_bench.json").write_text(json.dumps(report, indent=2))
    console.print(f"wrote {out / 'inference_proxy_bench.json'}  (started {time.strftime('%H:%M:%S')})")


if __name__ == "__main__":
    main()
