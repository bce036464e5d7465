"""The OpenAI-compatible agent against a real HTTP server on loopback with scripted replies."""

from __future__ import annotations

import email.utils
import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.agents.base import AgentRun, ProblemView, episode_seed, make_agent
from shoparena.agents.chat_loop import DEFAULT_SYSTEM_PROMPT, ChatLoop, Completion
from shoparena.agents.openai_agent import ChatCompletionsClient, make_openai_agent, retry_after_seconds
from shoparena.harness import Episode
from shoparena.harness.protocols import upstream_system_prompt
from shoparena.harness.tool_specs import tool_schemas
from tests.agents.conftest_llm import (
    Reply,
    ScriptedChatServer,
    completion,
    error_body,
    last_tool_results,
    tool_call,
)

VIEW = ProblemView(problem_id="p1", query="", bucket="product")


@pytest.fixture(scope="module")
def query(small_catalog) -> str:
    """Words of a real product title, so find_product returns hits."""
    title = small_catalog.store.dict_by_ord(0)["title"]
    return " ".join(title.split()[:3])


def new_episode(catalog, query: str, **options) -> Episode:
    return Episode(catalog, query, profile="oro7", problem_id="p1", **options)


def agent_for(server: ScriptedChatServer, **options):
    options = {"api_key": "sk-test", "backoff_base_s": 0.01, "timeout_s": 5, **options}
    agent = make_openai_agent("scripted-model", base_url=server.base_url, **options)
    sleeps: list[float] = []
    agent.client.sleep = sleeps.append
    return agent, sleeps


def recommend_first_hit(body: dict) -> dict:
    """A reply that recommends the first product the last search returned (so results must reach the model)."""
    hits = last_tool_results(body)[0]
    return completion(
        "Recommending the best match.",
        [tool_call("call_rec", "recommend_product", {"product_ids": hits[0]["product_id"]})],
        prompt_tokens=300,
        completion_tokens=15,
    )


def test_multi_turn_episode_searches_recommends_terminates(small_catalog, query):
    replies = [
        Reply(completion(None, [tool_call("call_abc", "find_product", {"q": query})], prompt_tokens=200)),
        Reply(recommend_first_hit),
        Reply(
            completion(None, [tool_call("call_end", "terminate", {"status": "success"})], prompt_tokens=400)
        ),
    ]
    with ScriptedChatServer(replies) as server:
        agent, sleeps = agent_for(server, temperature=0.3, seed=5, max_tokens=256)
        episode = new_episode(small_catalog, query)
        run = agent.run(episode, VIEW)

    assert run.error is None and sleeps == []
    assert [c.name for c in episode.calls] == ["find_product", "recommend_product", "terminate"]
    assert {c.origin for c in episode.calls} == {"llm"}
    assert all(c.error is None for c in episode.calls)
    hits = episode.calls[0].result
    assert episode.recommended_product_ids == [hits[0]["product_id"]]
    assert episode.terminated == "success" and episode.ended and episode.steps_used == 3
    assert (run.usage.prompt_tokens, run.usage.completion_tokens, run.usage.model_calls) == (900, 55, 3)
    assert len(run.model_outputs) == 3 and run.model_outputs[0]["tool_calls"][0]["id"] == "call_abc"

    first, second, third = (r.body for r in server.requests)
    assert all(r.headers["Authorization"] == "Bearer sk-test" for r in server.requests)
    assert first["model"] == "scripted-model" and first["temperature"] == 0.3 and first["seed"] == 5
    assert first["max_tokens"] == 256 and first["tool_choice"] == "auto"
    assert first["tools"] == episode.tools
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][1]["content"] == query
    assistant, tool = second["messages"][2], second["messages"][3]
    assert assistant["tool_calls"][0]["id"] == "call_abc"
    assert tool == {
        "role": "tool",
        "tool_call_id": "call_abc",
        "content": json.dumps(hits, separators=(",", ":")),
    }
    assert json.loads(tool["content"]) == hits
    assert third["messages"][-1]["tool_call_id"] == "call_rec"
    assert "Having recommended" in third["messages"][-1]["content"]


