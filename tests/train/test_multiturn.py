"""Multi-turn rollouts on the real harness with a real tiny Qwen3 and a real generated catalogue.

Random weights write no usable tool calls, so where a turn must hold a valid call a scripted turn
(token ids of a known text, as a trained model would emit them) stands in for the sampler; every other
turn, the template, the tokenizer, the parser, the tools and the token bookkeeping are the real thing.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.harness import Episode
from shoparena.train.multiturn import (
    HFGenerator,
    MaskError,
    RolloutSettings,
    TemplateFrame,
    assert_generated_only,
    assert_loss_in_assistant_turns,
    eval_mode,
    run_rollout,
    run_rollouts,
)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Two cores shared by many processes: one torch thread is ~10x faster than two fighting ones."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    """`shoparena train tiny-model`'s checkpoint: Qwen3's own chat template, random weights."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    return tokenizer, model


@pytest.fixture(scope="module")
def query(small_catalog) -> str:
    return " ".join(small_catalog.store.dict_by_ord(0)["title"].split()[:3])


def call_text(name: str, arguments: dict, thinking: str | None = None) -> str:
    think = f"<think>\n{thinking}\n</think>\n\n" if thinking else ""
    return f"{think}<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


class Scripted:
    """A sampler that writes the given texts as token ids (+ end-of-turn), then defers to `fallback`."""

    def __init__(self, tokenizer, texts: list[str], fallback=None, close: bool = True):
        self.tokenizer, self.texts, self.fallback, self.close = tokenizer, list(texts), fallback, close
        self.contexts: list[list[int]] = []
        self.outputs: list[list[int]] = []

    def __call__(self, context: list[int], max_new: int) -> list[int]:
        self.contexts.append(list(context))
        if self.texts:
            ids = self.tokenizer(self.texts.pop(0), add_special_tokens=False)["input_ids"][:max_new]
            if self.close and len(ids) < max_new:
                ids.append(self.tokenizer.convert_tokens_to_ids("<|im_end|>"))
        else:
            ids = self.fallback(context, max_new)
        self.outputs.append(ids)
        return ids


def test_multiturn_rollout_runs_the_real_tools_and_keeps_generated_ids(tiny, small_catalog, query):
    tokenizer, model = tiny
    settings = RolloutSettings(max_rollout_steps=5, max_new_tokens=120, max_completion_tokens=20000)
    first = small_catalog.find_product(query, 1)[0]["product_id"]
    torch.manual_seed(0)
    sampler = Scripted(
        tokenizer,
        [
            call_text("find_product", {"q": query}, thinking="search first"),
            call_text("view_product_information", {"product_ids": first}, thinking="check it"),
        ],
        fallback=HFGenerator(model, tokenizer, settings),  # turn 3: the random model itself
    )
    episode = Episode(small_catalog, query, problem_id="p1", step_cap=settings.max_rollout_steps)
    rollout = run_rollout(episode, TemplateFrame(tokenizer, settings), sampler, settings)

    assert [c.name for c in rollout.calls[:2]] == ["find_product", "view_product_information"]
    assert rollout.calls[0].result[0]["product_id"] == first  # the real catalogue answered
    assert len(rollout.turns) == 3 and rollout.steps == 3
    # every turn's context is exactly the prompt plus the completion so far: no re-rendering
    for turn, context in zip(rollout.turns, sampler.contexts, strict=True):
        assert context == rollout.prompt_ids + rollout.completion_ids[: turn.start]
    for turn, generated in zip(rollout.turns, sampler.outputs, strict=True):
        assert turn.ids == generated == rollout.completion_ids[turn.start : turn.end]
    # the tool results went back through the template as a tool turn, outside the loss
    tool_text = tokenizer.decode(rollout.completion_ids[rollout.turns[0].end : rollout.turns[1].start])
    assert tool_text.startswith("\n<|im_start|>user\n<tool_response>\n")
    assert first in tool_text and tool_text.endswith("<|im_start|>assistant\n")
    assert_generated_only(rollout)
    assert_loss_in_assistant_turns(tokenizer, rollout, rollout.model_mask)
    assert sum(rollout.model_mask) == sum(len(t.ids) for t in rollout.turns)


