"""`shoparena train tiny-model`: a random Qwen3 checkpoint that loads offline with Qwen3's template."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.train.qwen3_template import QWEN3_CHAT_TEMPLATE
from shoparena.train.tiny_model import TAG_TOKENS, TinyModelConfig, make_tiny_model

transformers = pytest.importorskip("transformers")


def test_cli_writes_a_checkpoint_that_loads_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "tiny"
    result = CliRunner().invoke(app, ["train", "tiny-model", "--out", str(out), "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert "parameters" in result.output
    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    model = transformers.AutoModelForCausalLM.from_pretrained(out)
    assert model.config.model_type == "qwen3"
    parameters = sum(p.numel() for p in model.parameters())
    assert 100_000 < parameters < 1_000_000
    assert tokenizer.chat_template == QWEN3_CHAT_TEMPLATE
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"
    for tag in (*TAG_TOKENS, "<|im_start|>", "<|im_end|>"):  # each a single token, never split
        assert len(tokenizer(tag, add_special_tokens=False)["input_ids"]) == 1, tag
    # the tags survive decoding without special tokens (the call parser needs them)
    ids = tokenizer("<tool_call>\n{}\n</tool_call><|im_end|>", add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids, skip_special_tokens=True) == "<tool_call>\n{}\n</tool_call>"
    again = CliRunner().invoke(app, ["train", "tiny-model", "--out", str(out)])
    assert again.exit_code == 2 and "not an empty directory" in again.output


def test_same_seed_same_checkpoint(tmp_path):
    a = make_tiny_model(TinyModelConfig(out=tmp_path / "a", seed=5, products=200, vocab_size=600))
    b = make_tiny_model(TinyModelConfig(out=tmp_path / "b", seed=5, products=200, vocab_size=600))
    for name in ("model.safetensors", "tokenizer.json"):
        assert (a.path / name).read_bytes() == (b.path / name).read_bytes(), name


def test_template_is_qwen3s_as_trl_ships_it():
    """Our Jinja string, written independently, is byte-identical to the Qwen3 template TRL vendors."""
    trl = pytest.importorskip("trl")
    shipped = Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja"
    if not shipped.exists():
        pytest.skip("this TRL does not ship qwen3.jinja")
    assert shipped.read_text().rstrip("\n") == QWEN3_CHAT_TEMPLATE


def test_generation_prompt_and_thinking_switch(tiny_tokenizer):
    messages = [{"role": "user", "content": "wireless earbuds"}]
    prompt = tiny_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert prompt == "<|im_start|>user\nwireless earbuds<|im_end|>\n<|im_start|>assistant\n"
    off = tiny_tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True, enable_thinking=False
    )
    assert off.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_tiny_model_runs_as_an_eval_agent(tiny_model_dir, small_catalog, small_catalog_dir, tmp_path):
    """Random weights write junk; the run must still complete, be recorded and be scored."""
    import json

    from shoparena.problems.generator import ProblemGenerator
    from shoparena.problems.io import write_problems

    problems = tmp_path / "problems.jsonl"
    write_problems(problems, ProblemGenerator(small_catalog, seed=3).generate(1, buckets=("product",)))
    out = tmp_path / "run"
    args = ["eval", "--catalog", str(small_catalog_dir), "--problems", str(problems)]
    args += ["--agent", f"hf:{tiny_model_dir}", "--out", str(out), "--executor", "inline"]
    args += ["--similarity", "lexical", "--bootstrap", "0", "--quiet", "--max-tokens", "8"]
    args += ["--option", "max_turns=2", "--option", "device=cpu"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert len(records) == 1 and records[0]["harness"]["protocol"] == "qwen3"
    assert records[0]["score"] is not None
