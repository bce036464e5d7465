"""`shoparena train sft` end to end on the tiny model and a corpus built by the real `corpus build` from
real reference-agent eval runs: the mask proof in mask_check.json, dropped-row accounting, metrics,
report, the resolved config, the learning-rate sweep, chained stages, and the trained adapter running
as an eval agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.train.chat_render import render_row, row_system_prompt, serving_messages
from shoparena.train.config import ConfigError
from shoparena.train.sft import SFTStageConfig, run_sft
from tests.jsonl import read_jsonl
from tests.train.test_chat_render import expected_output

pytest.importorskip("trl")
pytest.importorskip("peft")

TINY_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "tiny" / "sft.yaml"
MAX_LENGTH = 4000


def _lengths(tokenizer, rows: list[dict]) -> list[int]:
    return [len(render_row(tokenizer, r).input_ids) for r in rows]  # as tokenise_rows renders them


@pytest.fixture(scope="module")
def sft_run(tiny_corpus, tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("sft") / "run"
    args = ["train", "sft", "--config", str(TINY_CONFIG), "--corpus", str(tiny_corpus)]
    args += ["--model", str(tiny_model_dir), "--out", str(out), "--max-length", str(MAX_LENGTH)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out, result.output


def test_sft_writes_every_output(sft_run, tiny_corpus, tiny_tokenizer):
    out, output = sft_run
    assert "checkpoint:" in output and str(out / "adapter") in output
    adapter = json.loads((out / "adapter" / "adapter_config.json").read_text())
    assert adapter["r"] == 8  # from the config file
    resolved = json.loads((out / "config.resolved.json").read_text())
    assert resolved["stage"] == "sft" and resolved["max_length"] == MAX_LENGTH  # the flag beat the file
    assert resolved["lora_alpha"] == 16 and resolved["max_steps"] == 2
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in metrics if "loss" in m]
    assert [m["step"] for m in steps] == [1, 2] and all(m["loss"] > 0 for m in steps)
    assert steps[-1]["tokens_per_s"] > 0 and metrics[-1]["eval_loss"] > 0
    # every row over max_length is dropped and counted, per split, with its length
    train, held_out = read_jsonl(tiny_corpus / "train.jsonl"), read_jsonl(tiny_corpus / "eval.jsonl")
    too_long = sum(n > MAX_LENGTH for n in _lengths(tiny_tokenizer, train))
    dropped = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert sum(d["split"] == "train" and d["reason"] == "too_long" for d in dropped) == too_long
    assert sum(d["split"] == "eval" for d in dropped) == sum(
        n > MAX_LENGTH for n in _lengths(tiny_tokenizer, held_out)
    )
    report = (out / "report.md").read_text()
    assert "SFT (LoRA)" in report and "mask_check.json" in report and "too_long" in report


def test_mask_check_spans_are_exactly_assistant_output(sft_run, tiny_corpus, tiny_tokenizer):
    out, _ = sft_run
    check = json.loads((out / "mask_check.json").read_text())
    train = read_jsonl(tiny_corpus / "train.jsonl")
    assert len(check["rows"]) == 2
    for entry in check["rows"]:
        row = train[entry["row"]]
        messages = serving_messages(row["messages"], row_system_prompt(row))  # as trained: as served
        assert messages[0] == {"role": "system", "content": row["metadata"]["system_prompt"]}
        assert entry["verified"] is True
        turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        assert [span["turn"] for span in entry["spans"]] == turns
        for span in entry["spans"]:
            assert span["role"] == "assistant"
            assert span["decoded"] == expected_output(messages, span["turn"])
            for other in messages:  # no user or tool text is inside a trained span
                if other["role"] in ("user", "tool") and len(other.get("content") or "") > 20:
                    assert other["content"] not in span["decoded"]
        assert entry["trained_tokens"] == sum(s["tokens"][1] - s["tokens"][0] for s in entry["spans"])


def test_trained_adapter_runs_as_an_eval_agent(sft_run, small_catalog, small_catalog_dir, tmp_path):
    from shoparena.problems.generator import ProblemGenerator
    from shoparena.problems.io import write_problems

    out, _ = sft_run
    problems = tmp_path / "problems.jsonl"
    write_problems(problems, ProblemGenerator(small_catalog, seed=4).generate(1, buckets=("product",)))
    args = ["eval", "--catalog", str(small_catalog_dir), "--problems", str(problems)]
    args += ["--agent", f"hf:{out / 'adapter'}", "--out", str(tmp_path / "run"), "--executor", "inline"]
    args += ["--similarity", "lexical", "--bootstrap", "0", "--quiet", "--max-tokens", "8"]
    args += ["--option", "max_turns=2", "--option", "device=cpu"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    records = [
        json.loads(line) for line in (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()
    ]
    assert len(records) == 1 and records[0]["score"] is not None


def test_lr_sweep_keeps_the_lowest_held_out_loss(tiny_corpus, tiny_model_dir, tmp_path):
    config = SFTStageConfig.from_file(
        TINY_CONFIG,
        corpus=tiny_corpus,
        model=tiny_model_dir,
        out=tmp_path / "sweep",
        max_length=MAX_LENGTH,
        max_steps=1,
        lr_sweep=True,
        sweep_lrs=[1e-4, 5e-2],
        merge=True,
    )
    result = run_sft(config)
    sweep = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    losses = {c["learning_rate"]: c["eval_loss"] for c in sweep["candidates"]}
    assert set(losses) == {1e-4, 5e-2} and all(loss > 0 for loss in losses.values())
    assert sweep["winner"] == min(losses, key=losses.get) == result.details["learning_rate"]
    for lr in (1e-4, 5e-2):
        assert (
            tmp_path / "sweep" / "sweep" / f"lr-{lr:g}" / "adapter" / "adapter_model.safetensors"
        ).is_file()
    assert result.eval_loss == losses[sweep["winner"]]
    assert (result.checkpoint / "adapter_model.safetensors").is_file()
    from transformers import AutoModelForCausalLM

    assert AutoModelForCausalLM.from_pretrained(result.merged).config.model_type == "qwen3"


def test_rows_api_and_a_stage_on_top_of_an_adapter(tiny_corpus, tiny_model_dir, tiny_tokenizer, tmp_path):
    """What RS / teacher SFT do: `run_sft` on rows they built, from the previous stage's adapter."""
    rows = [r for r in read_jsonl(tiny_corpus / "train.jsonl")]
    short = [r for r, n in zip(rows, _lengths(tiny_tokenizer, rows), strict=True) if n <= MAX_LENGTH]
    first = run_sft(
        SFTStageConfig(model=tiny_model_dir, out=tmp_path / "a", max_length=MAX_LENGTH, max_steps=1, progress=False,
                       gradient_checkpointing=False, learning_rate=1e-2),
        train_rows=short[:1],
    )  # fmt: skip
    second = run_sft(
        SFTStageConfig(model=first.checkpoint, out=tmp_path / "b", max_length=MAX_LENGTH, max_steps=1,
                       progress=False, gradient_checkpointing=True),
        train_rows=short[:1],
    )  # fmt: skip
    base = json.loads((second.checkpoint / "adapter_config.json").read_text())["base_model_name_or_path"]
    assert base == str(first.checkpoint.resolve()) and second.steps == 1 and second.eval_loss is None
    from shoparena.agents.hf_agent import make_hf_agent

    agent = make_hf_agent(str(second.checkpoint), device="cpu", max_new_tokens=2)  # the chain loads
    assert agent.tokenizer.chat_template == tiny_tokenizer.chat_template
    bare = tmp_path / "bare"  # an adapter saved without its tokenizer takes its base's
    bare.mkdir()
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        (bare / name).write_bytes((second.checkpoint / name).read_bytes())
    agent = make_hf_agent(str(bare), device="cpu", max_new_tokens=2)
    assert agent.tokenizer.chat_template == tiny_tokenizer.chat_template


