"""The local Hugging Face agent on a tiny random-weight Qwen3 with a tokenizer trained at test time.

Random weights write no sensible calls, so these tests prove the wiring: checkpoint loading, the chat
template render (tools and tool results), generation, decoding, parsing, execution and token counts.
A scripted `model.generate` stands in for a trained model where a valid call is needed; everything
around it (template, tokenizer, decode, parser, harness) is the real thing.
"""

from __future__ import annotations

import json

import pytest

from shoparena.agents.base import ProblemView, make_agent
from shoparena.agents.hf_agent import HFAgent, make_hf_agent, template_renders_tools
from shoparena.harness import Episode
from tests.agents.tiny_qwen3 import QWEN3_STYLE_TEMPLATE

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

VIEW = ProblemView(problem_id="p1", query="", bucket="product")


@pytest.fixture(scope="module")
def query(small_catalog) -> str:
    return " ".join(small_catalog.store.dict_by_ord(0)["title"].split()[:3])


def scripted_generate(agent: HFAgent, outputs: list[str], seen: list[dict]):
    """Stand-in for `model.generate`: answers each prompt with the next script text, as token ids."""

    def generate(input_ids, attention_mask=None, **options):
        seen.append({"prompt": agent.tokenizer.decode(input_ids[0]), **options})
        text = outputs[min(len(seen), len(outputs)) - 1]
        new_ids = agent.tokenizer(text, add_special_tokens=False)["input_ids"] + [
            agent.tokenizer.eos_token_id
        ]
        return torch.cat([input_ids, torch.tensor([new_ids])], dim=1)

    return generate