def test_malformed_tool_call_json_becomes_an_error_observation(small_catalog, query):
    replies = [
        Reply(completion(None, [tool_call("call_bad", "find_product", '{"q": "shoe"')])),
        Reply(completion(None, [tool_call("call_ok", "find_product", {"q": query})])),
        Reply(completion(None, [tool_call("call_end", "terminate", {"status": "failure"})])),
    ]
    with ScriptedChatServer(replies) as server:
        agent, _ = agent_for(server)
        episode = new_episode(small_catalog, query)
        run = agent.run(episode, VIEW)

    assert run.error is None
    bad = episode.calls[0]
    assert (
        bad.name == "find_product" and "not valid JSON" in bad.error and bad.raw_arguments == '{"q": "shoe"'
    )
    assert episode.calls[1].error is None and episode.terminated == "failure"
    sent = server.requests[1].body["messages"]
    assert sent[-1]["tool_call_id"] == "call_bad" and sent[-1]["content"].startswith("Error: ")
    assert "not valid JSON" in sent[-1]["content"]
    # servers json-decode past arguments; the broken text stays in the episode trace only
    assert sent[-2]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert episode.messages[1]["tool_calls"][0]["function"]["arguments"] == '{"q": "shoe"'


def test_rate_limited_then_success_honours_retry_after(small_catalog, query):
    replies = [
        Reply(error_body("slow down"), status=429, headers={"Retry-After": "0"}),
        Reply(completion("No tool needed.")),
    ]
    with ScriptedChatServer(replies) as server:
        agent, sleeps = agent_for(server, backoff_base_s=50.0)
        episode = new_episode(small_catalog, query)
        run = agent.run(episode, VIEW)
    assert run.error is None and sleeps == [0.0]
    assert len(server.requests) == 2 and agent.client.attempts == 2
    assert agent.client.failures == ["HTTP 429: slow down"]
    assert episode.steps_used == 1 and not episode.ended  # a final answer without tool calls


def test_server_error_then_success_backs_off(small_catalog, query):
    replies = [
        Reply(error_body("boom"), status=500),
        Reply(completion(None, [tool_call("c1", "terminate", {"status": "success"})])),
    ]
    with ScriptedChatServer(replies) as server:
        agent, sleeps = agent_for(server, backoff_base_s=0.01)
        episode = new_episode(small_catalog, query)
        run = agent.run(episode, VIEW)
    assert run.error is None and episode.terminated == "success"
    assert len(sleeps) == 1 and 0.0 <= sleeps[0] <= 0.01
    assert agent.client.failures == ["HTTP 500: boom"]


def test_hung_request_is_abandoned_and_retried(small_catalog, query):
    replies = [
        Reply(completion(None, [tool_call("late", "terminate", {"status": "failure"})]), delay_s=2.0),
        Reply(completion(None, [tool_call("c1", "terminate", {"status": "success"})])),
    ]
    with ScriptedChatServer(replies) as server:
        agent, _ = agent_for(server, timeout_s=0.3)
        episode = new_episode(small_catalog, query)
        run = agent.run(episode, VIEW)
    assert run.error is None
    assert agent.client.failures == ["no response within 0.3 s"]
    assert episode.terminated == "success" and [c.call_id for c in episode.calls] == ["c1"]


def test_all_retries_failing_ends_the_run_with_an_error(small_catalog, query):
    def script(index: int, body: dict) -> Reply:
        if index == 0:
            return Reply(completion(None, [tool_call("c1", "find_product", {"q": query})]))
        return Reply(error_body("overloaded"), status=503)

    with ScriptedChatServer(script) as server:
        agent, sleeps = agent_for(server, max_retries=2)
        episode = new_episode(small_catalog, query)
        run = agent.run(episode, VIEW)
    assert len(server.requests) == 4 and len(sleeps) == 2
    assert "gave up after 3 attempts" in run.error and "HTTP 503: overloaded" in run.error
    assert [c.name for c in episode.calls] == ["find_product"]
    assert episode.steps_used == 1 and not episode.ended and episode.end_reason is None
    assert run.usage.model_calls == 1


def test_client_error_is_not_retried(small_catalog, query):
    with ScriptedChatServer([Reply(error_body("model 'x' does not exist"), status=404)]) as server:
        agent, sleeps = agent_for(server)
        episode = new_episode(small_catalog, query)
        run = agent.run(episode, VIEW)
    assert len(server.requests) == 1 and sleeps == []
    assert "HTTP 404: model 'x' does not exist" in run.error
    assert episode.steps_used == 0


def test_unreachable_endpoint_reports_connection_errors(small_catalog, query):
    with ScriptedChatServer([]) as server:
        base_url = server.base_url
    agent = make_openai_agent("m", base_url=base_url, max_retries=1, backoff_base_s=0.0, timeout_s=2)
    run = agent.run(new_episode(small_catalog, query), VIEW)
    assert "gave up after 2 attempts" in run.error and "connection failed" in run.error


