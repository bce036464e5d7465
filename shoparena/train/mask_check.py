"""`mask_check.json`: the evidence, written by every SFT run, that the loss mask is assistant-only.

For the first rows of the training set, every masked-in span is decoded from the very token ids the
trainer gets, next to the turn it belongs to; each row is also run through
`assert_mask_is_assistant_only` (the check is independent of how the mask was built). A failing row
stops the stage before any training step: training on a wrong mask is the bug this file exists to catch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from shoparena.train.chat_render import RenderedConversation, assert_mask_is_assistant_only

MASK_CHECK_FILE = "mask_check.json"


def mask_check_entry(
    tokenizer: Any, rendered: RenderedConversation, messages: list[dict], tools: list[dict] | None, row: int
) -> dict[str, Any]:
    """One row's entry: its spans decoded, with the turn's role, and the independent check's verdict."""
    assert_mask_is_assistant_only(tokenizer, rendered, messages, tools)
    spans = []
    for span in rendered.spans:
        spans.append(
            {
                "turn": span.turn,
                "role": messages[span.turn].get("role"),
                "tokens": [span.start, span.end],
                "decoded": tokenizer.decode(
                    rendered.input_ids[span.start : span.end], skip_special_tokens=False
                ),
            }
        )
    return {
        "row": row,
        "tokens": len(rendered.input_ids),
        "trained_tokens": rendered.trained_tokens,
        "spans": spans,
        "verified": True,
    }


def write_mask_check(path: Path, entries: list[dict[str, Any]], *, tokenizer_path: str) -> Path:
    body = {
        "what": "masked-in (trained) spans of the first rows, decoded from the trainer's token ids",
        "rule": "each span is one assistant turn's output (<think> where kept, text, tool calls) + <|im_end|>",
        "tokenizer": tokenizer_path,
        "rows": entries,
    }
    path.write_bytes(orjson.dumps(body, option=orjson.OPT_INDENT_2))
    return path
