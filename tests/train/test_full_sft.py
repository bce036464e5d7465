"""Full fine-tuning: the assistant-only loss (lm_head on trained positions only, the shared prefix run
once) equals the plain masked cross-entropy; `train sft --mode full` writes a whole model that loads as
an `hf:` agent; `tiny-model --corpus` trains its tokenizer on a corpus."""

from __future__ import annotations

import random
import warnings

import pytest

pytest.importorskip("transformers")

from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.train.corpus_data import read_corpus
from shoparena.train.full_sft import (
    EncodedRow,
    assistant_loss,
    bucket_batches,
    collate,
    encode_rows,
    shared_prefix,
    without_prefix,
)


def test_assistant_loss_is_the_masked_cross_entropy(tiny_model_dir, tiny_tokenizer, tiny_corpus):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    rows = read_corpus(tiny_corpus).train[:3]
    encoded, dropped = encode_rows(tiny_tokenizer, rows, 1 << 20)
    assert len(encoded) == 3 and not any(dropped.values())
    ids, attention, trained = collate(encoded, tiny_tokenizer.pad_token_id, "cpu")
    labels = torch.where(trained, ids, torch.full_like(ids, -100))
    reference = model(input_ids=ids, attention_mask=attention, labels=labels).loss
    loss, count = assistant_loss(model, ids, attention, trained)
    assert count == int(trained[:, 1:].sum())
    assert torch.allclose(loss / count, reference, atol=1e-5)
    n = shared_prefix(encoded)
    assert n > 100  # the system prompt and the tool schemas
    rest = without_prefix(encoded, n)
    ids2, attention2, trained2 = collate(rest, tiny_tokenizer.pad_token_id, "cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the cache by its current name (no deprecation)
        shared, count2 = assistant_loss(
            model, ids2, attention2, trained2, torch.tensor(encoded[0].input_ids[:n])
        )
    assert count2 == count and torch.allclose(shared, loss, rtol=1e-5)


def test_length_buckets_cover_every_row_once_within_the_token_budget():
    rng = random.Random(0)
    rows = [EncodedRow(input_ids=[1] * rng.randint(5, 300), mask=[0] * 5) for _ in range(200)]
    batches = bucket_batches(rows, 1024, random.Random(1))
    assert sorted(i for batch in batches for i in batch) == list(range(200))
    for batch in batches:
        longest = max(len(rows[i].input_ids) for i in batch)
        assert len(batch) == 1 or longest * len(batch) <= 1024


def test_train_sft_mode_full_writes_a_whole_model_the_hf_agent_loads(tiny_model_dir, tiny_corpus, tmp_path):
    out = tmp_path / "full"
    result = CliRunner().invoke(
        app,
        ["train", "sft", "--mode", "full", "--model", str(tiny_model_dir), "--corpus", str(tiny_corpus),
         "--out", str(out), "--max-steps", "2", "--learning-rate", "1e-3", "--no-progress"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    model_dir = out / "model"
    assert (model_dir / "config.json").is_file() and (model_dir / "tokenizer.json").is_file()
    assert not (model_dir / "adapter_config.json").exists()
    assert (out / "metrics.jsonl").is_file()
    assert not list(out.rglob("events.out.tfevents.*")) and not (out / "wandb").exists()  # --report-to none
    from shoparena.agents.hf_agent import make_hf_agent

    agent = make_hf_agent(str(model_dir), device="cpu", max_new_tokens=4)
    assert agent.generate("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n").completion_tokens >= 1


def test_tiny_model_tokenizer_from_a_corpus_keeps_digits_in_groups_of_three(tiny_corpus, tmp_path):
    out = tmp_path / "scratch"
    result = CliRunner().invoke(
        app,
        ["train", "tiny-model", "--out", str(out), "--corpus", str(tiny_corpus / "train.jsonl"),
         "--vocab-size", "700", "--hidden-size", "32", "--layers", "1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(out)
    pieces = tokenizer.tokenize('{"product_ids":"8039704070"}')
    digits = [p for p in pieces if p.strip("Ġ").isdigit()]
    assert "".join(digits) == "8039704070" and all(len(p) <= 3 for p in digits)
    assert len(tokenizer) <= 700 + 16


def test_train_full_writes_its_metrics_into_a_directory_it_makes(
    tiny_model_dir, tiny_tokenizer, tiny_corpus, tmp_path
):
    """The proof's RS stage logs to OUT/rs/metrics.jsonl before OUT/rs exists (a crash the tiny proof,
    which keeps no rollout, never reached)."""
    from transformers import AutoModelForCausalLM

    from shoparena.train.full_sft import FullSFTSettings, train_full

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    rows = read_corpus(tiny_corpus).train[:2]
    metrics = tmp_path / "not-yet" / "metrics.jsonl"
    log = train_full(
        model, tiny_tokenizer, rows, FullSFTSettings(max_steps=1, log_every=1), metrics_path=metrics
    )
    assert log.steps == 1 and metrics.is_file() and metrics.read_text().strip()
