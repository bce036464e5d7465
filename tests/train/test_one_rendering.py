"""One rendering: the text a model is trained on for an assistant turn starts with exactly the prompt the
`hf:` agent sends at that turn of the same episode (system prompt, tool schemas, history, tool-call JSON,
tool messages), character for character and token for token.

Checked three ways: on rows hypothesis makes up (any reasoning, text, calls and results), on a corpus
built the real way, and live — the prompts an `hf:` agent sends during real episodes are recorded and each
is found as a prefix of the training rendering of the trajectory that episode produced, after the
trajectory went through `corpus build`.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("transformers")

from shoparena.agents.chat_loop import DEFAULT_SYSTEM_PROMPT
from shoparena.harness.tool_specs import tool_schemas
from shoparena.train.chat_render import render_row, row_system_prompt
from shoparena.train.corpus_data import read_corpus

TOOLS = tool_schemas("upstream4")
NAMES = [tool["function"]["name"] for tool in TOOLS]


@pytest.fixture(scope="module")
def agent(tiny_model_dir):
    from shoparena.agents.hf_agent import HFAgent

    return HFAgent(str(tiny_model_dir), device="cpu", max_new_tokens=8)


def agent_prompt(agent, history: list[dict], tools: list[dict]) -> str:
    """What the agent sends at this point of an episode whose trace so far is `history` (ChatLoop.render
    then the checkpoint's chat template: `HFAgent.complete`'s own two steps)."""
    messages, via = agent.loop.render_history(agent.loop.with_system_prompt(history), tools)
    return agent.render_prompt(messages, via)


def assert_prefixes(agent, row: dict) -> int:
    """Every assistant turn of `row`: the agent's prompt at that turn is the training text before the
    turn's output, and its tokens are the training tokens before the turn's span. Returns turns checked."""
    rendered = render_row(agent.tokenizer, row)
    history = row["messages"]
    if row_system_prompt(row) != DEFAULT_SYSTEM_PROMPT and not any(m["role"] == "system" for m in history):
        history = [{"role": "system", "content": row_system_prompt(row)}, *history]
    turns = [i for i, m in enumerate(history) if m["role"] == "assistant"]
    assert len(turns) == len(rendered.spans)
    for index, span in zip(turns, rendered.spans, strict=True):
        prompt = agent_prompt(agent, history[:index], row.get("tools"))
        assert rendered.text.startswith(prompt), (
            f"turn {index}: training text and agent prompt part at character "
            f"{next(i for i, (a, b) in enumerate(zip(prompt, rendered.text, strict=False)) if a != b)}"
        )
        assert rendered.text[len(prompt) :].startswith(span.text)
        ids = agent.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        assert ids == rendered.input_ids[: span.start], f"turn {index}: the prompt tokenises differently"
    return len(turns)


text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters="<>"),
    max_size=40,
)
arguments = st.dictionaries(
    st.sampled_from(["q", "price", "product_ids", "status", "page", "shop_id"]),
    st.one_of(text, st.integers(-5, 10_000)),
    max_size=3,
)


@st.composite
def rows(draw) -> dict:
    """A trajectory in the trace's OpenAI shape: a query, assistant turns with optional reasoning and
    text and 0-2 calls, each call answered by a tool message; sometimes its own system message, or a
    `system_prompt` recorded beside it."""
    messages: list[dict] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(text)})
    messages.append({"role": "user", "content": draw(text.filter(str.strip))})
    number = 0
    for turn in range(draw(st.integers(1, 4))):
        calls = []
        for _ in range(draw(st.integers(0 if turn else 1, 2))):
            number += 1
            name = draw(st.sampled_from(NAMES))
            calls.append(
                {
                    "id": f"call_{number}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(draw(arguments), ensure_ascii=False)},
                }
            )
        message: dict = {"role": "assistant", "content": draw(st.none() | text)}
        if draw(st.booleans()):
            message["reasoning_content"] = draw(text)
        if calls:
            message["tool_calls"] = calls
        messages.append(message)
        for call in calls:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "name": call["function"]["name"],
                    "content": draw(text),
                }
            )
        if not calls:
            break
    row: dict = {"messages": messages, "tools": TOOLS}
    if draw(st.booleans()):
        row["metadata"] = {"system_prompt": draw(text)}
    return row


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(row=rows())
def test_every_assistant_turn_is_trained_on_the_prompt_the_agent_sends(agent, row):
    assert assert_prefixes(agent, row) >= 1


def test_a_real_corpus_renders_as_served(agent, tiny_corpus):
    corpus = read_corpus(tiny_corpus)
    assert corpus.train
    assert all(r["metadata"]["system_prompt"] == DEFAULT_SYSTEM_PROMPT for r in corpus.train)
    assert sum(assert_prefixes(agent, row) for row in corpus.train[:4]) >= 8


def test_live_hf_episodes_prompts_are_prefixes_of_their_training_rows(
    agent, agent_catalog_dir, agent_problems, tmp_path, monkeypatch
):
    """Real `hf:` episodes through `run_eval`: the model's turns are scripted through `HFAgent.generate`,
    the agent's hook for other backends (a random model would end every episode at its first turn);
    everything else — prompt building, the model call, parsing, the tools, the trace, `corpus build` —
    is the real thing. Each prompt sent must be a prefix of the training rendering of the corpus row made
    from that episode."""
    from shoparena.agents.hf_agent import Generation, HFAgent
    from shoparena.corpus.pipeline import CorpusConfig, build_corpus
    from shoparena.eval.config import EvalConfig
    from shoparena.eval.runner import run_eval
    from shoparena.judge.offline import OfflineJudge
    from shoparena.problems.io import write_problems

    prompts: list[str] = []
    real_generate = HFAgent.generate

    def scripted(self, prompt: str, **options) -> Generation:
        prompts.append(prompt)
        real_generate(self, prompt, max_new_tokens=2)  # the model really runs on the prompt it is sent
        turn = prompt.count("<|im_start|>assistant\n") - 1
        hits = [part for part in prompt.split("<tool_response>\n") if part.startswith('[{"product_id":"')]
        first = hits[0].split('"')[3] if hits else "0"
        outputs = [
            '<think>\nSearch.\n</think>\n\n<tool_call>\n{"name": "find_product", "arguments": '
            '{"q": "bag", "price": "0-900"}}\n</tool_call>',
            '<think>\nA broken call.\n</think>\n\n<tool_call>\n{"name": "find_product", "arguments": {"q": \n</tool_call>',
            '<think>\nPick.\n</think>\n\n<tool_call>\n{"name":"recommend_product","arguments":'
            f'{{"product_ids":"{first}"}}}}\n</tool_call>',
            'Done.\n<tool_call>\n{"name": "terminate", "arguments": {"status": "success"}}\n</tool_call>',
        ]
        return Generation(
            text=outputs[min(turn, 3)], prompt_tokens=1, completion_tokens=1, finish_reason="stop"
        )

    monkeypatch.setattr(HFAgent, "generate", scripted)
    problems = tmp_path / "p.jsonl"
    write_problems(problems, agent_problems[:2])
    run = tmp_path / "run"
    judge = OfflineJudge()
    run_eval(
        EvalConfig(
            catalog=agent_catalog_dir,
            problems=problems,
            agent=f"hf:{agent.path}",
            options={"device": "cpu"},
            profile="upstream4",
            out=run,
            executor="inline",
            similarity="lexical",
            bootstrap=0,
        ),
        judge=lambda record, problem: judge(record, problem),
    )
    assert len(prompts) == 8  # 2 episodes x 4 turns
    out = tmp_path / "corpus"
    build_corpus(CorpusConfig(inputs=[run], out=out, min_quality=0.0, per_problem=1, eval_size=0))
    rows = read_corpus(out).train
    assert len(rows) == 2
    texts = [render_row(agent.tokenizer, row).text for row in rows]
    for prompt in prompts:
        assert any(text.startswith(prompt) for text in texts), prompt[-300:]