def test_config_errors_name_the_key(tmp_path, tiny_model_dir):
    bad = tmp_path / "bad.yaml"
    bad.write_text("learnin_rate: 0.1\nlora_r: 8\n")
    with pytest.raises(ConfigError, match="unknown key 'learnin_rate'"):
        SFTStageConfig.from_file(bad, model=tiny_model_dir, out=tmp_path / "o")
    result = CliRunner().invoke(
        app,
        ["train", "sft", "--config", str(bad), "--model", str(tiny_model_dir), "--out", str(tmp_path / "o")],
    )
    assert result.exit_code == 2 and "learnin_rate" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(
        app, ["train", "sft", "--model", str(tiny_model_dir), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2 and "--corpus" in result.output
    result = CliRunner().invoke(app, ["train", "sft", "--out", str(tmp_path / "o"), "--lora-r", "0"])
    assert result.exit_code == 2 and "lora_r" in result.output and "model" in result.output


def test_a_failed_run_leaves_nothing_or_says_it_failed(tiny_model_dir, tmp_path):
    """Failing on its inputs (rows that cannot be read) leaves no OUT at all, not even the resolved config;
    failing after writing what a user needs to see (every row dropped: dropped.jsonl says why) keeps it
    and writes failed.json with the reason, which the next run into OUT replaces with its own verdict."""
    out = tmp_path / "runs" / "sft"
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"{not json\n")
    args = ["train", "sft", "--model", str(tiny_model_dir), "--out", str(out), "--no-progress"]
    result = CliRunner().invoke(app, [*args, "--data", str(garbage)])
    assert result.exit_code == 2 and "not JSON" in result.output, result.output
    assert not (tmp_path / "runs").exists()  # no config.resolved.json, no OUT, no parent made for it

    rows = tmp_path / "rows.jsonl"
    row = {"messages": [{"role": "user", "content": "hi " * 50}, {"role": "assistant", "content": "hello"}]}
    rows.write_text(json.dumps(row) + "\n")
    result = CliRunner().invoke(app, [*args, "--data", str(rows), "--max-length", "16"])
    assert result.exit_code == 2 and "every training row was dropped" in result.output, result.output
    failed = json.loads((out / "failed.json").read_text())
    assert failed["stage"] == "sft" and "every training row was dropped" in failed["error"]
    assert (out / "dropped.jsonl").exists() and (out / "config.resolved.json").exists()

    result = CliRunner().invoke(app, [*args, "--data", str(garbage)])  # into an OUT with files: marked
    assert result.exit_code == 2 and "not JSON" in json.loads((out / "failed.json").read_text())["error"]
    assert (out / "dropped.jsonl").exists()  # what was there before this run stays