def qwen_call(name: str, arguments: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def test_random_model_runs_the_whole_format_path(tiny_qwen3, small_catalog, query):
    agent = make_hf_agent(tiny_qwen3, device="cpu", max_new_tokens=6, max_turns=2, seed=0)
    assert agent.kind == "hf" and agent.loop.tools_via == "api"
    episode = Episode(small_catalog, query, problem_id="p1")

    messages, tools = agent.loop.render(episode)
    prompt = agent.render_prompt(messages, tools)
    assert prompt.startswith("<|im_start|>system\nYou are a shopping assistant")
    assert (
        "<tools>" in prompt and '"name": "find_product"' in prompt and '"name": "calculate_voucher"' in prompt
    )
    assert f"<|im_start|>user\n{query}<|im_end|>\n" in prompt and prompt.endswith("<|im_start|>assistant\n")

    run = agent.run(episode, VIEW)
    assert run.error is None
    assert 1 <= run.usage.model_calls <= 2 == agent.loop.max_turns
    assert run.usage.prompt_tokens >= len(agent.tokenizer(prompt, add_special_tokens=False)["input_ids"])
    assert 1 <= run.usage.completion_tokens <= 6 * run.usage.model_calls
    assert all(isinstance(output, str) for output in run.model_outputs)
    assert episode.steps_used == len(episode.turns) == len(run.model_outputs) == run.usage.model_calls
    assert all(call.origin == "llm" for call in episode.calls)


def test_generated_qwen_tool_calls_are_parsed_and_executed(tiny_qwen3, small_catalog, query):
    agent = make_agent(f"hf:{tiny_qwen3}", device="cpu", max_new_tokens=64)
    first_hit = small_catalog.find_product(query, 1)[0]["product_id"]
    seen: list[dict] = []
    outputs = [
        "<think>\nSearch first.\n</think>\n\n" + qwen_call("find_product", {"q": query}),
        qwen_call("recommend_product", {"product_ids": first_hit}),
        qwen_call("terminate", {"status": "success"}),
    ]
    agent.model.generate = scripted_generate(agent, outputs, seen)
    episode = Episode(small_catalog, query, problem_id="p1")
    run = agent.run(episode, VIEW)

    assert run.error is None and len(seen) == 3
    assert [c.name for c in episode.calls] == ["find_product", "recommend_product", "terminate"]
    assert all(c.error is None and c.origin == "llm" for c in episode.calls)
    assert episode.recommended_product_ids == [first_hit] and episode.terminated == "success"
    assert episode.turns[0].thinking == "Search first."
    assert seen[0]["max_new_tokens"] == 64 and seen[0]["do_sample"] is False
    assert agent.tokenizer.eos_token_id in seen[0]["eos_token_id"]
    # the second prompt replays the call and wraps its result the way the template does
    second = seen[1]["prompt"]
    assert (
        '<|im_start|>assistant\n<think>\nSearch first.\n</think>\n\n<tool_call>\n{"name":"find_product"'
        in second
    )
    assert f'<|im_start|>user\n<tool_response>\n[{{"product_id":"{first_hit}"' in second
    assert run.usage.model_calls == 3 and run.usage.prompt_tokens > 3 * 100
    expected = sum(len(agent.tokenizer(text, add_special_tokens=False)["input_ids"]) + 1 for text in outputs)
    assert run.usage.completion_tokens == expected


def test_tags_protocol_puts_the_tools_in_upstreams_system_prompt(tiny_qwen3, small_catalog, query):
    agent = make_hf_agent(tiny_qwen3, device="cpu", protocol="tags", max_turns=3)
    assert agent.loop.tools_via == "prompt"
    seen: list[dict] = []
    calls = [{"name": "find_product", "parameters": {"q": query}}]
    agent.model.generate = scripted_generate(
        agent,
        [f"<think>look</think>\n<tool_call>{json.dumps(calls)}</tool_call>", "<response>done</response>"],
        seen,
    )
    episode = Episode(small_catalog, query)
    run = agent.run(episode, VIEW)
    assert run.error is None and [c.name for c in episode.calls] == ["find_product"]
    assert len(seen) == 2 and episode.turns[1].content == "done"  # a response without calls ends the loop
    assert seen[0]["prompt"].startswith("<|im_start|>system\n# Role") and "<tools>" not in seen[0]["prompt"]
    assert "# Available Tools" in seen[0]["prompt"] and "<obs>" in seen[1]["prompt"]


def test_max_turns_bounds_a_model_that_never_stops(tiny_qwen3, small_catalog, query):
    agent = make_hf_agent(tiny_qwen3, device="cpu", max_turns=2)
    seen: list[dict] = []
    agent.model.generate = scripted_generate(agent, [qwen_call("find_product", {"q": query})], seen)
    episode = Episode(small_catalog, query)
    run = agent.run(episode, VIEW)
    assert run.error is None and len(seen) == 2 and run.usage.model_calls == 2
    assert episode.steps_used == 2 and [c.name for c in episode.calls] == ["find_product"] * 2


def test_prompt_past_the_context_ends_the_run_with_an_error(tiny_qwen3, small_catalog, query):
    agent = make_hf_agent(tiny_qwen3, device="cpu", max_new_tokens=4)
    agent.context_length = 64
    episode = Episode(small_catalog, query)
    run = agent.run(episode, VIEW)
    assert "takes at most 64" in run.error and episode.steps_used == 0 and run.usage.model_calls == 0


def test_enable_thinking_reaches_the_template(tiny_qwen3, small_catalog, query):
    agent = make_hf_agent(tiny_qwen3, device="cpu", enable_thinking=False)
    prompt = agent.render_prompt(*agent.loop.render(Episode(small_catalog, query)))
    assert prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_bad_options_fail_with_clear_errors(tiny_qwen3, tmp_path):
    with pytest.raises(ValueError, match="not a text protocol"):
        make_hf_agent(tiny_qwen3, protocol="openai")
    with pytest.raises(ValueError, match="missing: no such directory"):
        make_hf_agent(str(tmp_path / "missing"), device="cpu")
    with pytest.raises(ValueError, match="unknown dtype"):
        make_hf_agent(tiny_qwen3, device="cpu", dtype="float7")


def test_template_tool_support_detection():
    assert template_renders_tools(QWEN3_STYLE_TEMPLATE)
    assert not template_renders_tools("{% for m in messages %}{{ m.content }}{% endfor %}")
    assert template_renders_tools({"default": "x", "tool_use": "{{ tools }}"}) and not template_renders_tools(
        None
    )


def test_samples_of_a_problem_differ_and_each_is_reproducible_in_any_order(tiny_qwen3, small_catalog, query):
    """With a seed and temperature > 0, sample k of a problem is seeded by (seed, problem, k): pass@k's
    samples are not copies of each other, and each is the same whichever order the runner takes them in."""
    agent = make_hf_agent(tiny_qwen3, device="cpu", max_new_tokens=8, max_turns=1, temperature=1.0, seed=7)

    def sample(k: int) -> str:
        agent.begin_episode("p1", k)
        run = agent.run(Episode(small_catalog, query, problem_id="p1"), VIEW)
        return json.dumps(run.model_outputs)

    forward = [sample(0), sample(1), sample(2)]
    backward = [sample(2), sample(1), sample(0)][::-1]
    assert forward == backward
    assert len(set(forward)) == 3
