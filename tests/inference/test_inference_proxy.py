"""The verified inference proxy on a real tool server: miner files and the real SDK (`miner_sdk`, also
used in this process) against real episodes of a generated catalogue, the offline reference model and
a scripted OpenAI-compatible server on loopback as upstreams."""

from __future__ import annotations

import http.client
import json
from contextlib import contextmanager
from pathlib import Path

import orjson
import pytest

from shoparena.agents.base import AgentSpecError, ProblemView
from shoparena.agents.miner import sdk as miner_sdk
from shoparena.agents.miner.file_agent import make_file_agent
from shoparena.eval.config import EvalConfig
from shoparena.eval.run_dir import TRAJECTORIES_FILE, read_trajectories
from shoparena.eval.runner import run_eval
from shoparena.harness import UPSTREAM, Episode
from shoparena.harness.tool_server import ToolServer
from shoparena.inference.proxy import InferenceProxy, ProxyLimits
from shoparena.inference.upstreams import HttpUpstream, make_upstream
from shoparena.judge import OfflineJudge
from shoparena.records.inference import InferenceLog
from shoparena.records.trajectory import (
    AgentInfo,
    HarnessInfo,
    Outcome,
    ProblemInfo,
    Timings,
    TokenUsage,
    TrajectoryRecord,
)
from shoparena.store import open_store
from tests.agents.conftest_llm import Reply, ScriptedChatServer, completion, error_body, tool_call

MINERS = Path(__file__).resolve().parents[1] / "agents" / "miners"


@pytest.fixture(scope="module")
def proxy():
    return InferenceProxy()


@pytest.fixture(scope="module")
def proxy_server(proxy):
    with ToolServer(routers=[proxy.router]) as server:
        yield server


@contextmanager
def sdk_session(server: ToolServer, episode: Episode, proxy: InferenceProxy, monkeypatch):
    """This process as the miner: the real SDK, pointed at a session of `episode`."""
    token = server.register(episode, ttl_s=120, state=proxy.new_state())
    monkeypatch.setenv(miner_sdk.URL_ENV, server.url)
    monkeypatch.setenv(miner_sdk.SESSION_ENV, token)
    try:
        yield server.session_of(token)
    finally:
        server.revoke(token)


def follow_model(query: str, model: str | None = None, rounds: int = 60) -> list[dict]:
    """Ask the model, run its calls exactly as given, feed the results back; the messages at the end."""
    messages = [{"role": "user", "content": query}]
    tools = miner_sdk.list_tools()
    for _ in range(rounds):
        message = miner_sdk.chat(messages, tools=tools, model=model)["choices"][0]["message"]
        messages.append(message)
        for call in message.get("tool_calls") or []:
            arguments = json.loads(call["function"]["arguments"])
            result = miner_sdk.call_tool(call["function"]["name"], **arguments)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result["text"]})
            if result["ended"]:
                return messages
        if not message.get("tool_calls"):
            return messages
    return messages