def test_end_of_turn_accounting_against_the_re_rendered_history(tiny, small_catalog, query):
    """The generated `<|im_end|>` is the turn's last trained token; the template's own turn ending is
    never added twice; a turn cut at max_new_tokens gets the end-of-turn as an untrained token."""
    tokenizer, _ = tiny
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    settings = RolloutSettings(max_rollout_steps=4, max_new_tokens=400, max_completion_tokens=20000)
    texts = [
        call_text("find_product", {"q": query}, thinking="first"),
        call_text("find_product", {"q": query, "page": 2}, thinking="second"),
    ]
    sampler = Scripted(tokenizer, texts, fallback=lambda ctx, n: [])
    episode = Episode(small_catalog, query, problem_id="p2", step_cap=settings.max_rollout_steps)
    frame = TemplateFrame(tokenizer, settings)
    rollout = run_rollout(episode, frame, sampler, settings)
    first, second = rollout.turns[0], rollout.turns[1]
    assert first.ids[-1] == im_end and first.finish == "stop"
    # exactly one <|im_end|> closes the turn, and it is inside the generated span
    between = rollout.completion_ids[first.end - 1 : second.start]
    assert between.count(im_end) == 2  # the turn's own, then the tool turn's
    assert rollout.completion_ids[first.end] != im_end
    # the re-rendered history (what a naive trainer would tokenise) is not the generated sequence
    rendered = frame.prompt_ids(episode.messages, episode.tools)
    generated = rollout.prompt_ids + rollout.completion_ids[: second.end]
    assert rendered != generated[: len(rendered)]
    assert tokenizer.decode(generated).count("<think>") == 2
    # positions count the kept end-of-turn tokens: step i's span starts after i turns and tool turns
    assert second.start == first.end + first.env_tokens

    # a turn cut at max_new_tokens: the template's end-of-turn is appended as environment, mask 0
    cut = RolloutSettings(max_rollout_steps=3, max_new_tokens=40, max_completion_tokens=20000)
    sampler = Scripted(tokenizer, [call_text("find_product", {"q": query}) + " and more words"], close=False)
    sampler.fallback = lambda ctx, n: []
    episode = Episode(small_catalog, query, problem_id="p3", step_cap=cut.max_rollout_steps)
    ids = tokenizer(call_text("find_product", {"q": query}), add_special_tokens=False)["input_ids"]
    assert len(ids) < 40
    rollout = run_rollout(episode, frame, sampler, cut)
    turn = rollout.turns[0]
    assert turn.finish == "length" and im_end not in turn.ids
    assert rollout.completion_ids[turn.end] == im_end and rollout.model_mask[turn.end] == 0
    assert_generated_only(rollout)


def test_rollouts_sample_in_eval_mode_and_restore_training(tiny, small_catalog, query):
    tokenizer, model = tiny
    settings = RolloutSettings(max_rollout_steps=2, max_new_tokens=6, max_completion_tokens=2000)
    seen: list[bool] = []
    hook = model.model.layers[0].register_forward_pre_hook(lambda module, args: seen.append(module.training))
    model.train()
    try:
        episode = Episode(small_catalog, query, problem_id="p4", step_cap=2)
        run_rollout(
            episode, TemplateFrame(tokenizer, settings), HFGenerator(model, tokenizer, settings), settings
        )
    finally:
        hook.remove()
    assert seen and not any(seen)
    assert model.training  # restored
    with eval_mode(model):
        assert not model.training
    model.eval()
    with eval_mode(model):
        pass
    assert not model.training


def test_the_mask_assertion_fires_on_a_corrupted_mask(tiny, small_catalog, query):
    tokenizer, _ = tiny
    settings = RolloutSettings(max_rollout_steps=3, max_new_tokens=200, max_completion_tokens=20000)
    sampler = Scripted(tokenizer, [call_text("find_product", {"q": query})], fallback=lambda ctx, n: [])
    episode = Episode(small_catalog, query, problem_id="p5", step_cap=3)
    rollout = run_rollout(episode, TemplateFrame(tokenizer, settings), sampler, settings)
    assert_generated_only(rollout)
    tool_position = rollout.turns[0].end + 3
    leaked = list(rollout.model_mask)
    leaked[tool_position] = 1
    with pytest.raises(MaskError, match="template/tool token is in the loss at completion position"):
        assert_generated_only(rollout, leaked)
    dropped = list(rollout.model_mask)
    dropped[rollout.turns[0].start] = 0
    with pytest.raises(MaskError, match="generated token is left out"):
        assert_generated_only(rollout, dropped)
    with pytest.raises(MaskError, match="positions"):
        assert_generated_only(rollout, rollout.model_mask[:-1])

    # the text check knows nothing of spans: a rollout whose own record claims a tool token was
    # generated passes the span check but not the text check
    assert_loss_in_assistant_turns(tokenizer, rollout, rollout.model_mask)
    forged = rollout.model_copy(deep=True)
    first = forged.turns[0]
    first.end += 3
    first.ids = forged.completion_ids[first.start : first.end]
    forged.model_mask[first.end - 3 : first.end] = [1, 1, 1]
    assert_generated_only(forged)
    with pytest.raises(MaskError, match="not inside an assistant turn"):
        assert_loss_in_assistant_turns(tokenizer, forged, forged.model_mask)


def test_a_rollout_never_passes_the_models_context(tiny, small_catalog, query):
    tokenizer, model = tiny
    settings = RolloutSettings(max_rollout_steps=3, max_new_tokens=50, max_completion_tokens=5000)
    frame = TemplateFrame(tokenizer, settings)
    episode = Episode(small_catalog, query, problem_id="p6", step_cap=3)
    prompt = frame.prompt_ids(
        [{"role": "system", "content": settings.system_prompt}, *episode.messages], episode.tools
    )
    tight = settings.model_copy(update={"context_limit": len(prompt) + 7})
    rollout = run_rollout(episode, frame, HFGenerator(model, tokenizer, tight), tight)
    assert rollout.prompt_ids == prompt
    assert len(rollout.prompt_ids) + len(rollout.completion_ids) <= len(prompt) + 7


