"""`train grpo` end to end on the tiny Qwen3 (CPU): real catalogue, real corpus and leak guard, real
teacher trajectories (a reference-agent eval run), TRL's Dr. GRPO update, the mask proved every update."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest

import shoparena.train.grpo as grpo
from shoparena.problems.io import write_problems
from shoparena.train.grpo import VARIANTS, GRPOStageConfig, MaskGuard, reward_function, run_grpo
from shoparena.train.multiturn import (
    HFGenerator,
    MaskError,
    RolloutSettings,
    TemplateFrame,
    run_rollout,
    run_rollouts,
)
from shoparena.train.rewards import RewardFormula
from tests.jsonl import read_jsonl
from tests.train.events import scalars
from tests.train.sampling_world import world

torch = pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("peft")

REPO = Path(__file__).resolve().parents[2]
METRIC_KEYS = {
    "step",
    "loss",
    "kl",
    "reward_mean",
    "reward_std",
    "tool_match",
    "hallucinated_ids",
    "partial_successes",
    "mask_checks",
}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Two cores shared by many processes: one torch thread is ~10x faster than two fighting ones."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def sampling(tmp_path_factory, small_catalog_dir):
    return world(tmp_path_factory, small_catalog_dir)


@pytest.fixture(scope="module")
def tiny(tiny_model_dir) -> str:
    return str(tiny_model_dir)


@pytest.fixture(scope="module")
def all_problems(sampling, tmp_path_factory) -> Path:
    """Every problem of the world, eval and never-touch ones included: the guard must drop those."""
    path = tmp_path_factory.mktemp("grpo-problems") / "problems.jsonl"
    write_problems(path, sampling.problems)
    return path


def smoke(variant: str, tiny: str, sampling, problems: Path, out: Path, **overrides) -> GRPOStageConfig:
    options = {
        "model": tiny,
        "catalog": str(sampling.catalog),
        "problems": str(problems),
        "out": str(out),
        "corpus": str(sampling.corpus),
        "never_touch": [str(sampling.never_touch)],
        "teacher_trajectories": str(sampling.run / "trajectories.jsonl"),
        "batch_problems": 2,
        "num_generations": 2,
        "max_steps": 1,
        "max_new_tokens": 8,
        "max_completion_tokens": 3000,
        "similarity": "lexical",
        "lora_r": 4,
        "lora_alpha": 8,
        **overrides,
    }
    return GRPOStageConfig(variant=variant, **options)


def test_cli_v19_end_to_end_with_leak_guard_teachers_and_outputs(tiny, sampling, all_problems, tmp_path):
    from typer.testing import CliRunner

    from shoparena.cli import app

    out = tmp_path / "v19"
    args = ["train", "grpo", "--variant", "v19", "--config", str(REPO / "configs/tiny/grpo.yaml")]
    args += ["--model", tiny, "--catalog", str(sampling.catalog), "--problems", str(all_problems)]
    args += ["--teacher-trajectories", str(sampling.run / "trajectories.jsonl"), "--out", str(out)]
    args += ["--corpus", str(sampling.corpus), "--never-touch", str(sampling.never_touch)]
    args += [
        "--max-steps",
        "2",
        "--max-new-tokens",
        "8",
        "--max-completion-tokens",
        "3000",
        "--merge",
        "--report-to",
        "tensorboard",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    # leak guard: eval and never-touch problems (and their clusters) refused, counts printed
    assert "leak guard:" in result.output and "grpo:" in result.output
    resolved = json.loads((out / "config.resolved.json").read_text())
    assert (
        resolved["variant"] == "v19" and resolved["tool_weight"] == 0.5 and resolved["max_rollout_steps"] == 4
    )
    refused = sampling.pool_ids("eval") | {p.problem_id for p in sampling.never_problems}
    rollouts = read_jsonl(out / "rollouts.jsonl")
    assert len(rollouts) == 2 * 2 * 2 and not {r["problem_id"] for r in rollouts} & refused
    # v19: every trained problem has a teacher; the reward is outcome + 0.5 × tool-match
    v19 = RewardFormula(tool_weight=0.5)
    for r in rollouts:
        assert r["reward"] == pytest.approx(v19.total(r))
        assert r["steps"] <= 4
    lines = read_jsonl(out / "metrics.jsonl")
    assert [line["step"] for line in lines] == [1, 2]
    for line in lines:
        assert set(line) >= METRIC_KEYS
        assert line["mask_checks"] == 4 and line["rollouts"] == 4
        assert line["tool_match"] is not None and 0.0 <= line["tool_match"] <= 1.0
    # outputs of every stage: adapter, merged weights, resolved config, report
    assert (out / "adapter" / "adapter_config.json").is_file()
    assert (out / "merged" / "config.json").is_file()
    report = (out / "report.md").read_text()
    assert "Dr. GRPO (v19)" in report and "dropped_by_cluster" in report and "8 rows checked" in report
    # --report-to reaches TRL's GRPOTrainer: its TensorBoard events land in OUT/tensorboard/<run>
    pytest.importorskip("tensorboard")
    logged = scalars(out / "tensorboard")
    assert [step for step, _ in logged["train/loss"]] == [1, 2]


def test_run_grpo_refuses_what_the_leak_guard_drops(tiny, sampling, tmp_path):
    refused = [p for p in sampling.problems if p.problem_id in sampling.pool_ids("eval")]
    path = tmp_path / "eval_only.jsonl"
    write_problems(path, refused)
    said: list[str] = []
    with pytest.raises(ValueError, match="no problems left"):
        run_grpo(smoke("v17", tiny, sampling, path, tmp_path / "none"), say=said.append)
    assert said[0].startswith("leak guard:") and f"{len(refused)} dropped by id" in said[0]
    one = tmp_path / "one.jsonl"
    write_problems(one, sampling.fresh[:1])
    with pytest.raises(ValueError, match="fewer than B = 2"):
        run_grpo(smoke("v17", tiny, sampling, one, tmp_path / "one"), say=said.append)


class HalfRight:
    """Stands in for the sampler: every other rollout recommends the gold products (then terminates),
    the rest are the random model's own turns, so a group's rewards differ and the update has signal."""

    rollouts = 0
    successes: ClassVar[list[tuple[list[int], list[int]]]] = []
    """(context, generated ids) of each scripted gold recommendation."""

    def __init__(self, model, tokenizer, settings, gold: dict[str, str]):
        self.real = HFGenerator(model, tokenizer, settings)
        self.tokenizer, self.gold = tokenizer, gold

    def batch(self, contexts: list[list[int]], max_new: list[int]) -> list[list[int]]:
        return [self(context, n) for context, n in zip(contexts, max_new, strict=True)]

    def __call__(self, context: list[int], max_new: int) -> list[int]:
        text = self.tokenizer.decode(context)
        im_end = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        if "<tool_response>" in text:
            call = {"name": "terminate", "arguments": {"status": "success"}}
        else:
            HalfRight.rollouts += 1
            if HalfRight.rollouts % 2:
                return self.real(context, max_new)
            ids = next(ids for query, ids in self.gold.items() if query in text)
            call = {"name": "recommend_product", "arguments": {"product_ids": ids}}
        text = f"<tool_call>\n{json.dumps(call)}\n</tool_call>"
        new = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [im_end]
        if call["name"] == "recommend_product":
            HalfRight.successes.append((list(context), new))
        return new


def test_group_relative_update_moves_the_adapter(tiny, sampling, all_problems, tmp_path, monkeypatch):
    gold = {p.query: ",".join(r.product_id for r in p.rewards) for p in sampling.problems}
    HalfRight.successes.clear()
    monkeypatch.setattr(
        grpo, "HFGenerator", lambda model, tok, settings: HalfRight(model, tok, settings, gold)
    )
    config = smoke(
        "v17", tiny, sampling, all_problems, tmp_path / "v17", max_new_tokens=64, learning_rate=1e-2, beta=0.0
    )
    result = run_grpo(config, say=lambda _: None)
    [line] = read_jsonl(result.metrics)
    assert result.stage == "grpo" and result.steps == 1 and result.details["mask_checks"] == 4
    assert line["reward_std"] > 0 and line["success_rate"] == 0.5
    assert line["loss"] != 0.0
    from safetensors.torch import load_file

    weights = load_file(result.checkpoint / "adapter_model.safetensors")
    lora_b = [w for name, w in weights.items() if "lora_B" in name]
    assert lora_b and any(w.abs().sum() > 0 for w in lora_b)  # B starts at zero: only an update moves it

    # the direction is right: the rewarded turns became more likely, by the trained policy's own numbers
    from shoparena.train.checkpoint import load_causal_lm

    def logprob(model, context, new):
        ids = torch.tensor([context + new])
        with torch.no_grad():
            logits = model(ids).logits[0, len(context) - 1 : -1].float()
        return logits.log_softmax(-1).gather(1, torch.tensor(new)[:, None]).sum().item()

    before, after = load_causal_lm(tiny).eval(), load_causal_lm(result.checkpoint).eval()
    context, new = HalfRight.successes[-1]
    assert logprob(after, context, new) > logprob(before, context, new)


def test_a_corrupted_mask_stops_the_update(tiny, sampling, all_problems, tmp_path, monkeypatch):
    def leaky(episodes, frame, generate_batch, settings, batch_size):
        rollouts = run_rollouts(episodes, frame, generate_batch, settings, batch_size)
        for rollout in rollouts:
            rollout.model_mask = [1] * len(rollout.completion_ids)  # as a naive collator: tool tokens in
            if rollout.turns[-1].env_tokens == 0:  # make sure a non-generated token exists
                rollout.model_mask.append(1)
                rollout.completion_ids.append(frame.eos_ids[0])
        return rollouts

    monkeypatch.setattr(grpo, "run_rollouts", leaky)
    with pytest.raises(MaskError, match="template/tool token is in the loss"):
        run_grpo(smoke("v17", tiny, sampling, all_problems, tmp_path / "leak"), say=lambda _: None)


def test_mask_guard_checks_rows_padding_and_unknown_completions(tiny, small_catalog):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from shoparena.harness import Episode

    tokenizer = AutoTokenizer.from_pretrained(tiny)
    settings = RolloutSettings(max_rollout_steps=2, max_new_tokens=4, max_completion_tokens=500)
    model = AutoModelForCausalLM.from_pretrained(tiny)
    rollout = run_rollout(
        Episode(small_catalog, "lamp", problem_id="p", step_cap=2),
        TemplateFrame(tokenizer, settings),
        HFGenerator(model, tokenizer, settings),
        settings,
    )
    guard = MaskGuard(tokenizer)
    guard.register([rollout])
    n = len(rollout.completion_ids)
    ids = torch.tensor([rollout.completion_ids + [0, 0]])
    completion_mask = torch.tensor([[1] * n + [0, 0]])
    tool_mask = torch.tensor([rollout.model_mask + [1, 1]])  # TRL pads tool_mask with 1
    assert guard.check(ids, completion_mask, tool_mask) == 1
    with pytest.raises(MaskError, match="not contiguous"):
        guard.check(ids, torch.tensor([[1] * n + [0, 1]]), tool_mask)
    with pytest.raises(MaskError, match="not a completion the rollout loop produced"):
        guard.check(ids[:, :-3] + 1, completion_mask[:, :-3], tool_mask[:, :-3])
    corrupted = tool_mask.clone()
    corrupted[0, 0] = 1 - corrupted[0, 0]
    with pytest.raises(MaskError):
        guard.check(ids, completion_mask, corrupted)


def test_variants_and_their_config_files_agree():
    assert VARIANTS["v17"] == {
        "batch_problems": 3,
        "num_generations": 6,
        "learning_rate": 1e-6,
        "beta": 0.1,
        "tool_weight": 0.0,
        "max_rollout_steps": 15,
    }
    assert VARIANTS["v18"] == {**VARIANTS["v17"], "batch_problems": 8, "learning_rate": 5e-7, "beta": 0.2}
    assert VARIANTS["v19"] == {**VARIANTS["v18"], "tool_weight": 0.5, "max_rollout_steps": 25}
    base = {"model": "m", "catalog": "c", "problems": "p", "out": "o", "teacher_trajectories": "t"}
    for variant, numbers in VARIANTS.items():
        path = REPO / "configs" / "paper" / f"grpo_{variant}.yaml"
        config = GRPOStageConfig.from_file(path, **base)
        assert config.variant == variant
        assert {k: getattr(config, k) for k in numbers} == numbers
        # the variant alone gives the same numbers, and a flag overrides one of them
        assert GRPOStageConfig(variant=variant, **base).model_dump(include=set(numbers)) == numbers
        assert GRPOStageConfig(variant=variant, beta=0.3, **base).beta == 0.3
    tiny_config = GRPOStageConfig.from_file(REPO / "configs/tiny/grpo.yaml", **base)
    assert tiny_config.max_steps >= 1
    from shoparena.train.config import ConfigError

    with pytest.raises(ConfigError, match="bogus"):
        GRPOStageConfig.from_values({**base, "bogus": 1})
    with pytest.raises(ConfigError, match="unknown GRPO variant"):
        GRPOStageConfig.from_values({**base, "variant": "v20"})
    with pytest.raises(ConfigError, match="teacher-trajectories"):
        GRPOStageConfig.from_values({**base, "variant": "v19", "teacher_trajectories": None})


def test_trls_weighted_sum_of_the_reward_functions_is_the_formulas_total():
    """What the update optimises (TRL: Σ weight × reward function) is what the rollout log says."""
    values = {"outcome": 0.25, "tool_match": 0.6, "prm": 0.9}
    for formula in (
        RewardFormula(),
        RewardFormula(tool_weight=0.5),
        RewardFormula(tool_weight=0.5, prm_weight=0.2),
    ):
        functions = [reward_function(term) for term in formula.terms]
        fields = {term: [values[term], 0.0] for term in formula.terms}
        trl = [
            sum(
                w * f(prompts=["a", "b"], completions=["", ""], **fields)[row]
                for w, f in zip(formula.weights, functions, strict=True)
            )
            for row in (0, 1)
        ]
        assert trl == [pytest.approx(formula.total(values)), 0.0]
        assert [f.__name__ for f in functions] == list(formula.terms)
    assert RewardFormula(tool_weight=0.5, prm_weight=0.2).total(values) == pytest.approx(0.25 + 0.3 + 0.18)


def test_starting_from_a_previous_stages_adapter_chains_it(tiny, sampling, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from shoparena.train.checkpoint import load_causal_lm

    adapter = tmp_path / "kto-adapter"
    peft_model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(tiny), LoraConfig(r=2, target_modules="all-linear")
    )
    peft_model.save_pretrained(adapter)
    AutoTokenizer.from_pretrained(tiny).save_pretrained(adapter)
    problems = tmp_path / "train.jsonl"
    write_problems(problems, sampling.fresh[:2])
    said: list[str] = []
    result = run_grpo(
        smoke("v17", str(adapter), sampling, problems, tmp_path / "from-adapter", corpus=None),
        say=said.append,
    )
    assert any("leak guard: no --corpus" in line for line in said)
    # the new adapter names the previous one as its base: loading it rebuilds base + kto + grpo
    saved = json.loads((result.checkpoint / "adapter_config.json").read_text())
    assert saved["base_model_name_or_path"] == str(adapter.resolve())
    assert load_causal_lm(result.checkpoint).config.num_hidden_layers >= 1


def test_a_process_reward_head_adds_its_term_to_each_rollouts_reward(tiny, sampling, all_problems, tmp_path):
    from shoparena.train.prm import PRMStageConfig, run_prm

    head = run_prm(
        PRMStageConfig(
            model=tiny,
            trajectories=[sampling.run],
            problems=[all_problems],
            catalog=sampling.catalog,
            out=tmp_path / "prm",
            epochs=5,
            progress=False,
        )
    ).checkpoint
    with pytest.raises(ValueError, match="prm-head"):
        smoke("v17", tiny, sampling, all_problems, tmp_path / "x", prm_weight=0.5)
    config = smoke("v17", tiny, sampling, all_problems, tmp_path / "g", prm_head=str(head), prm_weight=0.5)
    result = run_grpo(config, say=lambda _: None)
    lines = read_jsonl(result.out / "rollouts.jsonl")
    assert lines and all(0.0 <= line["prm"] <= 1.0 for line in lines)
    assert config.reward_formula() == RewardFormula(prm_weight=0.5)
    assert all(abs(line["reward"] - config.reward_formula().total(line)) < 1e-9 for line in lines)
    [metrics] = read_jsonl(result.metrics)
    assert "prm_reward_mean" in metrics
    assert "0.5 × process reward" in result.report.read_text()
