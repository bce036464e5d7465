"""Helpers of the job-layer tests (their fixtures are in conftest): the miner files, the arena's
evaluation settings, signed clients."""

from __future__ import annotations

from pathlib import Path

from shoparena.arena.participants.client import ArenaClient

BENIGN_AGENT = Path(__file__).resolve().parents[1] / "agents" / "miners" / "good_miner.py"
"""Searches, looks at the first hit, recommends it and terminates: a plain miner admission admits."""
SLEEP_LINE = "    time.sleep(1.0)  # slow enough that a test can stop its validator mid-job\n"
LEASE_S = 10
EVALUATION = {"similarity": "lexical", "timeout_s": 60}
NO_COOLDOWN = {"full_s": 0, "security_s": 0, "format_s": 0}


def client(server, key) -> ArenaClient:
    return ArenaClient(server.url, key.keypair)


def slow_agent() -> str:
    """The benign miner, one second slower per problem."""
    code = BENIGN_AGENT.read_text()
    code = code.replace("import miner_sdk\n", "import time\n\nimport miner_sdk\n", 1)
    return code.replace("def agent_main(problem_data):\n", "def agent_main(problem_data):\n" + SLEEP_LINE, 1)


def submit(server, key, code: str | None = None) -> str:
    with client(server, key) as miner:
        return miner.submit(BENIGN_AGENT.name, code or BENIGN_AGENT.read_text()).submission_id
