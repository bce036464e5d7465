"""Helpers of the job-layer tests (their fixtures are in conftest): the miner files, the arena's
evaluation settings, signed clients."""

from __future__ import annotations

from pathlib import Path

from shoparena.arena.client import ArenaClient

MINERS = Path(__file__).resolve().parent / "miners"
BENIGN_AGENT = MINERS / "benign_agent.py"
SLOW_AGENT = MINERS / "slow_agent.py"
LEASE_S = 10
EVALUATION = {"similarity": "lexical", "timeout_s": 60}
NO_COOLDOWN = {"full_s": 0, "security_s": 0, "format_s": 0}


def client(server, key) -> ArenaClient:
    return ArenaClient(server.url, key.keypair)


def submit(server, key, path: Path = BENIGN_AGENT) -> str:
    with client(server, key) as miner:
        return miner.submit(path.name, path.read_text()).submission_id