def test_tags_protocol_sends_no_tools_and_replays_the_dialogue(small_catalog, query):
    def recommend(body: dict) -> dict:
        prompt = body["messages"][-1]["content"]
        obs = json.loads(prompt.rsplit("<obs>", 1)[1].split("</obs>", 1)[0])
        first_id = obs[0]["results"][0]["product_id"]
        calls = [
            {"name": "recommend_product", "parameters": {"product_ids": first_id}},
            {"name": "terminate", "parameters": {"status": "success"}},
        ]
        return completion(f"<think>first hit fits</think>\n<tool_call>{json.dumps(calls)}</tool_call>")

    search = [{"name": "find_product", "parameters": {"q": query}}]
    replies = [
        Reply(completion(f"<think>search first</think>\n<tool_call>{json.dumps(search)}</tool_call>")),
        Reply(recommend),
    ]
    with ScriptedChatServer(replies) as server:
        agent, _ = agent_for(server, protocol="tags")
        episode = new_episode(small_catalog, query)
        run = agent.run(episode, VIEW)

    assert run.error is None and episode.terminated == "success"
    assert [c.name for c in episode.calls] == ["find_product", "recommend_product", "terminate"]
    assert episode.recommended_product_ids == [episode.calls[0].result[0]["product_id"]]
    assert episode.turns[0].thinking == "search first"
    first, second = (r.body for r in server.requests)
    assert "tools" not in first and "tool_choice" not in first
    assert first["messages"][0] == {"role": "system", "content": upstream_system_prompt(episode.tools)}
    assert first["messages"][1]["content"] == f"# Dialogue Records History\n<user>{query}</user>"
    assert "<tool_call>" in second["messages"][1]["content"] and "<obs>" in second["messages"][1]["content"]
    assert isinstance(run.model_outputs[0], str) and run.model_outputs[0].startswith("<think>")


