"""SN15's miner-facing surface (`subnet_compat`, issue 23): the same tool-call ids, step format and
tool registry as the subnet's `src.agent.agent_interface`, and a `ProxyClient` whose paths reach the
episode's tool server — checked in the sandbox, where a subnet miner file meets them."""

from __future__ import annotations

import base64
import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shoparena.agents.miner.subnet_compat import agent_interface as compat
from shoparena.arena.models import EvaluationSettings
from shoparena.arena.participants.tryout import TryoutSettings, try_agent
from shoparena.eval.run_dir import read_trajectories

FAST = EvaluationSettings(similarity="lexical", timeout_s=60)


def published_id(name: str, parameters: dict, length: int = 8) -> str:
    """The subnet's rule, written from its description: URL-safe base64 of MD5("NAME\\nPARAMS"), with
    '=', '+' and '/' dropped, first `length` characters."""
    raw = base64.urlsafe_b64encode(hashlib.md5(f"{name}\n{parameters}".encode()).digest()).decode()
    return raw.replace("=", "").replace("+", "").replace("/", "")[:length]


@given(
    st.text(min_size=1, max_size=20),
    st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8)),
)
def test_tool_call_ids_are_the_subnets(name, parameters):
    assert compat.generate_tool_call_id(name, parameters) == published_id(name, parameters)
    assert compat.generate_tool_call_id(name, parameters, 12) == published_id(name, parameters, 12)


def test_the_registry_and_the_step_format():
    @compat.Tool
    def plain(x: int) -> int:
        return x + 1

    @compat.Tool("renamed")
    def other(text: str = "a") -> str:
        return text * 2

    @compat.Tool()
    def bare() -> str:
        return "ok"

    assert {"plain", "renamed", "bare"} <= set(compat._TOOL_REGISTRY)
    call = compat.execute_tool_call("renamed", {"text": "b"})
    assert call == {
        "name": "renamed",
        "parameters": {"text": "b"},
        "tool_call_id": published_id("renamed", {"text": "b"}),
        "result": "bb",
    }
    with pytest.raises(ValueError, match=r"Tool 'missing' is not registered\. Available tools: "):
        compat.execute_tool_call("missing", {})
    step = compat.create_dialogue_step("why", [call], "done", "the query", 3)
    completion = step["completion"]
    assert completion["reasoning_content"] == ""
    assert completion["content"] == (
        '<think>why</think>\n<tool_call>[{"name": "renamed", "parameters": {"text": "b"}}]</tool_call>\n'
        "<response>done</response>"
    )
    assert completion["message"] == {"think": "why", "tool_call": [call], "response": "done"}
    assert step["extra_info"]["step"] == 3 and step["extra_info"]["query"] == "the query"
    assert isinstance(step["extra_info"]["timestamp"], int)
    empty = compat.create_dialogue_step("", [], "", "q", 1)["completion"]
    assert empty["content"] == "" and empty["message"] == {}


PROBE = """
from urllib.parse import quote_plus

from src.agent.agent_interface import create_dialogue_step, execute_tool_call, Tool
from src.agent.proxy_client import ProxyClient

proxy = ProxyClient(max_retries=1)


def agent_main(problem_data):
    keys = " ".join(sorted(problem_data))
    # The template quotes q itself; None-valued parameters are dropped; page may come as text.
    first = proxy.get("/search/find_product", {"q": quote_plus(keys), "page": "1", "sort": None})
    missing = proxy.get("/search/get_product_raw", {"product_ids": "1"})
    refused = proxy.get("/search/view_product_information", {"product_ids": ""})
    chat = proxy.post("/inference/chat/completions", {"model": "deepseek-ai/DeepSeek-V3.2-TEE",
        "messages": [{"role": "user", "content": problem_data["query"]}], "stream": False})
    native = chat["choices"][0]["message"] if chat else {}
    tags = proxy.post("/inference/chat/completions", {"model": "deepseek-ai/DeepSeek-V3.2-TEE", "messages": [
        {"role": "system", "content": "Answer with <think>...</think> and <tool_call>[...]</tool_call>."},
        {"role": "user", "content": "# Dialogue Records History <user>" + problem_data["query"] + "</user>"}]})
    tagged = tags["choices"][0]["message"] if tags else {}
    shapes = (bool(native.get("tool_calls")), "<tool_call>" in (tagged.get("content") or ""), bool(tagged.get("tool_calls")))
    text = repr((first is not None, missing, refused, shapes))
    proxy.get("/search/find_product", {"q": text})
    return [create_dialogue_step(problem_data["category"], [], "", problem_data["query"], 1)]
"""


@pytest.mark.usefixtures("sandbox_ready")
def test_a_subnet_miners_calls_reach_the_episode_through_the_proxy_client(
    tmp_path, small_catalog_dir, problems_file
):
    agent = tmp_path / "probe.py"
    agent.write_text(PROBE)
    settings = TryoutSettings(
        out=tmp_path / "try", catalog=small_catalog_dir, problems=problems_file, limit=1, evaluation=FAST
    )
    report = try_agent(agent, settings)
    assert report.admitted, report.violations
    records = read_trajectories(report.run_dir / "trajectories.jsonl").records
    (record,) = records
    searches = [call for call in record.calls if call.name == "find_product"]
    # problem_data: every task field but the reward, plus ours.
    assert searches[0].arguments == {
        "q": "Knowledge_Attribute bucket category difficulty problem_id query title voucher",
        "page": 1,
    }
    # a search answered; an unknown path is None; a refused call (recorded once) is None; the
    # subnet's default model answered through the inference proxy: native tool calls to a plain
    # request, `<tool_call>` tags in the content to one whose prompt asks for them (the template's).
    assert searches[1].arguments == {"q": "(True, None, None, (True, True, False))"}
    assert [call.name for call in record.calls].count("view_product_information") == 1
    entries = record.inference.entries
    served = [(e.model, e.upstream) for e in entries]
    assert served == 2 * [("deepseek-ai/DeepSeek-V3.2-TEE", "offline:reference-agentic-auto")]
