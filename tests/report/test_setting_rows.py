"""The report's Setting table reads as a person would write it: a run without an episode timeout says
"no timeout" (not "timeout none s"), and a miner's run names the author's own file beside the copy it ran
(`miner try` runs a copy called agent.py; the report must not rename the user's file)."""

from __future__ import annotations

from pathlib import Path

from shoparena.report.runs import RunView
from shoparena.report.tables import config_rows

CONFIG = {"agent_spec": "file:/runs/abc/agent.py", "executor": "inline", "workers": 1, "profile": "oro7"}
METRICS = {"agent": {"agent_id": "file:agent", "version": "abc"}}


def setting(run: dict) -> dict[str, str]:
    rows = config_rows(RunView(path=Path("r"), metrics=METRICS, run=run))
    return {cells[0]: cells[1] for cells in rows.rows}


def test_no_timeout_is_said_in_words():
    assert setting({**CONFIG, "episode_timeout_s": None})["executor"] == "inline × 1, no timeout"
    assert setting({**CONFIG, "episode_timeout_s": 300.0})["executor"] == "inline × 1, timeout 300 s"


def test_a_miner_file_run_names_the_authors_file():
    agent = setting({**CONFIG, "agent_file": "/home/me/my_bot.py"})["agent"]
    assert agent.startswith("/home/me/my_bot.py") and "file:/runs/abc/agent.py" in agent
    assert setting(CONFIG)["agent"] == "file:/runs/abc/agent.py (file:agent vabc)"
