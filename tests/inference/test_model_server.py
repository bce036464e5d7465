"""The model server on the tiny random Qwen3 checkpoint (`make_tiny_model`), served by a real uvicorn on
loopback and called through the proxy's real `HttpUpstream`, raw HTTP and, end to end, a miner file
whose `miner_sdk.chat` goes through the inference proxy to the served checkpoint.

Random weights write no sensible calls: where a valid call is needed, the loaded agent's `generate` is
replaced (the documented seam) by one that runs the real generation and swaps in a fixed text, so
token counts stay real and everything around it (render, template, parser, HTTP, proxy) is the thing.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from shoparena.agents.base import ProblemView
from shoparena.agents.hf_agent import Generation
from shoparena.agents.miner.file_agent import make_file_agent
from shoparena.harness import Episode
from shoparena.harness.protocols import QWEN3
from shoparena.inference.model_server import HFModelServer, start_model_server
from shoparena.inference.upstreams import EpisodeContext, UpstreamError, make_upstream
from shoparena.inference.vllm_server import VllmServer, VllmStartError, VllmUnavailable, vllm_command
from shoparena.sandbox import NoSandboxWarning

pytest.importorskip("torch")
pytest.importorskip("transformers")

NAME = "shoparena-distilled"
SERVER_MAX = 6
MINERS = Path(__file__).resolve().parents[1] / "agents" / "miners"
CONTEXT = EpisodeContext(step_cap=20, tool_names=())
THOUGHT_AND_CALL = (
    '<think>Search first.</think><tool_call>{"name": "find_product", "arguments": {"q": "x"}}</tool_call>'
)


@pytest.fixture(scope="module")
def server(tiny_model_dir):
    with start_model_server(tiny_model_dir, name=NAME, device="cpu", max_new_tokens=SERVER_MAX) as running:
        yield running


@pytest.fixture
def seen(server, monkeypatch) -> list[dict]:
    """Replace generation by the real one with its text swapped for THOUGHT_AND_CALL; record each call."""
    calls: list[dict] = []
    real = server.agent.generate

    def generate(prompt: str, **options) -> Generation:
        calls.append({"prompt": prompt, **options})
        return real(prompt, **options).model_copy(update={"text": THOUGHT_AND_CALL})

    monkeypatch.setattr(server.agent, "generate", generate)
    return calls


def post(server, body: bytes | dict) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{server.base_url}/chat/completions", data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def user(text: str = "a yoga mat") -> list[dict]:
    return [{"role": "user", "content": text}]


# -- the happy path through the proxy's upstream client -------------------------------------------------
def test_models_and_a_real_generation_through_the_http_upstream(server, tiny_model_dir):
    with urllib.request.urlopen(f"{server.base_url}/models", timeout=10) as response:
        listed = json.loads(response.read())
    assert listed["object"] == "list" and [m["id"] for m in listed["data"]] == [NAME]
    assert server.upstream_spec() == f"{server.base_url}#{NAME}" and server.base_url.startswith(
        "http://127.0.0.1:"
    )

    upstream = make_upstream(server.upstream_spec(NAME))
    try:
        answer = upstream.complete({"model": "public-name", "messages": user(), "max_tokens": 3}, CONTEXT)
    finally:
        upstream.close()
    choice, usage = answer["choices"][0], answer["usage"]
    assert answer["model"] == NAME and answer["object"] == "chat.completion"
    assert choice["message"]["role"] == "assistant" and choice["finish_reason"] in (
        "stop",
        "length",
        "tool_calls",
    )
    prompt = server.agent.render_prompt(
        *server.agent.loop.render_history(server.agent.loop.with_system_prompt(user()), None)
    )
    expected_prompt_tokens = len(server.agent.tokenizer(prompt, add_special_tokens=False)["input_ids"])
    assert usage["prompt_tokens"] == expected_prompt_tokens and 1 <= usage["completion_tokens"] <= 3
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_the_prompt_is_the_hf_agents_own_render_of_the_same_conversation(server, seen, agent_catalog):
    episode = Episode(agent_catalog, "a yoga mat under 300", problem_id="p1")
    episode.run_turn(QWEN3, THOUGHT_AND_CALL, origin="llm")  # an assistant turn with a call, and its result
    assert [m["role"] for m in episode.messages] == ["user", "assistant", "tool"]

    status, _ = post(server, {"model": NAME, "messages": episode.messages, "tools": episode.tools})
    assert status == 200
    agent = server.agent
    assert seen[-1]["prompt"] == agent.render_prompt(*agent.loop.render(episode))
    assert "<tools>" in seen[-1]["prompt"] and "<tool_response>" in seen[-1]["prompt"]


# -- parsing and serialisation (the generate seam) -------------------------------------------------------
def test_a_generated_call_is_answered_as_openai_tool_calls_with_reasoning(server, seen):
    status, answer = post(
        server,
        {"model": NAME, "messages": user(), "max_tokens": 2, "temperature": 0.7, "top_p": 0.9, "seed": 3},
    )
    assert status == 200
    choice = answer["choices"][0]
    message = choice["message"]
    assert choice["finish_reason"] == "tool_calls"
    assert message["reasoning_content"] == "Search first." and message["content"] is None
    [call] = message["tool_calls"]
    assert call["id"].startswith("call_") and call["type"] == "function"
    assert call["function"]["name"] == "find_product" and json.loads(call["function"]["arguments"]) == {
        "q": "x"
    }
    assert seen[-1] | {"prompt": ""} == {
        "prompt": "",
        "max_new_tokens": 2,
        "temperature": 0.7,
        "top_p": 0.9,
        "seed": 3,
    }
    assert answer["usage"]["completion_tokens"] <= 2


def test_an_oversize_max_tokens_is_capped_not_refused(server, seen):
    for field in ("max_tokens", "max_completion_tokens"):
        status, _ = post(server, {"model": NAME, "messages": user(), field: 10_000})
        assert status == 200 and seen[-1]["max_new_tokens"] == SERVER_MAX
    post(server, {"model": NAME, "messages": user()})
    assert seen[-1]["max_new_tokens"] == SERVER_MAX and seen[-1]["temperature"] is None


def test_stop_strings_cut_the_text_and_unreadable_calls_stay_in_the_content(server, monkeypatch):
    texts = iter(["The answer is 42. END trailing", "<tool_call>not json</tool_call>"])

    def generate(prompt: str, **options) -> Generation:
        return Generation(text=next(texts), prompt_tokens=5, completion_tokens=4, finish_reason="length")

    monkeypatch.setattr(server.agent, "generate", generate)
    status, answer = post(server, {"model": NAME, "messages": user(), "stop": "END"})
    assert status == 200 and answer["choices"][0]["message"]["content"] == "The answer is 42."
    assert answer["choices"][0]["finish_reason"] == "stop"
    status, answer = post(server, {"model": NAME, "messages": user()})
    message = answer["choices"][0]["message"]
    assert "tool_calls" not in message and message["content"] == "<tool_call>\nnot json\n</tool_call>"
    assert answer["choices"][0]["finish_reason"] == "length"


def test_a_failed_generation_is_a_500_and_the_server_goes_on(server, monkeypatch):
    def broken(prompt: str, **options) -> Generation:
        raise RuntimeError("CUDA out of memory")

    with monkeypatch.context() as patch:
        patch.setattr(server.agent, "generate", broken)
        status, answer = post(server, {"model": NAME, "messages": user()})
    assert status == 500 and answer["error"]["type"] == "server_error"
    assert "generation failed: RuntimeError: CUDA out of memory" in answer["error"]["message"]
    status, _ = post(server, {"model": NAME, "messages": user(), "max_tokens": 1})
    assert status == 200


# -- bad input ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "status", "param", "says"),
    [
        ({"model": NAME, "messages": user(), "stream": True}, 400, "stream", "streaming is not supported"),
        ({"model": NAME, "messages": user(), "n": 2}, 400, "n", "only n=1 is supported"),
        ({"model": "gpt-4o", "messages": user()}, 404, "model", f"this server serves '{NAME}'"),
        ({"model": NAME, "messages": "hello"}, 400, "messages", "valid list"),
        ({"model": NAME, "messages": []}, 400, "messages", "at least 1 item"),
        (
            {"model": NAME, "messages": [*user(), {"role": "tool", "tool_call_id": "c1"}]},
            400,
            "messages[1].content",
            "Field required",
        ),
        ({"model": NAME, "messages": [{"role": "robot", "content": "x"}]}, 400, "messages[0]", "'robot'"),
        ({"model": NAME, "messages": user(), "temperature": "hot"}, 400, "temperature", "valid number"),
        (
            {"model": NAME, "messages": user(), "max_tokens": 0},
            400,
            "max_tokens",
            "greater than or equal to 1",
        ),
        (
            {"model": NAME, "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
            400,
            "messages[0].content",
            "not a text part",
        ),
        ({"messages": user()}, 400, "model", "Field required"),
    ],
)
def test_bad_requests_are_refused_with_a_message_naming_the_problem(server, body, status, param, says):
    got, answer = post(server, body)
    error = answer["error"]
    assert got == status and error["param"] == param and says in error["message"], error
    assert set(error) == {"message", "type", "param", "code"} and param in error["message"]


def test_malformed_json_and_unknown_paths_get_openai_errors(server):
    for body, says in [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object, got list"),
        (
            b'{"model": "m", "messages": [{"role": "user", "content": "\\ud800"}]}',
            "messages[0].content: the text",
        ),
    ]:
        status, answer = post(server, body)
        assert status == 400 and says in answer["error"]["message"]
    try:
        urllib.request.urlopen(f"{server.base_url}/completions", timeout=10)
    except urllib.error.HTTPError as exc:
        assert exc.code in (404, 405) and "error" in json.loads(exc.read())
    upstream = make_upstream(server.upstream_spec())
    with pytest.raises(UpstreamError, match="streaming is not supported") as refused:
        upstream.complete({"model": NAME, "messages": user(), "stream": True}, CONTEXT)
    upstream.close()
    assert refused.value.status == 400


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(st.text(st.characters(exclude_categories=()), max_size=60), min_size=1, max_size=3),
    max_tokens=st.integers(min_value=1, max_value=4),
)
def test_arbitrary_message_text_never_makes_the_server_fail(server, texts, max_tokens):
    roles = ["user", "assistant", "user"]
    messages = [{"role": roles[i % 3], "content": text} for i, text in enumerate(texts)]
    status, answer = post(server, {"model": NAME, "messages": messages, "max_tokens": max_tokens})
    assert status in (200, 400), answer
    if status == 200:
        assert 1 <= answer["usage"]["completion_tokens"] <= max_tokens


# -- end to end: a miner file through the inference proxy --------------------------------------------------
def test_a_miner_reaches_the_served_checkpoint_through_the_proxy(server, seen, agent_catalog, agent_problems):
    with pytest.warns(NoSandboxWarning):
        agent = make_file_agent(
            str(MINERS / "distilled_miner.py"),
            sandbox="none",
            timeout_s=60,
            inference_models={NAME: server.upstream_spec(NAME)},
        )
    problem = agent_problems[0]
    try:
        episode = Episode.for_problem(problem, agent_catalog, profile="oro7")
        with pytest.warns(NoSandboxWarning):
            run = agent.run(episode, ProblemView.of(problem))
    finally:
        agent.close()
    assert run.error is None, run.error
    log = run.inference
    assert log.served == len(log.entries) == len(seen) == 3  # three turns, each one call of find_product
    assert [c.origin for c in episode.calls] == ["llm"] * 3 and all(
        c.name == "find_product" for c in episode.calls
    )
    for entry in log.entries:
        assert entry.status == 200 and entry.model == NAME and entry.upstream == server.upstream_spec(NAME)
        assert entry.prompt_tokens > 0 and 1 <= entry.completion_tokens <= SERVER_MAX
        assert not entry.usage_estimated and entry.reasoning == "Search first."
        assert [c.name for c in entry.tool_calls] == ["find_product"]
    assert [s["max_new_tokens"] for s in seen] == [SERVER_MAX] * 3  # the miner's 8, capped by the server
    assert "<tool_response>" in seen[-1]["prompt"]  # the miner's tool results reached the template
    assert log.prompt_tokens == sum(e.prompt_tokens for e in log.entries)


# -- the vLLM backend (vLLM is not installed here: the command and the errors) -----------------------------
def test_the_vllm_command_for_a_full_checkpoint_and_for_a_lora_adapter(tmp_path, tiny_model_dir):
    command = vllm_command(tiny_model_dir, name=NAME, host="127.0.0.1", port=8001, max_new_tokens=512)
    assert command[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    joined = " ".join(command)
    assert f"--model {tiny_model_dir} --served-model-name {NAME}" in joined and "--port 8001" in joined
    assert "--enable-auto-tool-choice --tool-call-parser hermes" in joined and "--enable-lora" not in joined
    assert json.loads(command[command.index("--override-generation-config") + 1]) == {"max_new_tokens": 512}

    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(
        json.dumps({"base_model_name_or_path": str(tiny_model_dir), "r": 64})
    )
    joined = " ".join(vllm_command(adapter, name=NAME, host="127.0.0.1", port=8001))
    assert f"--model {tiny_model_dir} --served-model-name {NAME}-base" in joined
    assert f"--enable-lora --lora-modules {NAME}={adapter.resolve()} --max-lora-rank 64" in joined
    nested = tmp_path / "nested"
    nested.mkdir()
    (nested / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(adapter)}))
    with pytest.raises(ValueError, match="adapter on another adapter"):
        vllm_command(nested, name=NAME, host="127.0.0.1", port=8001)


def test_without_vllm_the_backend_says_how_to_install_it_and_a_dead_server_shows_its_log(
    tmp_path,
    tiny_model_dir,
):
    server = start_model_server(tiny_model_dir, name=NAME, backend="vllm")
    assert isinstance(server, VllmServer)
    with pytest.raises(VllmUnavailable, match="pip install vllm on a machine with a CUDA GPU"), server:
        pass
    with pytest.raises(ValueError, match="is not a GPU"):
        start_model_server(tiny_model_dir, name=NAME, backend="vllm", device="cpu")
    log = tmp_path / "vllm.log"
    dying = VllmServer(tiny_model_dir, name=NAME, port=1, log=log, startup_timeout_s=30)
    script = "import sys; print('loading weights'); print('CUDA error: no kernel image'); sys.exit(3)"
    with pytest.raises(VllmStartError, match=r"exited with status 3(.|\n)*CUDA error: no kernel image"):
        dying.launch([dying.python, "-c", script])
    assert dying.process is None


def test_the_cli_teaches_how_to_point_the_proxy_at_the_server(tiny_model_dir):
    from shoparena.cli import app

    result = CliRunner().invoke(app, ["model", "serve", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "inference_models" in result.output and "#NAME" in result.output
    result = CliRunner().invoke(
        app, ["model", "serve", str(tiny_model_dir), "--name", NAME, "--backend", "tpu"]
    )
    assert result.exit_code != 0 and "hf" in result.output


def test_an_hf_server_is_stopped_cleanly_and_names_its_state(tiny_model_dir):
    idle = HFModelServer(tiny_model_dir, name=NAME)
    with pytest.raises(RuntimeError, match="not started"):
        idle.base_url  # noqa: B018


def test_hf_generate_takes_per_call_overrides_and_keeps_its_defaults(server):
    agent = server.agent
    prompt = agent.render_prompt(*agent.loop.render_history(user(), None))
    assert agent.generate(prompt).completion_tokens <= SERVER_MAX == agent.max_new_tokens
    assert agent.generate(prompt, max_new_tokens=2).completion_tokens <= 2
    sampled = [
        agent.generate(prompt, max_new_tokens=4, temperature=1.0, top_p=0.9, seed=7).text for _ in range(2)
    ]
    assert sampled[0] == sampled[1]  # seeded: the same sample twice
    with pytest.raises(ValueError, match="max_new_tokens must be at least 1"):
        agent.generate(prompt, max_new_tokens=0)


def test_a_lora_adapter_directory_is_served_on_its_base(tiny_model_dir, tmp_path):
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    adapter = tmp_path / "sft-adapter"
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    peft.get_peft_model(model, peft.LoraConfig(r=2, target_modules="all-linear")).save_pretrained(adapter)
    AutoTokenizer.from_pretrained(tiny_model_dir).save_pretrained(adapter)
    with start_model_server(adapter, name="adapted", device="cpu", max_new_tokens=2) as served:
        assert isinstance(served.agent.model, peft.PeftModel)
        status, answer = post(served, {"model": "adapted", "messages": user()})
    assert status == 200 and 1 <= answer["usage"]["completion_tokens"] <= 2


def test_a_request_that_waits_too_long_is_a_503_and_requests_are_logged(server, monkeypatch, tmp_path):
    log = tmp_path / "requests.jsonl"
    monkeypatch.setattr(server.model, "log", log)
    monkeypatch.setattr(server.model, "queue_timeout_s", 0.05)
    with server.model._generating:  # another generation holds the model
        status, answer = post(server, {"model": NAME, "messages": user()})
    assert status == 503 and answer["error"]["code"] == "busy"
    status, _ = post(server, {"model": NAME, "messages": user(), "max_tokens": 1})
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["status"] for line in lines] == [503, 200] and lines[1]["completion_tokens"] == 1