def raw_chat(server: ToolServer, token: str, body: bytes) -> tuple[int, dict, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        connection.request("POST", "/v1/inference/chat/completions", body=body, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read()), dict(response.getheaders())
    finally:
        connection.close()


def record_of(
    episode: Episode, inference: InferenceLog | None, usage: TokenUsage | None = None
) -> TrajectoryRecord:
    """The trajectory record of an episode, as the runner builds it (with the verified log once wired)."""
    return TrajectoryRecord(
        record_id=TrajectoryRecord.make_id("run-proxy", episode.problem_id or "p", 0),
        run_id="run-proxy",
        agent=AgentInfo(agent_id="file:x", kind="file", version="1", spec="file:x.py"),
        problem=ProblemInfo(problem_id=episode.problem_id or "p", bucket="product", query=episode.query),
        harness=HarnessInfo(profile=episode.profile, protocol="direct", step_cap=episode.step_cap),
        messages=episode.messages,
        tools=episode.tools,
        calls=episode.calls,
        outcome=Outcome(
            recommended_product_ids=episode.recommended_product_ids,
            terminated=episode.terminated,
            steps_used=episode.steps_used,
            end_reason=episode.end_reason,
        ),
        score={"success": True},
        scoring_mode="strict",
        usage=usage or TokenUsage(),
        inference=inference,
        timings=Timings(started_at="2026-01-01T00:00:00Z", wall_s=1.0),
        shoparena_version="test",
    )


# -- a miner that follows its model ------------------------------------------------------------------
def test_a_miner_file_that_runs_what_its_model_said_has_every_call_verified_as_llm(
    agent_catalog, agent_problems
):
    agent = make_file_agent(str(MINERS / "chat_miner.py"), timeout_s=60)
    try:
        for problem in agent_problems:
            episode = Episode.for_problem(problem, agent_catalog, profile="oro7")
            run = agent.run(episode, ProblemView.of(problem))
            assert run.error is None and run.notes == [] and episode.terminated == "success"
            assert episode.calls and {c.origin for c in episode.calls} == {"llm"}
            log = run.inference
            # every request and its response is in the log, in order, and every call it offered was used
            assert log.requests == log.served == len(log.entries) == len(run.model_outputs)
            assert [e.seq for e in log.entries] == list(range(1, log.served + 1))
            used = [call.used_by for entry in log.entries for call in entry.tool_calls]
            assert used == [c.call_id for c in episode.calls]
            assert log.tool_calls_offered == log.tool_calls_used == len(episode.calls)
            before = [e.calls_before for e in log.entries]
            assert before[0] == 0 and before == sorted(before) and before[-1] < len(episode.calls)
            for entry in log.entries:
                assert (
                    entry.status == 200
                    and entry.outcome == "ok"
                    and entry.upstream == "offline:reference-agentic"
                )
                assert entry.model == "reference-agentic" and len(entry.request_sha256) == 64
                assert entry.reasoning and entry.completion_tokens > 0 and entry.prompt_tokens > 0
                assert not entry.usage_estimated and entry.latency_s >= 0
            assert log.completion_tokens == sum(e.completion_tokens for e in log.entries)
            assert log.token_budget == ProxyLimits().token_budget
    finally:
        agent.close()


def test_the_same_calls_claimed_as_llm_without_an_inference_response_are_code(
    agent_catalog, agent_problems, proxy_server, proxy, monkeypatch
):
    problem = agent_problems[0]
    first = Episode.for_problem(problem, agent_catalog, profile="oro7")
    with sdk_session(proxy_server, first, proxy, monkeypatch):
        follow_model(problem.query)
    assert {c.origin for c in first.calls} == {"llm"}

    second = Episode.for_problem(problem, agent_catalog, profile="oro7")
    with sdk_session(proxy_server, second, proxy, monkeypatch) as session:
        for call in first.calls:  # the very same calls, claimed as the model's, with no inference
            reply = miner_sdk.call_tool(call.name, origin="llm", **call.arguments)
            assert reply["origin"] == "code"
        log = proxy.log_of(session)
    assert [(c.name, c.arguments) for c in second.calls] == [(c.name, c.arguments) for c in first.calls]
    assert {c.origin for c in second.calls} == {"code"}
    assert log.requests == 0 and log.unverified_llm_claims == len(first.calls)


def test_arguments_that_differ_are_code_and_each_offered_call_is_used_once(
    agent_catalog, proxy_server, proxy, monkeypatch
):
    episode = Episode(agent_catalog, "wireless earbuds with free shipping", profile="oro7", problem_id="p-2")
    with sdk_session(proxy_server, episode, proxy, monkeypatch) as session:
        message = miner_sdk.chat([{"role": "user", "content": episode.query}])["choices"][0]["message"]
        offered = [
            (c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"]
        ]
        name, arguments = offered[0]
        assert name == "find_product" and arguments["page"] == 1
        assert miner_sdk.call_tool(name, **{**arguments, "page": 2})["origin"] == "code"
        assert miner_sdk.call_tool(name, **{**arguments, "q": arguments["q"].upper()})["origin"] == "code"
        # the same arguments written differently (key order, spacing, 1.0 for 1) are the same call
        reordered = {key: arguments[key] for key in reversed(list(arguments))} | {"page": 1.0}
        body = json.dumps(reordered, separators=(" , ", " : ")).encode()
        status, reply, _ = _post_tool(proxy_server, session.token, name, body)
        assert status == 200 and reply["origin"] == "llm"
        assert miner_sdk.call_tool(name, **arguments)["origin"] == "code"  # used up
        log = proxy.log_of(session)
    assert [c.origin for c in episode.calls] == ["code", "code", "llm", "code"]
    assert log.entries[0].tool_calls[0].used_by == episode.calls[2].call_id
    assert [c.used_by for c in log.entries[0].tool_calls[1:]] == [None] * (len(offered) - 1)


def _post_tool(server: ToolServer, token: str, name: str, body: bytes) -> tuple[int, dict, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.request(
            "POST", f"/v1/tools/{name}", body=body, headers={"Authorization": f"Bearer {token}"}
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read()), dict(response.getheaders())
    finally:
        connection.close()


@pytest.mark.parametrize("model", ["reference-agentic-tags", "reference-agentic-qwen3"])
def test_calls_written_as_text_tags_are_verified_too(agent_catalog, proxy_server, proxy, monkeypatch, model):
    episode = Episode(agent_catalog, "a cotton t-shirt for men", profile="oro7", problem_id="p-3")
    with sdk_session(proxy_server, episode, proxy, monkeypatch):
        message = miner_sdk.chat([{"role": "user", "content": episode.query}], model=model)["choices"][0][
            "message"
        ]
        assert "tool_calls" not in message and "<tool_call>" in message["content"]
        calls = UPSTREAM.parse(message["content"]).calls
        assert calls and (message["content"].count("<tool_call>") == len(calls)) == (model.endswith("qwen3"))
        for call in calls:
            assert miner_sdk.call_tool(call.name, **call.arguments)["origin"] == "llm"
    assert [c.origin for c in episode.calls] == ["llm"] * len(calls)


# -- what the proxy refuses ---------------------------------------------------------------------------
def test_a_model_outside_the_allowlist_is_refused_and_logged(agent_catalog, proxy_server, proxy, monkeypatch):
    episode = Episode(agent_catalog, "a desk lamp", problem_id="p-4")
    with sdk_session(proxy_server, episode, proxy, monkeypatch) as session:
        with pytest.raises(miner_sdk.ToolServerError) as refused:
            miner_sdk.chat([{"role": "user", "content": "hi"}], model="gpt-4o")
        assert refused.value.status == 403
        assert "model 'gpt-4o' is not allowed" in str(refused.value) and "reference-agentic" in str(
            refused.value
        )
        models = miner_sdk._request("GET", "/v1/inference/models", None, 10)[1]
        log = proxy.log_of(session)
    assert [m["id"] for m in models["data"]] == list(proxy.models) and models[
        "default"
    ] == "reference-agentic"
    assert (log.requests, log.refused, log.served) == (1, 1, 0)
    assert (
        log.entries[0].model == "gpt-4o" and log.entries[0].status == 403 and log.entries[0].upstream is None
    )


def test_the_rate_limit_answers_429_with_retry_after(agent_catalog, monkeypatch):
    proxy = InferenceProxy(limits=ProxyLimits(requests_per_minute=2, burst=2))
    episode = Episode(agent_catalog, "a desk lamp", problem_id="p-5")
    body = json.dumps({"messages": [{"role": "user", "content": episode.query}]}).encode()
    with (
        ToolServer(routers=[proxy.router]) as server,
        sdk_session(server, episode, proxy, monkeypatch) as session,
    ):
        assert [raw_chat(server, session.token, body)[0] for _ in range(2)] == [200, 200]
        status, reply, headers = raw_chat(server, session.token, body)
        log = proxy.log_of(session)
    assert status == 429 and "rate limit of 2 requests per minute (burst 2)" in reply["error"]
    assert 1 <= int(headers["retry-after"]) <= 30
    assert (log.served, log.refused) == (2, 1) and log.entries[-1].request_sha256 == log.entries[
        0
    ].request_sha256


def test_the_token_budget_is_enforced_per_problem(agent_catalog, agent_problems, monkeypatch):
    proxy = InferenceProxy(limits=ProxyLimits(token_budget=9000))
    problem = agent_problems[2]
    with ToolServer(routers=[proxy.router]) as server:
        episode = Episode.for_problem(problem, agent_catalog, profile="oro7")
        with sdk_session(server, episode, proxy, monkeypatch) as session:
            with pytest.raises(miner_sdk.ToolServerError) as spent:
                follow_model(problem.query)
            log = proxy.log_of(session)
        assert spent.value.status == 429 and "budget of 9,000" in str(spent.value)
        assert log.served >= 2 and log.refused == 1 and log.entries[-1].outcome == "refused"
        # a request is forwarded only while its prompt fits what is left, so the budget is overrun by
        # at most one response's completion
        served_tokens = log.prompt_tokens + log.completion_tokens
        assert served_tokens == sum(e.prompt_tokens + e.completion_tokens for e in log.entries)
        assert served_tokens < 9000 + max(e.completion_tokens for e in log.entries)
        # a fresh problem starts with a fresh budget
        fresh = Episode.for_problem(problem, agent_catalog, profile="oro7")
        with sdk_session(server, fresh, proxy, monkeypatch):
            assert miner_sdk.chat([{"role": "user", "content": problem.query}])["choices"]


def test_request_caps_and_malformed_requests_are_refused_and_counted(agent_catalog, monkeypatch):
    proxy = InferenceProxy(limits=ProxyLimits(max_request_bytes=4096, max_messages=3, max_refused_entries=4))
    episode = Episode(agent_catalog, "a desk lamp", problem_id="p-6")
    user = {"role": "user", "content": "a desk lamp"}
    cases = [
        (
            json.dumps({"messages": [{"role": "user", "content": "x" * 5000}]}).encode(),
            413,
            "exceeds the limit of 4096",
        ),
        (json.dumps({"messages": [user] * 4}).encode(), 400, "4 messages exceed the limit of 3"),
        (json.dumps({"messages": [user], "stream": True}).encode(), 400, "streaming is not supported"),
        (json.dumps({"messages": [user], "n": 3}).encode(), 400, "n must be 1"),
        (
            json.dumps({"messages": [user], "logprobs": True}).encode(),
            400,
            "unsupported parameter(s) 'logprobs'",
        ),
        (b"{not json", 400, "not JSON"),
        (json.dumps({"messages": []}).encode(), 400, "non-empty list"),
    ]
    with (
        ToolServer(routers=[proxy.router]) as server,
        sdk_session(server, episode, proxy, monkeypatch) as session,
    ):
        for body, status, message in cases:
            got, reply, _ = raw_chat(server, session.token, body)
            assert (got, reply["ok"]) == (status, False) and message in reply["error"], reply
        log = proxy.log_of(session)
    assert (log.requests, log.refused, log.served) == (len(cases), len(cases), 0)
    assert [e.status for e in log.entries] == [413, 400, 400, 400]
    assert log.entries[0].request_sha256 is None and log.entries[0].request_bytes > 4096
    assert log.notes == [
        f"{len(cases) - 4} refused request(s) were counted and not stored (only the first 4 refusals are)"
    ]


def test_no_inference_after_the_episode_has_ended(agent_catalog, proxy_server, proxy, monkeypatch):
    episode = Episode(agent_catalog, "a desk lamp", problem_id="p-7")
    with sdk_session(proxy_server, episode, proxy, monkeypatch):
        miner_sdk.call_tool("terminate", status="failure")
        with pytest.raises(miner_sdk.ToolServerError) as ended:
            miner_sdk.chat([{"role": "user", "content": episode.query}])
    assert ended.value.status == 409 and "episode has ended" in str(ended.value)


def test_a_bad_proxy_configuration_is_refused_clearly():
    with pytest.raises(AgentSpecError, match="inference_models item 'qwen': expected NAME=UPSTREAM"):
        make_file_agent(str(MINERS / "chat_miner.py"), inference_models="qwen")
    with pytest.raises(AgentSpecError, match="no offline model 'nope'"):
        make_file_agent(str(MINERS / "chat_miner.py"), inference_models="m=offline:nope")
    with pytest.raises(AgentSpecError, match="token_budget: Input should be greater than or equal to 1"):
        make_file_agent(str(MINERS / "chat_miner.py"), inference_limits={"token_budget": 0})
    with pytest.raises(AgentSpecError, match="default model 'x' is not in the allowlist"):
        make_file_agent(str(MINERS / "chat_miner.py"), inference_default="x")
    with pytest.raises(ValueError, match="expected offline:NAME or an OpenAI-compatible base URL"):
        make_upstream("ftp://x")


# -- an OpenAI-compatible upstream --------------------------------------------------------------------
def test_an_http_upstream_is_forwarded_to_with_its_model_and_capped_tokens(agent_catalog, monkeypatch):
    search = tool_call("u1", "find_product", {"q": "desk lamp"})
    replies = [
        Reply(
            completion(
                None, [search], reasoning_content="Search first.", prompt_tokens=50, completion_tokens=30
            )
        ),
        Reply(error_body("bad request"), 400),
        Reply(error_body("down"), 503),
        Reply(
            {
                **completion(
                    '<think>no usage reported</think><tool_call>[{"name": "terminate", '
                    '"parameters": {"status": "failure"}}]</tool_call>'
                ),
                "usage": None,
            }
        ),
    ]
    with ScriptedChatServer(replies) as upstream_server:
        upstream = HttpUpstream(upstream_server.base_url, "Qwen/Qwen3-4B", max_retries=0)
        proxy = InferenceProxy({"qwen": upstream}, limits=ProxyLimits(max_completion_tokens=256))
        episode = Episode(agent_catalog, "a desk lamp", problem_id="p-8")
        with (
            ToolServer(routers=[proxy.router]) as server,
            sdk_session(server, episode, proxy, monkeypatch) as session,
        ):
            user = [{"role": "user", "content": episode.query}]
            message = miner_sdk.chat(user, tools=episode.tools, max_tokens=9999, temperature=0.2)
            assert message["choices"][0]["message"]["tool_calls"] == [search]
            assert miner_sdk.call_tool("find_product", q="desk lamp")["origin"] == "llm"
            for status in (400, 502):
                with pytest.raises(miner_sdk.ToolServerError) as failed:
                    miner_sdk.chat(user)
                assert failed.value.status == status
            last = miner_sdk.chat(user, model="qwen")["choices"][0]["message"]
            assert "<tool_call>" in last["content"]
            assert miner_sdk.call_tool("terminate", status="failure")["origin"] == "llm"
            log = proxy.log_of(session)
    sent = upstream_server.requests[0].body
    assert sent["model"] == "Qwen/Qwen3-4B" and sent["max_tokens"] == 256 and sent["temperature"] == 0.2
    assert sent["tools"] == episode.tools and "n" not in sent
    assert [(e.outcome, e.status) for e in log.entries] == [
        ("ok", 200),
        ("upstream_error", 400),
        ("upstream_error", 502),
        ("ok", 200),
    ]
    first, second_entry = log.entries[0], log.entries[3]
    assert (first.prompt_tokens, first.completion_tokens, first.usage_estimated) == (50, 30, False)
    assert (
        first.reasoning == "Search first." and first.upstream == f"{upstream_server.base_url}#Qwen/Qwen3-4B"
    )
    assert second_entry.usage_estimated and second_entry.completion_tokens > 0
    assert (log.served, log.failed, log.refused) == (2, 2, 0) and "bad request" in log.entries[1].error
    assert second_entry.tool_calls[0].used_by == episode.calls[-1].call_id


# -- the record ---------------------------------------------------------------------------------------
def test_the_log_is_written_into_the_record_and_records_without_one_keep_their_bytes(
    agent_catalog, agent_problems, proxy_server, proxy, monkeypatch, tmp_path
):
    problem = agent_problems[0]
    episode = Episode.for_problem(problem, agent_catalog, profile="oro7")
    with sdk_session(proxy_server, episode, proxy, monkeypatch) as session:
        follow_model(problem.query)
        log = proxy.log_of(session)
    with_log = record_of(episode, log)
    line = orjson.dumps(with_log.model_dump(mode="json"))
    back = TrajectoryRecord.model_validate(orjson.loads(line))
    assert back.inference == log and back == with_log and len(back.inference.entries) == log.served > 0

    without = record_of(episode, None)
    data = without.model_dump(mode="json")
    assert "inference" not in data and "inference" not in without.model_dump_json()
    # a record written before the field existed: same keys in the same order, read and written back unchanged
    old_keys = [
        "schema_version",
        "record_id",
        "run_id",
        "sample",
        "agent",
        "validator_hotkey",
        "problem",
        "harness",
        "messages",
        "tools",
        "calls",
        "outcome",
        "score",
        "scoring_mode",
        "scoring_pipeline_version",
        "judge",
        "usage",
        "timings",
        "shoparena_version",
    ]
    assert list(data) == old_keys
    old_line = orjson.dumps(data)
    assert (
        orjson.dumps(TrajectoryRecord.model_validate(orjson.loads(old_line)).model_dump(mode="json"))
        == old_line
    )

    # the store keeps the log: its export gives back the very bytes, log included
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        other = without.model_copy(update={"record_id": "other"})
        assert store.ingest([with_log, other]).inserted == 2
        store.export(tmp_path / "out.jsonl")
    finally:
        store.close()
    exported = (tmp_path / "out.jsonl").read_bytes().splitlines()
    assert line in exported and orjson.dumps(other.model_dump(mode="json")) in exported


def test_logged_texts_are_capped_per_text_and_per_episode(agent_catalog, monkeypatch):
    long = "word " * 120  # 600 characters of reasoning per response
    replies = [Reply(completion("ok", reasoning_content=long)) for _ in range(4)]
    with ScriptedChatServer(replies) as upstream_server:
        limits = ProxyLimits(max_text_chars=400, max_log_chars=1024, preview_chars=50)
        proxy = InferenceProxy({"m": HttpUpstream(upstream_server.base_url, max_retries=0)}, limits=limits)
        episode = Episode(agent_catalog, "a desk lamp", problem_id="p-9")
        with (
            ToolServer(routers=[proxy.router]) as server,
            sdk_session(server, episode, proxy, monkeypatch) as session,
        ):
            for _ in range(4):  # the agent gets every response whole; only the log is bounded
                reply = miner_sdk.chat([{"role": "user", "content": episode.query}])
                assert reply["choices"][0]["message"]["reasoning_content"] == long
            log = proxy.log_of(session)
    assert [len(e.reasoning) for e in log.entries] == [400, 400, 220, 50]  # 1024 − 2 × (400 + len("ok"))
    assert log.entries[0].cut == "reasoning of 600 characters kept as the first 400"
    assert log.entries[3].cut.endswith("kept as the first 50 (the log's text budget is spent)")
    assert [e.content for e in log.entries] == ["ok", "ok", "ok", "ok"]


def test_an_eval_run_of_a_miner_file_records_its_calls_as_llm(agent_catalog_dir, agent_problems, tmp_path):
    """Through the runner (a worker process, the file agent's own server and proxy, sandboxed
    in effect): the records carry the verified origins and the proxy's log, and the offline judge
    grades the reasoning the proxy really served."""
    result = run_eval(
        EvalConfig(
            catalog=agent_catalog_dir,
            problems=list(agent_problems),
            agent=f"file:{MINERS / 'chat_miner.py'}",
            out=tmp_path / "run",
            timeout=60,
            executor="process",
            similarity="lexical",
            bootstrap=100,
        ),
        judge=OfflineJudge(),
    )
    records = read_trajectories(tmp_path / "run" / TRAJECTORIES_FILE).records
    assert len(records) == len(agent_problems) and result.metrics
    for record in records:
        assert record.outcome.error is None and record.outcome.terminated == "success"
        assert record.calls and {call.origin for call in record.calls} == {"llm"}
        assert record.inference is not None and record.inference.served >= 2
        assert record.judge is not None and record.judge.quality == 0.9
