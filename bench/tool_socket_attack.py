"""The tool socket's memory under a hostile miner (issue 22): N connections, each declaring a 1 MiB
tool call and sending all of it but the last byte, against a tool server on a Unix socket in this
process (as in an eval worker). Reports this process's RSS before and after, while the connections are
held, and what each connection was answered.

    .venv/bin/python bench/tool_socket_attack.py --connections 960

Before the open-body budget every connection held its ~1 MiB (960 → +984 MiB); with it, one session's
open requests hold at most `max_open_body_bytes` (4 MiB) and the rest are answered 503 unread.
Raise `ulimit -n` above the connection count first.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil
from rich.console import Console

from bench.common import bench_catalogue
from shoparena.harness import Episode, load_shops
from shoparena.harness.tool_server import ToolServer
from shoparena.index.catalog_dir import open_catalog

MiB = 1 << 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connections", type=int, default=960)
    parser.add_argument("--body-mib", type=int, default=1)
    parser.add_argument("--products", type=int, default=3000, help="catalogue size (built once, cached)")
    args = parser.parse_args()
    console = Console()
    catalog = bench_catalogue(args.products, None, "toolserver", console)
    backend, shops = open_catalog(catalog), load_shops(catalog)
    episode = Episode(backend, "a test query", profile="full", shops=shops, step_cap=50)
    size = args.body_mib * MiB
    body = b"x" * (size - 1)
    with tempfile.TemporaryDirectory(prefix="tsa-", dir="/tmp") as work:
        path = str(Path(work) / "tools.sock")
        with (
            ToolServer(host=None, socket_path=path, request_timeout_s=60, max_body_bytes=size) as server,
            server.session(episode) as token,
        ):
            head = (
                f"POST /v1/tools/find_product HTTP/1.1\r\nhost: tools\r\nx-session: {token}\r\n"
                f"content-length: {size}\r\n\r\n"
            ).encode()
            time.sleep(0.3)
            before = psutil.Process().memory_info().rss
            held = []
            for _ in range(args.connections):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(5)
                sock.connect(path)
                with contextlib.suppress(OSError):
                    sock.sendall(head + body)
                held.append(sock)
            time.sleep(1.0)  # the server has read whatever it will read
            after = psutil.Process().memory_info().rss
            answers: dict[str, int] = {}
            for sock in held:
                sock.settimeout(0.05)
                try:
                    answer = sock.recv(64).split(b"\r\n", 1)[0].decode() or "closed"
                except (TimeoutError, OSError):
                    answer = "held (body still awaited)"
                answers[answer] = answers.get(answer, 0) + 1
                sock.close()
    console.print(
        f"{args.connections} connections × a half-sent {args.body_mib} MiB body: RSS {before / MiB:.0f} → "
        f"{after / MiB:.0f} MiB (+{(after - before) / MiB:.0f} MiB); answers {answers}"
    )


if __name__ == "__main__":
    main()
