"""A hostile miner in the sandbox next to a served checkpoint (the closed loop's final race): it may
reach the model only through the inference proxy — counted, capped and logged — never the model
server's port directly, and it cannot read the checkpoint's files on the host."""

from __future__ import annotations

import pytest

from shoparena.agents.base import ProblemView
from shoparena.agents.miner.file_agent import make_file_agent
from shoparena.harness import Episode
from shoparena.inference.model_server import start_model_server

pytest.importorskip("transformers")

NAME = "shoparena-distilled"
MINER = """
import socket

import miner_sdk

PORT = {port}
CHECKPOINT = {checkpoint!r}


def attempt(action):
    try:
        action()
        return "reached"
    except Exception as exc:
        return "blocked-" + type(exc).__name__


def agent_main(problem_data):
    direct = attempt(lambda: socket.create_connection(("127.0.0.1", PORT), timeout=2).close())
    weights = attempt(lambda: open(CHECKPOINT + "/config.json").read())
    reply = miner_sdk.chat([{{"role": "user", "content": "hello"}}], model="{name}", max_tokens=2)
    proxy = "served" if reply.get("choices") else "refused"
    miner_sdk.call_tool("find_product", q="direct=" + direct + " weights=" + weights + " proxy=" + proxy)
    miner_sdk.call_tool("terminate", status="failure")
    return []
"""


def test_a_sandboxed_miner_reaches_the_served_model_only_through_the_proxy(
    tiny_model_dir,
    tmp_path,
    agent_catalog,
    agent_problems,
    sandbox_ready,
):
    with start_model_server(tiny_model_dir, name=NAME, max_new_tokens=4) as server:
        port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
        miner = tmp_path / "hostile.py"
        miner.write_text(MINER.format(port=port, checkpoint=str(tiny_model_dir), name=NAME))
        agent = make_file_agent(
            str(miner), sandbox="bwrap", timeout_s=60, inference_models={NAME: server.upstream_spec()}
        )
        problem = agent_problems[0]
        try:
            episode = Episode.for_problem(problem, agent_catalog, profile="oro7")
            run = agent.run(episode, ProblemView.of(problem))
        finally:
            agent.close()
    assert run.error is None, run.error
    query = episode.calls[0].arguments["q"]
    assert query.startswith("direct=blocked-"), query  # the model server's port is not on its network
    assert "weights=blocked-" in query, query  # the host's checkpoint directory is not in its file system
    assert query.endswith("proxy=served"), query  # the proxy path works from the same sandbox
    assert run.inference.served == 1 and run.inference.entries[0].model == NAME
