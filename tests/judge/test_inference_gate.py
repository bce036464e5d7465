"""Gate 1 reads the verified inference log: what went through the inference proxy, not what the agent
says about itself. Records come from real episodes driven through a real tool server and proxy."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoparena.agents.base import ProblemView, TokenUsage
from shoparena.agents.miner import sdk as miner_sdk
from shoparena.agents.miner.file_agent import make_file_agent
from shoparena.harness import Episode
from shoparena.harness.tool_server import ToolServer
from shoparena.inference.proxy import InferenceProxy
from shoparena.inference.upstreams import HttpUpstream
from shoparena.judge import OfflineJudge
from shoparena.judge.gates import REASONED
from shoparena.judge.prompt import judge_messages
from shoparena.judge.trace import read_trace
from shoparena.records.inference import InferenceLog
from tests.agents.conftest_llm import Reply, ScriptedChatServer, completion, tool_call
from tests.inference.test_inference_proxy import follow_model, record_of, sdk_session
from tests.judge.conftest import build_trace

MINERS = Path(__file__).resolve().parents[1] / "agents" / "miners"
QUERY = "wireless earbuds for my commute"
CLAIMED = TokenUsage(prompt_tokens=40_000, completion_tokens=6_000, model_calls=8)


@pytest.fixture(scope="module")
def proxied():
    proxy = InferenceProxy()
    with ToolServer(routers=[proxy.router]) as server:
        yield server, proxy


def test_a_model_that_really_reasoned_through_the_proxy_passes_gate_one(judge_catalog, proxied, monkeypatch):
    server, proxy = proxied
    episode = Episode(judge_catalog, QUERY, profile="oro7", problem_id="p-judge")
    with sdk_session(server, episode, proxy, monkeypatch) as session:
        follow_model(QUERY)
        log = proxy.log_of(session)
    record = record_of(episode, log)  # the agent reports no usage at all: the log is the evidence
    view = read_trace(record)
    assert view.inference is not None and view.inference.served == log.served
    assert len(view.turns) == log.served and all(turn.message_index < 0 for turn in view.turns)
    verdict = OfflineJudge()(record)
    assert verdict.quality == 0.9, verdict.explanation  # the reference policy's reasoning, verified
    assert (
        f"{log.completion_tokens} completion tokens over {log.served} model call(s) (verified"
        in verdict.explanation
    )
    for span in verdict.cited_spans:  # spans of the logged responses verify like trace text
        assert any(by_model for *_, by_model in view.occurrences(span))
    prompt = judge_messages(record)[1]["content"]
    assert (
        "VERIFIED INFERENCE LOG (trusted" in prompt
        and "[inference 1, after 0 call(s)] model response:" in prompt
    )


def test_an_agent_that_claims_reasoning_tokens_without_inference_gets_the_low_gate(judge_catalog):
    agent = make_file_agent(str(MINERS / "good_miner.py"), timeout_s=60)  # claims "llm", never calls chat()
    try:
        episode = Episode(judge_catalog, QUERY + " real", profile="oro7", problem_id="p-judge")
        run = agent.run(episode, ProblemView(problem_id="p-judge", query=episode.query, bucket="product"))
    finally:
        agent.close()
    assert run.error is None and run.inference.requests == 0
    verdict = OfflineJudge()(record_of(episode, run.inference, usage=CLAIMED))
    assert (verdict.quality, verdict.gate) == (0.1, REASONED)
    assert "verified inference log holds no served model request (0 request(s) made)" in verdict.explanation
    assert "6000 completion tokens the agent reports are not evidence" in verdict.explanation


def test_model_text_and_llm_origins_without_verified_inference_still_fail_gate_one(judge_catalog):
    rich = build_trace(judge_catalog, 0.9)  # model-written turns, llm calls, usage reported: a 0.9
    assert OfflineJudge()(rich).quality == 0.9
    behind_proxy = rich.model_copy(update={"inference": InferenceLog(requests=2, refused=2)})
    verdict = OfflineJudge()(behind_proxy)
    assert (verdict.quality, verdict.gate) == (0.1, REASONED)


def test_the_logged_token_counts_not_the_claimed_ones_decide(judge_catalog, monkeypatch):
    reasoning = (
        "The commute needs earbuds that stay in and hold a charge, so I search the catalogue for "
        "wireless earbuds and will compare the battery and fit of the first results before choosing."
    )
    search = tool_call("c1", "find_product", {"q": "wireless earbuds"})
    replies = [Reply(completion(None, [search], reasoning_content=reasoning, completion_tokens=6))]
    with ScriptedChatServer(replies) as upstream:
        proxy = InferenceProxy({"m": HttpUpstream(upstream.base_url, max_retries=0)})
        episode = Episode(judge_catalog, QUERY, profile="oro7", problem_id="p-judge")
        with (
            ToolServer(routers=[proxy.router]) as server,
            sdk_session(server, episode, proxy, monkeypatch) as session,
        ):
            miner_sdk.chat([{"role": "user", "content": QUERY}])
            assert miner_sdk.call_tool("find_product", q="wireless earbuds")["origin"] == "llm"
            log = proxy.log_of(session)
    verdict = OfflineJudge()(record_of(episode, log, usage=CLAIMED))
    assert (verdict.quality, verdict.gate) == (0.1, REASONED)
    assert "6 completion tokens verified by the inference proxy (< 32)" in verdict.explanation
