"""A tiny, randomly initialised Qwen3-architecture checkpoint made on the spot (SPEC §9).

Every training stage must run end to end here, on a CPU, with no download. So `make_tiny_model` builds
a real `Qwen3ForCausalLM` (a few hundred thousand parameters, seeded) and a byte-level BPE tokenizer
trained at creation on text the shop agent sees: synthetic catalogue titles and descriptions, the tool
schemas, tool calls and results, the default system prompt. The tokenizer carries Qwen3's special
tokens (`<|endoftext|>` pad, `<|im_start|>`, `<|im_end|>` end of turn) and, as in Qwen3, the tag tokens
(`<think>`, `<tool_call>`, `<tool_response>` and their closers) as added, non-special tokens, so decoding
with `skip_special_tokens=True` keeps them for the call parser. The chat template is Qwen3's own
(`qwen3_template`). The directory is written with `save_pretrained` and loads offline with
`AutoTokenizer` / `AutoModelForCausalLM.from_pretrained(DIR)`.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from shoparena.train.qwen3_template import QWEN3_CHAT_TEMPLATE

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
TAG_TOKENS = ("<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")
PAD_TOKEN = "<|endoftext|>"
EOS_TOKEN = "<|im_end|>"


class TinyModelConfig(BaseModel):
    """The tiny checkpoint's shape and seed; the defaults give ~0.3 M parameters."""

    model_config = ConfigDict(extra="forbid")

    out: Path = Field(description="Directory to write the checkpoint to (created; must be empty or absent).")
    seed: int = Field(0, description="Seeds the weights and the tokenizer's training text.")
    vocab_size: int = Field(
        3072, ge=300, le=65536, description="BPE vocabulary size of the trained tokenizer."
    )
    hidden_size: int = Field(64, ge=8, description="Model width.")
    layers: int = Field(2, ge=1, description="Decoder layers.")
    heads: int = Field(4, ge=1, description="Attention heads (key/value heads: half, at least 1).")
    intermediate_size: int = Field(128, ge=8, description="MLP width.")
    max_position_embeddings: int = Field(16384, ge=512, description="Context length the config declares.")
    products: int = Field(1500, ge=10, description="Synthetic products whose text trains the tokenizer.")
    corpus: Path | None = Field(
        None,
        description="Train the tokenizer on this corpus's rows (a corpus dir or rows file), rendered as "
        "served, instead of the built-in synthetic text: for a model trained from scratch on it.",
    )


class TinyModel(BaseModel):
    """What `make_tiny_model` wrote."""

    model_config = ConfigDict(extra="forbid")

    path: Path
    parameters: int
    vocab_size: int
    seed: int


def tokenizer_text(products: int, seed: int) -> list[str]:
    """The built-in text the tokenizer learns from: catalogue listings, tool schemas, calls, results."""
    from shoparena.agents.chat_loop import DEFAULT_SYSTEM_PROMPT
    from shoparena.catalog.generator import CatalogGenerator
    from shoparena.harness.tool_specs import tool_schemas

    rng = random.Random(seed)
    listings = CatalogGenerator(products, seed=seed).chunk_dicts(0)[:products]
    texts = [DEFAULT_SYSTEM_PROMPT, QWEN3_CHAT_TEMPLATE]
    texts += [f"<|im_start|>{role}\n" for role in ("system", "user", "assistant")] * 50
    texts += [json.dumps(tool) for tool in tool_schemas("full")] * 3
    for item in listings:
        title = item.get("title", "")
        texts.append(title)
        texts.append(str(item.get("short_description") or ""))
        words = title.split()[: rng.randint(2, 5)]
        call = {"name": "find_product", "arguments": {"q": " ".join(words)}}
        texts.append(f"<tool_call>\n{json.dumps(call)}\n</tool_call>")
        hit = {k: item.get(k) for k in ("product_id", "shop_id", "title", "price", "service", "sold_count")}
        texts.append(f"<tool_response>\n{json.dumps([hit], separators=(',', ':'))}\n</tool_response>")
        detail = {k: item.get(k) for k in ("product_id", "short_description", "description", "sku_options")}
        texts.append(json.dumps([detail], separators=(",", ":"), ensure_ascii=False))
        pick = {"name": "recommend_product", "arguments": {"product_ids": item.get("product_id", "")}}
        texts.append(
            f"<think>\nThe listing matches the request.\n</think>\n\n<tool_call>\n{json.dumps(pick)}\n</tool_call>"
        )
    return texts


def corpus_text(path: Path) -> list[str]:
    """A corpus's rows as the model will read them (the serving rendering), for tokenizer training."""
    from shoparena.train.chat_render import render_pieces, row_system_prompt, serving_messages
    from shoparena.train.corpus_data import read_training_data

    splits = read_training_data(path)
    texts = []
    for row in splits.train:
        messages = serving_messages(row["messages"], row_system_prompt(row))
        texts.append("".join(piece.text for piece in render_pieces(messages, row.get("tools") or None)))
    return texts


def train_tokenizer(texts: list[str], vocab_size: int):
    """A byte-level BPE tokenizer trained on `texts`, wrapped for transformers with Qwen3's tokens."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    # digits in groups of at most three: an id or a price is a few frequent tokens, the same wherever it
    # appears, so a small model can copy it from a tool result (long digit merges would be rare tokens)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"\d{1,3}"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer)
    tokenizer.add_tokens([AddedToken(tag, special=False, normalized=False) for tag in TAG_TOKENS])
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        additional_special_tokens=["<|im_start|>"],
        model_max_length=1 << 20,
    )
    wrapped.chat_template = QWEN3_CHAT_TEMPLATE
    return wrapped


def make_tiny_model(config: TinyModelConfig) -> TinyModel:
    """Write a random-weight Qwen3 checkpoint and its freshly trained tokenizer to `config.out`."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    out = config.out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"tiny-model: {out} exists and is not an empty directory; pick a new --out")
    texts = corpus_text(config.corpus) if config.corpus else tokenizer_text(config.products, config.seed)
    tokenizer = train_tokenizer(texts, config.vocab_size)
    head_dim = max(4, config.hidden_size // config.heads)
    model_config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.layers,
        num_attention_heads=config.heads,
        num_key_value_heads=max(1, config.heads // 2),
        head_dim=head_dim,
        max_position_embeddings=config.max_position_embeddings,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        attn_implementation="sdpa",
    )
    torch.manual_seed(config.seed)
    model = Qwen3ForCausalLM(model_config)
    model.generation_config = GenerationConfig(
        eos_token_id=[tokenizer.eos_token_id, tokenizer.pad_token_id],
        pad_token_id=tokenizer.pad_token_id,
        do_sample=False,
    )
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(out)
    model.save_pretrained(out)
    return TinyModel(
        path=out,
        parameters=sum(p.numel() for p in model.parameters()),
        vocab_size=len(tokenizer),
        seed=config.seed,
    )
