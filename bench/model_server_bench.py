"""Model server: throughput and latency of a checkpoint served as an OpenAI-compatible endpoint.

    .venv/bin/python bench/model_server_bench.py                          # 64 requests, 4 clients
    .venv/bin/python bench/model_server_bench.py --requests 200 --concurrency 8 --max-tokens 32

The tiny random Qwen3 (`make_tiny_model`, built once under /tmp/shoparena-bench) is served by
`start_model_server` (backend hf, CPU unless --device says otherwise) on loopback; C client threads
each send their share of N requests through the inference proxy's own client (`HttpUpstream`, a kept
connection per thread). A request is a realistic first turn: the default system prompt, the oro7 tool
schemas through the chat template, a shopping query; greedy, `max_tokens` new tokens (the random
model rarely stops early, so nearly every completion has exactly that many).

Generation runs one request at a time (the server's lock), so concurrency shows queueing, not
parallel speed-up: req/s ≈ 1 / (time of one generation), and latency grows with C. Results: a table
on stdout and bench/out/model_server_bench.json (with the machine, Python and torch versions).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from bench.common import BENCH_ROOT, percentiles
from shoparena.harness.tool_specs import tool_schemas
from shoparena.inference.model_server import start_model_server
from shoparena.inference.upstreams import EpisodeContext, make_upstream

console = Console()
NAME = "shoparena-distilled"
QUERY = "I need a waterproof hiking backpack around 30 litres under 400, from a shop with free shipping"


def tiny_checkpoint() -> Path:
    from shoparena.train.tiny_model import TinyModelConfig, make_tiny_model

    path = BENCH_ROOT / "tiny-qwen3"
    if not (path / "config.json").exists():
        console.print(f"building the tiny Qwen3 checkpoint in {path} (once) ...")
        make_tiny_model(TinyModelConfig(out=path, seed=0))
    return path


def client(spec: str, body: dict, count: int, latencies: list[float], tokens: list[int]) -> None:
    upstream = make_upstream(spec)
    context = EpisodeContext(step_cap=20, tool_names=())
    try:
        for _ in range(count):
            started = time.perf_counter()
            answer = upstream.complete(body, context)
            latencies.append(time.perf_counter() - started)
            tokens.append(answer["usage"]["completion_tokens"])
    finally:
        upstream.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=64, help="timed requests in all")
    parser.add_argument("--concurrency", type=int, default=4, help="client threads")
    parser.add_argument("--max-tokens", type=int, default=16, help="new tokens per completion")
    parser.add_argument("--checkpoint", help="serve this checkpoint instead of the tiny model")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "out"))
    args = parser.parse_args()

    import torch

    checkpoint = Path(args.checkpoint) if args.checkpoint else tiny_checkpoint()
    body = {
        "model": NAME,
        "messages": [{"role": "user", "content": QUERY}],
        "tools": tool_schemas("oro7"),
        "max_tokens": args.max_tokens,
        "temperature": 0,
    }
    latencies: list[float] = []
    tokens: list[int] = []
    with start_model_server(
        checkpoint, name=NAME, device=args.device, max_new_tokens=args.max_tokens
    ) as server:
        warm: list[float] = []
        client(server.upstream_spec(), body, 3, warm, [])  # first-call costs are not the steady state
        shares = [
            args.requests // args.concurrency + (i < args.requests % args.concurrency)
            for i in range(args.concurrency)
        ]
        threads = [
            threading.Thread(target=client, args=(server.upstream_spec(), body, share, latencies, tokens))
            for share in shares
        ]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
        prompt_tokens = len(
            server.agent.tokenizer(server.model.prompt(parse_body(body)), add_special_tokens=False)[
                "input_ids"
            ]
        )

    latency = percentiles(latencies)
    results = {
        "requests": len(latencies),
        "concurrency": args.concurrency,
        "max_tokens": args.max_tokens,
        "prompt_tokens": prompt_tokens,
        "wall_s": round(wall, 3),
        "requests_per_s": round(len(latencies) / wall, 2),
        "completion_tokens_per_s": round(sum(tokens) / wall, 1),
        "mean_completion_tokens": round(sum(tokens) / max(1, len(tokens)), 2),
        "latency": latency,
    }
    table = Table(
        title=f"Model server, {checkpoint.name} on {args.device} ({len(latencies)} requests, {args.concurrency} clients)"
    )
    for column in ("req/s", "p50 ms", "p99 ms", "completion tok/s", "prompt tokens", "new tokens/req"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{results['requests_per_s']:.2f}",
        f"{latency['p50_ms']:.1f}",
        f"{latency['p99_ms']:.1f}",
        f"{results['completion_tokens_per_s']:.1f}",
        str(prompt_tokens),
        f"{results['mean_completion_tokens']:.1f}",
    )
    console.print(table)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.platform()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "uname": " ".join(platform.uname()),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "checkpoint": str(checkpoint),
        "results": results,
    }
    (out / "model_server_bench.json").write_text(json.dumps(report, indent=2) + "\n")
    console.print(f"wrote {out / 'model_server_bench.json'}")


def parse_body(body: dict):
    from shoparena.inference.model_server import parse_request

    return parse_request(json.dumps(body).encode())


if __name__ == "__main__":
    main()
