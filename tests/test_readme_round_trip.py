"""The README's miner → server → validator round trip, run verbatim: the shell block after the
`<!-- round-trip` marker, in a fresh directory, against real processes on loopback (the server started in
the background as the README starts it, the validator in the bubblewrap sandbox). It must end with the
scored agent on `/` and on `/v1/leaderboard`.

Only what cannot be verbatim is changed: the venv's activate script is this interpreter's, and the port is
a free one (through the environment variables the commands read, not by editing the block)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- round-trip"
ACTIVATE = ". .venv/bin/activate"
TIMEOUT_S = 300


def round_trip_block() -> str:
    """The first ```bash block after the marker."""
    text = (ROOT / "README.md").read_text()
    assert text.count(MARKER) == 1, f"README.md must mark its round trip once with {MARKER!r}"
    found = re.search(r"```bash\n(.*?)```", text[text.index(MARKER) :], re.S)
    assert found, "no ```bash block after the round-trip marker"
    return found.group(1)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


def test_the_block_starts_with_the_venv_and_uses_no_placeholders():
    block = round_trip_block()
    lines = [line for line in block.splitlines() if line.strip()]
    assert lines[0].startswith(ACTIVATE)
    assert all(line.startswith("shoparena ") for line in lines[1:])
    commands = [line.split("  #")[0] for line in lines]
    assert not any(re.search(r"\b[A-Z][A-Z0-9_]{2,}\b", command) for command in commands), "a placeholder"
    assert "--background" in block and "--cooldown-s" in block  # no log in the shell, no 12 h cooldown


def test_the_readme_round_trip_ends_on_a_ranked_agent(tmp_path, sandbox_ready):
    activate = Path(sys.prefix) / "bin" / "activate"
    assert activate.is_file(), f"the tests run from a venv: {activate} is missing"
    block = round_trip_block()
    script = block.replace(ACTIVATE, f". {shlex.quote(str(activate))}", 1)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "SHOPARENA_ARENA_PORT": str(port),
        "SHOPARENA_ARENA_URL": url,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "COLUMNS": "200",
    }
    (tmp_path / "round_trip.sh").write_text(script)
    out = tmp_path / "out.txt"
    started = time.monotonic()
    try:
        with out.open("w") as sink:
            done = subprocess.run(
                ["bash", "-e", "round_trip.sh"],
                cwd=tmp_path,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                timeout=TIMEOUT_S,
                check=False,
            )
        output = out.read_text()
        assert done.returncode == 0, output
        submission_id = re.search(r"admitted: submission ([0-9a-f]{32})", output).group(1)
        assert re.search(rf"scored\s.*{submission_id}|{submission_id}.*scored", output.replace("│", " ")), (
            output
        )
        with httpx.Client(base_url=url, timeout=30, trust_env=False) as http:
            board = http.get("/v1/leaderboard").json()
            page = http.get("/").text
        assert [(e["submission_id"], e["name"], e["provisional"]) for e in board] == [
            (submission_id, "agent.py", True)
        ]
        ranked = re.search(r'<section id="provisional">.*?</section>', page, re.S)
        assert ranked and f"/agents/{submission_id}" in ranked.group(0) and "agent.py" in ranked.group(0)
        assert (tmp_path / "arena" / "serve.log").read_text().count("GET /v1/health") >= 1
        assert "GET /v1/health" not in output  # the server's log stayed out of the shell
    finally:
        found = re.search(r"\(pid (\d+)\)", out.read_text() if out.exists() else "")
        if found:
            stop(int(found.group(1)))
    print(f"round trip: {time.monotonic() - started:.1f} s")
