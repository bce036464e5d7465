"""Fixtures for the sandbox tests: small limits so hostile programs end fast, and a real proxy on a Unix
socket (the gate that fails where this machine cannot sandbox, `sandbox_ready`, is in tests/conftest.py:
every test that runs miner files uses it)."""

from __future__ import annotations

import json
import os
import socketserver
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from shoparena.sandbox import ProgramFile, SandboxLimits, run_sandboxed
from shoparena.sandbox.models import MiB

PROGRAMS = Path(__file__).parent / "programs"
SMALL = SandboxLimits(
    address_space_bytes=1024 * MiB,
    cpu_s=5,
    memory_bytes=512 * MiB,
    pids=64,
    tmp_bytes=16 * MiB,
    wall_s=5.0,
    stdout_bytes=4096,
    stderr_bytes=4096,
    result_bytes=1 * MiB,
)


def run_program(name: str, *args: str, **kwargs):
    """Run tests/sandbox/programs/<name>.py with the shared attempts helper beside it."""
    kwargs.setdefault("limits", SMALL)
    files = [ProgramFile.from_path(PROGRAMS / "attempts.py")]
    return run_sandboxed(PROGRAMS / f"{name}.py", argv=list(args), files=files, **kwargs)


def attempts(outcome) -> dict[str, dict]:
    assert outcome.result is not None, outcome
    return {item["name"]: item for item in json.loads(outcome.result)["attempts"]}


class Proxy:
    """A stand-in for the tool/inference proxy: HTTP over a Unix socket (mode 0666 inside a 0700
    directory, the shape the real one is asked to use), recording every request it gets."""

    def __init__(self, directory: Path):
        directory.mkdir(mode=0o700)
        self.path = directory / "proxy.sock"
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with proxy._lock:
                    proxy.requests.append(
                        {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                    )
                reply = json.dumps({"ok": True, "result": {"echo": body.decode("utf-8", "replace")}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args) -> None:
                pass

            def address_string(self) -> str:
                return "unix"

        self.server = socketserver.ThreadingUnixStreamServer(str(self.path), Handler)
        self.server.daemon_threads = True
        os.chmod(self.path, 0o666)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def count(self, path: str) -> int:
        with self._lock:
            return sum(1 for r in self.requests if r["path"] == path)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy(tmp_path: Path):
    server = Proxy(tmp_path / "proxy")
    yield server
    server.close()