def test_qwen_protocol_with_a_reasoning_parser_server(small_catalog, query):
    search = json.dumps({"name": "find_product", "arguments": {"q": query}})
    end = json.dumps({"name": "terminate", "arguments": {"status": "failure"}})
    replies = [
        # a server with a reasoning parser returns the thinking separately; the agent puts it back inline
        Reply(completion(f"<tool_call>\n{search}\n</tool_call>", reasoning_content="I should search.")),
        Reply(completion(f"Nothing fits.\n<tool_call>\n{end}\n</tool_call>")),
    ]
    with ScriptedChatServer(replies) as server:
        agent, _ = agent_for(
            server, protocol="qwen", extra_body={"chat_template_kwargs": {"enable_thinking": True}}
        )
        episode = new_episode(small_catalog, query)
        run = agent.run(episode, VIEW)

    assert run.error is None and episode.terminated == "failure"
    assert episode.turns[0].thinking == "I should search." and episode.turns[1].content == "Nothing fits."
    first, second = (r.body for r in server.requests)
    assert "tools" not in first and first["chat_template_kwargs"] == {"enable_thinking": True}
    assert first["messages"][0]["role"] == "system" and "<tools>" in first["messages"][0]["content"]
    assert '"name":"find_product"' in first["messages"][0]["content"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert "<tool_call>" in second["messages"][2]["content"]
    response = second["messages"][3]["content"]
    assert response.startswith("<tool_response>") and episode.calls[0].result[0]["product_id"] in response


def test_max_turns_and_step_cap_bound_the_loop(small_catalog, query):
    def search_forever(index: int, body: dict) -> Reply:
        return Reply(completion(None, [tool_call(f"c{index}", "find_product", {"q": query, "page": 1})]))

    with ScriptedChatServer(search_forever) as server:
        agent, _ = agent_for(server, max_turns=2)
        episode = new_episode(small_catalog, query)
        run = agent.run(episode, VIEW)
        assert len(server.requests) == 2 and episode.steps_used == 2 and not episode.ended
        assert run.usage.model_calls == 2 and run.error is None

        agent, _ = agent_for(server)
        capped = new_episode(small_catalog, query, step_cap=3)
        agent.run(capped, VIEW)
        assert len(server.requests) == 5 and capped.steps_used == 3
        assert capped.end_reason.startswith("step cap reached")


def test_registry_spec_and_environment(small_catalog, query, monkeypatch):
    replies = [Reply(completion("hello")), Reply(completion("hello again"))]
    with ScriptedChatServer(replies) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        agent = make_agent("openai:env-model")
        assert agent.kind == "openai" and agent.agent_id == "openai:env-model"
        agent.run(new_episode(small_catalog, query), VIEW)
        monkeypatch.delenv("OPENAI_API_KEY")
        make_agent("openai:env-model", system_prompt=None).run(new_episode(small_catalog, query), VIEW)
    with_key, without_key = server.requests
    assert with_key.headers["Authorization"] == "Bearer sk-env" and with_key.body["model"] == "env-model"
    assert "Authorization" not in without_key.headers
    assert [m["role"] for m in without_key.body["messages"]] == ["user"]


@pytest.mark.parametrize("protocol", ["openai", "tags", "qwen"])
def test_system_prompt_for_the_trace_is_the_one_sent(small_catalog, query, protocol):
    with ScriptedChatServer([Reply(completion("<response>nothing to do</response>"))]) as server:
        agent, _ = agent_for(server, protocol=protocol)
        tools = tool_schemas("oro7")
        episode = new_episode(small_catalog, query, system_prompt=agent.system_prompt_for(tools))
        agent.run(episode, VIEW)
    sent = server.requests[0].body["messages"]
    assert [m["role"] for m in sent].count("system") == 1 and sent[0]["role"] == "system"
    recorded = episode.messages[0]
    assert recorded["role"] == "system"
    if protocol == "qwen":  # Qwen3's tool preamble is appended to the recorded prompt
        assert sent[0]["content"].startswith(recorded["content"]) and "<tools>" in sent[0]["content"]
    else:
        assert sent[0] == recorded
    expected = upstream_system_prompt(tools) if protocol == "tags" else DEFAULT_SYSTEM_PROMPT
    assert recorded["content"] == expected


def test_bad_options_fail_at_construction():
    with pytest.raises(ValueError, match="unknown protocol"):
        make_openai_agent("m", base_url="http://127.0.0.1:9/v1", protocol="xml")
    with pytest.raises(ValueError, match="timeout_s"):
        make_openai_agent("m", base_url="http://127.0.0.1:9/v1", timeout_s=0)


@given(attempt=st.integers(0, 12), base=st.floats(0.0, 5.0), cap=st.floats(0.0, 60.0))
def test_backoff_stays_within_the_exponential_envelope(attempt, base, cap):
    client = ChatCompletionsClient("http://127.0.0.1:9/v1", backoff_base_s=base, backoff_max_s=cap)
    delay = client._delay(attempt, None)
    assert 0.0 <= delay <= min(cap, base * 2**attempt)
    assert client._delay(attempt, 7.5) == 7.5 and client._delay(attempt, -3) == 0.0


def test_retry_after_reads_seconds_and_http_dates():
    assert (
        retry_after_seconds("3") == 3.0
        and retry_after_seconds(None) is None
        and retry_after_seconds("soon") is None
    )
    assert 25 < retry_after_seconds(email.utils.formatdate(time.time() + 30, usegmt=True)) <= 30
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") < 0  # in the past: the client then waits 0 s


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    outputs=st.lists(
        st.text(max_size=200) | st.sampled_from(["<tool_call>", "<tool_call>{", "</think>"]),
        min_size=1,
        max_size=4,
    )
)
def test_any_model_text_is_recorded_never_raised(small_catalog, outputs):
    """Whatever a text-protocol model says, each output becomes one recorded turn and the loop ends cleanly."""
    for protocol in ("qwen", "tags"):
        replies = iter(outputs)

        def complete(messages, tools, replies=replies):
            return Completion(output=next(replies, ""), prompt_tokens=1, completion_tokens=1)

        episode = Episode(small_catalog, "red shoes")
        run = ChatLoop(complete, protocol, max_turns=len(outputs)).run(episode, AgentRun())
        assert run.error is None and 1 <= len(run.model_outputs) <= len(outputs)
        assert episode.steps_used == len(run.model_outputs) == run.usage.model_calls


def test_each_sample_of_a_problem_asks_for_a_seed_of_its_own(small_catalog, query):
    """pass@k needs k different samples: one seed for every request would make them copies."""
    end = completion(None, [tool_call("call_end", "terminate", {"status": "failure"})], prompt_tokens=10)
    with ScriptedChatServer([Reply(end)] * 4) as server:
        agent, _sleeps = agent_for(server, temperature=0.7, seed=5)
        for problem_id, sample in (("p1", 0), ("p1", 1), ("p2", 0), ("p1", 1)):
            agent.begin_episode(problem_id, sample)
            agent.run(new_episode(small_catalog, query), VIEW)
        seeds = [request.body["seed"] for request in server.requests]
    assert seeds == [episode_seed(5, "p1", 0), episode_seed(5, "p1", 1), episode_seed(5, "p2", 0),
                     episode_seed(5, "p1", 1)]  # fmt: skip
    assert len(set(seeds[:3])) == 3


@given(st.integers(0, 2**63), st.text(max_size=40), st.integers(0, 10_000))
def test_episode_seeds_are_stable_32_bit_and_differ_by_sample(seed, problem_id, sample):
    value = episode_seed(seed, problem_id, sample)
    assert value == episode_seed(seed, problem_id, sample) and 0 <= value < 2**32
    assert value != episode_seed(seed, problem_id, sample + 1) or value != episode_seed(
        seed, problem_id, sample + 2
    )