def test_batched_rollouts_keep_each_episode_apart(tiny, small_catalog, query):
    """Several episodes sampled together: the same records as one at a time (scripted turns), and the
    real model's batched, left-padded sampling gives well-formed rollouts that pass both mask checks."""
    tokenizer, model = tiny
    settings = RolloutSettings(max_rollout_steps=3, max_new_tokens=120, max_completion_tokens=20000)
    frame = TemplateFrame(tokenizer, settings)
    scripts = [
        [call_text("find_product", {"q": query}), call_text("terminate", {"status": "failure"})],
        [call_text("terminate", {"status": "success"})],
        ["no call at all"],
    ]

    def episodes():
        return [Episode(small_catalog, query, problem_id=f"b{i}", step_cap=3) for i in range(len(scripts))]

    singles = [
        run_rollout(episode, frame, Scripted(tokenizer, list(script)), settings)
        for episode, script in zip(episodes(), scripts, strict=True)
    ]
    samplers = {f"b{i}": Scripted(tokenizer, list(script)) for i, script in enumerate(scripts)}
    calls: list[int] = []
    # the prompts are identical (same query): the rounds visit the episodes still going, in order
    order = iter(["b0", "b1", "b2", "b0"])

    def batch_in_order(contexts, allowances):
        calls.append(len(contexts))
        return [samplers[next(order)](c, a) for c, a in zip(contexts, allowances, strict=True)]

    batched = run_rollouts(episodes(), frame, batch_in_order, settings, batch_size=8)
    assert calls == [3, 1]  # round 1: all three; round 2: only the one still going
    for single, together in zip(singles, batched, strict=True):
        assert together.completion_ids == single.completion_ids
        assert together.model_mask == single.model_mask and together.end_reason == single.end_reason

    torch.manual_seed(1)
    generator = HFGenerator(model, tokenizer, settings.model_copy(update={"max_new_tokens": 6}))
    real = run_rollouts(episodes(), frame, generator.batch, settings.model_copy(update={"max_new_tokens": 6}))
    for rollout in real:
        assert 1 <= len(rollout.turns[0].ids) <= 6
        assert_generated_only(rollout)
        assert_loss_in_assistant_turns(tokenizer, rollout, rollout.model_mask)


turn_kinds = st.lists(
    st.tuples(st.sampled_from(["search", "page", "junk", "terminate"]), st.booleans(), st.booleans()),
    min_size=1,
    max_size=4,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turn_kinds)
def test_end_of_turn_accounting_holds_for_any_turn_sequence(tiny, small_catalog, query, kinds):
    """Whatever the turns (closed or cut, with reasoning or not, calls or not): each context is the
    prompt plus the completion so far; each closed turn holds exactly one end-of-turn, its own last
    (trained) token; each cut turn is followed by the template's end-of-turn, untrained; the mask counts
    exactly the generated tokens."""
    tokenizer, _ = tiny
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    texts = {
        "search": call_text("find_product", {"q": query}),
        "page": call_text("find_product", {"q": query, "page": 2}),
        "junk": "I am not sure what to do",
        "terminate": call_text("terminate", {"status": "failure"}),
    }

    class Turns:
        def __init__(self):
            self.contexts, self.left = [], list(kinds)

        def __call__(self, context, max_new):
            self.contexts.append(list(context))
            kind, closed, think = self.left.pop(0) if self.left else ("junk", True, False)
            text = ("<think>\nstep\n</think>\n\n" if think else "") + texts[kind]
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            return ids + [im_end] if closed else ids

    settings = RolloutSettings(max_rollout_steps=6, max_new_tokens=500, max_completion_tokens=30000)
    sampler = Turns()
    episode = Episode(small_catalog, query, problem_id="h", step_cap=6)
    rollout = run_rollout(episode, TemplateFrame(tokenizer, settings), sampler, settings)
    assert_generated_only(rollout)
    assert_loss_in_assistant_turns(tokenizer, rollout, rollout.model_mask)
    assert sum(rollout.model_mask) == sum(len(t.ids) for t in rollout.turns)
    assert rollout.steps == len(rollout.turns) <= 6
    for turn, context in zip(rollout.turns, sampler.contexts, strict=True):
        assert context == rollout.prompt_ids + rollout.completion_ids[: turn.start]
        assert turn.ids.count(im_end) == (1 if turn.finish == "stop" else 0)
        if turn.env_tokens:
            after = rollout.completion_ids[turn.end : turn.end + turn.env_tokens]
            assert (after[0] == im_end) == (turn.finish == "length")
            assert after.count(im_end) == (2 if turn.finish == "length" else 1)
            assert not any(rollout.model_mask[turn.end : turn.end + turn.env_tokens])
