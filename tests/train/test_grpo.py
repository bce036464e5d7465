"""`train grpo` end to end on the tiny Qwen3 (CPU): real catalogue, real corpus and leak guard, real
teacher trajectories (a reference-agent eval run), TRL's Dr. GRPO update, the mask proved every update."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import shoparena.train.grpo as grpo
from shoparena.problems.io import write_problems
from shoparena.train.grpo import VARIANTS, GRPOStageConfig, MaskGuard, run_grpo
from shoparena.train.multiturn import HFGenerator, MaskError, RolloutSettings, TemplateFrame, run_rollout
from tests.train.sampling_world import world
from tests.train.tiny import tiny_checkpoint

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
def tiny(tmp_path_factory, small_catalog):
    return tiny_checkpoint(tmp_path_factory.mktemp("grpo-model"), small_catalog)


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
    return GRPOStageConfig.for_variant(variant, **options)


def read_jsonl(path: str | Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def test_v19_end_to_end_with_leak_guard_teachers_and_outputs(tiny, sampling, all_problems, tmp_path):
    said: list[str] = []
    config = smoke("v19", tiny, sampling, all_problems, tmp_path / "v19", max_steps=2, merged=True)
    result = run_grpo(config, say=said.append)

    assert result.steps == 2 and result.rollouts == 2 * 2 * 2
    # leak guard: eval and never-touch problems (and their clusters) refused, counts printed
    assert (
        result.leak_guard and result.leak_guard["dropped_by_id"] + result.leak_guard["dropped_by_cluster"] > 0
    )
    assert any(line.startswith("leak guard:") for line in said)
    refused = sampling.pool_ids("eval") | {p.problem_id for p in sampling.never_problems}
    rollouts = read_jsonl(result.rollouts_file)
    assert len(rollouts) == 8 and not {r["problem_id"] for r in rollouts} & refused
    # v19: every trained problem has a teacher; the reward is outcome + 0.5 × tool-match
    for r in rollouts:
        assert r["reward"] == pytest.approx(r["outcome"] + 0.5 * r["tool_match"])
    lines = read_jsonl(result.metrics)
    assert [line["step"] for line in lines] == [1, 2]
    for line in lines:
        assert set(line) >= METRIC_KEYS
        assert line["mask_checks"] == 4 and line["rollouts"] == 4
        assert line["tool_match"] is not None and 0.0 <= line["tool_match"] <= 1.0
    # outputs of every stage: adapter, merged weights, resolved config, report
    assert (Path(result.adapter) / "adapter_config.json").is_file()
    assert (Path(result.merged) / "config.json").is_file()
    assert json.loads(Path(result.config).read_text())["tool_weight"] == 0.5
    report = Path(result.report).read_text()
    assert "Dr. GRPO (v19)" in report and "dropped_by_cluster" in report and "8 rows checked" in report


class HalfRight:
    """Stands in for the sampler: every other rollout recommends the gold products (then terminates),
    the rest are the random model's own turns, so a group's rewards differ and the update has signal."""

    rollouts = 0

    def __init__(self, model, tokenizer, settings, gold: dict[str, str]):
        self.real = HFGenerator(model, tokenizer, settings)
        self.tokenizer, self.gold = tokenizer, gold

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
        return self.tokenizer(f"<tool_call>\n{json.dumps(call)}\n</tool_call>", add_special_tokens=False)[
            "input_ids"
        ] + [im_end]


def test_group_relative_update_moves_the_adapter(tiny, sampling, all_problems, tmp_path, monkeypatch):
    gold = {p.query: ",".join(r.product_id for r in p.rewards) for p in sampling.problems}
    monkeypatch.setattr(
        grpo, "HFGenerator", lambda model, tok, settings: HalfRight(model, tok, settings, gold)
    )
    config = smoke(
        "v17", tiny, sampling, all_problems, tmp_path / "v17", max_new_tokens=64, learning_rate=1e-2, beta=0.0
    )
    result = run_grpo(config, say=lambda _: None)
    [line] = read_jsonl(result.metrics)
    assert line["reward_std"] > 0 and line["success_rate"] == 0.5
    assert line["loss"] != 0.0
    from safetensors.torch import load_file

    weights = load_file(Path(result.adapter) / "adapter_model.safetensors")
    lora_b = [w for name, w in weights.items() if "lora_B" in name]
    assert lora_b and any(w.abs().sum() > 0 for w in lora_b)  # B starts at zero: only an update moves it


def test_a_corrupted_mask_stops_the_update(tiny, sampling, all_problems, tmp_path, monkeypatch):
    def leaky(episode, frame, generate, settings):
        rollout = run_rollout(episode, frame, generate, settings)
        rollout.model_mask = [1] * len(rollout.completion_ids)  # as a naive collator: tool tokens in the loss
        rollout.completion_ids = rollout.completion_ids  # ids untouched
        if rollout.turns[-1].env_tokens == 0:  # make sure a non-generated token exists
            rollout.model_mask.append(1)
            rollout.completion_ids.append(frame.eos_ids[0])
        return rollout

    monkeypatch.setattr(grpo, "run_rollout", leaky)
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
    guard = MaskGuard()
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
    yaml = pytest.importorskip("yaml")
    for variant, numbers in VARIANTS.items():
        data = yaml.safe_load((REPO / "configs" / "paper" / f"grpo_{variant}.yaml").read_text())
        config = GRPOStageConfig.from_dict(data, source=variant)
        assert config.variant == variant
        assert {k: getattr(config, k) for k in numbers} == numbers
    tiny_config = GRPOStageConfig.from_dict(yaml.safe_load((REPO / "configs/tiny/grpo.yaml").read_text()))
    assert tiny_config.max_steps >= 1
    with pytest.raises(ValueError, match="unknown GRPO option"):
        GRPOStageConfig.from_dict({"variant": "v17", "bogus": 1})
    with pytest.raises(ValueError, match="unknown GRPO variant"):
        GRPOStageConfig.for_variant("v20")
    with pytest.raises(ValueError, match="teacher-trajectories"):
        GRPOStageConfig.for_variant("v19", model="m", catalog="c", problems="p", out="o").validate()
