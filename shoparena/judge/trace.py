"""What a judge may rely on in a trajectory, read once: the model's own text turn by turn, and the data
the verified call log shows it was given before each turn.

Data comes from `record.calls` (the harness's log, which an agent cannot alter), never from the tool
messages of the trace: a tool message whose call is not in the log contributes nothing. The model's
text comes from the trace (`record.messages`), because that is what the model wrote; an assistant turn
whose calls were all emitted by code (`origin == "code"`) is not the model's text.

A record with a verified inference log (`record.inference`: an agent behind the inference proxy, such
as a miner file) also has the model text the proxy saw the model return: each served response is a
model turn, placed after the calls the verified log held when its request arrived. Those turns are the
model's own words whatever the agent claims, and the log's token counts, not the agent's, are what
gate 1 reads (`VerifiedInference`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from shoparena.harness.protocols import scan_tags
from shoparena.records.calls import CallRecord
from shoparena.records.inference import InferenceEntry, InferenceLog
from shoparena.records.trajectory import TrajectoryRecord

ID_KEYS = frozenset({"product_id", "shop_id"})
PRICE_KEYS = frozenset({"price"})
ATTRIBUTE_CONTAINERS = frozenset({"attributes", "sku_options", "service"})
MIN_ATTRIBUTE_CHARS = 3

_WORD = re.compile(r"[a-z0-9][a-z0-9\-]*[a-z0-9]|[a-z0-9]")
_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.])\d+(?:\.\d+)?(?![\w])")
_WHITESPACE = re.compile(r"\s+")

_STOPWORD_TEXT = """a an and are as at be but by can do does for from has have if in into is it its of on or so
    than that the their then there these this those to too was were will with without not no yes
    one two all any each more most other some such only own same very just also which what who
    whom when where why how i me my we our you your he she they them his her product products item
    items price shop result results page"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def words(text: str) -> list[str]:
    """Lower-cased word tokens (hyphens kept inside words, so 'usb-c' is one token)."""
    return _WORD.findall(text.lower())


def numbers_in(text: str) -> list[tuple[float, str, int, int]]:
    """Every number written in `text` as (value, as written, start, end); '1,558.00' reads as 1558."""
    found = []
    for match in _NUMBER.finditer(text):
        written = match.group(0)
        found.append((float(written.replace(",", "")), written, match.start(), match.end()))
    return found


def collapse_whitespace(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def price_key(value: float) -> int:
    """Prices compared to the cent."""
    return round(value * 100)


def message_text(message: dict[str, Any]) -> str:
    """Reasoning and content of one assistant message, as one text (content parts joined)."""
    parts = []
    for key in ("reasoning_content", "reasoning", "content"):
        value = message.get(key)
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):
            parts.extend(
                p.get("text", "") for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
    return "\n".join(part for part in parts if part.strip())


@dataclass
class Observed:
    """The data the verified log showed the model up to some point of the trace."""

    ids: set[str] = field(default_factory=set)
    prices: dict[int, set[str]] = field(default_factory=dict)
    """price in cents → ids of the products shown at that price."""
    numbers: set[int] = field(default_factory=set)
    """every number in any result, in cents (totals, discounts, counts …)."""
    attribute_values: set[str] = field(default_factory=set)
    tokens: set[str] = field(default_factory=set)
    products: dict[str, float | None] = field(default_factory=dict)
    """product id → price, for every product a result showed."""

    def copy(self) -> Observed:
        return Observed(
            set(self.ids),
            {k: set(v) for k, v in self.prices.items()},
            set(self.numbers),
            set(self.attribute_values),
            set(self.tokens),
            dict(self.products),
        )

    def add_result(self, result: Any) -> None:
        self._walk(result, parent_key=None, in_attributes=False)
        self._products(result)

    @classmethod
    def of(cls, result: Any) -> Observed:
        seen = cls()
        seen.add_result(result)
        return seen

    def merge(self, other: Observed) -> None:
        """Add what `other` saw, as if its results had been added here after this one's: a product's
        price is the latest one shown (a listing without a price keeps the earlier price)."""
        self.ids |= other.ids
        for cents, owners in other.prices.items():
            self.prices.setdefault(cents, set()).update(owners)
        self.numbers |= other.numbers
        self.attribute_values |= other.attribute_values
        self.tokens |= other.tokens
        for pid, price in other.products.items():
            if price is not None or pid not in self.products:
                self.products[pid] = price

    def _walk(self, value: Any, parent_key: str | None, in_attributes: bool) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                self._walk(item, key, in_attributes or key in ATTRIBUTE_CONTAINERS)
        elif isinstance(value, list):
            for item in value:
                self._walk(item, parent_key, in_attributes)
        elif isinstance(value, bool) or value is None:
            return
        elif isinstance(value, int | float):
            self.numbers.add(price_key(float(value)))
        elif isinstance(value, str):
            text = value.strip()
            if parent_key in ID_KEYS and text:
                self.ids.add(text)
            if in_attributes and len(text) >= MIN_ATTRIBUTE_CHARS:
                self.attribute_values.add(text.lower())
            self.tokens.update(words(text))
            # the values `numbers_in` reads, without its positions: this runs on every string of every
            # result (descriptions included), the judge's hottest loop
            self.numbers.update(
                price_key(float(written.replace(",", ""))) for written in _NUMBER.findall(text)
            )

    def _products(self, value: Any) -> None:
        if isinstance(value, dict):
            pid = value.get("product_id")
            if isinstance(pid, str) and pid.strip():
                price = value.get("price")
                price = (
                    float(price) if isinstance(price, int | float) and not isinstance(price, bool) else None
                )
                if price is not None or pid not in self.products:
                    self.products[pid.strip()] = price
                if price is not None:
                    self.prices.setdefault(price_key(price), set()).add(pid.strip())
            for item in value.values():
                self._products(item)
        elif isinstance(value, list):
            for item in value:
                self._products(item)


@dataclass
class ModelTurn:
    """One assistant message written by the model, with what it had been shown before writing it."""

    message_index: int
    text: str
    seen: Observed
    """Data of every verified result returned before this turn."""
    own_words: set[str]
    """Tokens the model (or the user) wrote before this turn: query, earlier text, call arguments."""
    own_numbers: set[int]
    """Numbers (in cents) written before this turn by the user or the model itself."""

    @property
    def after_observation(self) -> bool:
        return bool(self.seen.tokens or self.seen.numbers or self.seen.ids)


@dataclass(frozen=True)
class VerifiedInference:
    """What the verified inference log says was inferred (None on a view: the record has no log)."""

    requests: int
    served: int
    prompt_tokens: int
    completion_tokens: int
    unshown_id_calls: int = 0
    """Model tool calls naming product ids no verified tool result of their request held."""

    @classmethod
    def of(cls, log: InferenceLog) -> VerifiedInference:
        return cls(log.requests, log.served, log.prompt_tokens, log.completion_tokens, log.unshown_id_calls)


@dataclass
class TraceView:
    """A record read for judging."""

    query: str
    turns: list[ModelTurn]
    llm_calls: int
    code_calls: int
    observed: Observed
    """Everything the verified log showed by the end."""
    fields: list[tuple[int, str, str, bool]]
    """(message index, field, text, written by the model) for every text field of the trace; a
    response of the inference log has the index -seq."""
    inference: VerifiedInference | None = None
    ungrounded_recommendation: str | None = None
    """The `ungrounded` reason of the recommendation that stands (None: grounded, or none made)."""
    _collapsed: list[str] | None = field(default=None, repr=False, compare=False)
    """`fields`' texts with whitespace collapsed, made on the first `occurrences` (a verdict looks up
    every cited span, each against every field)."""

    @property
    def model_text(self) -> str:
        return "\n".join(turn.text for turn in self.turns)

    def reasoning_words(self) -> int:
        return len(words(self.model_text))

    def occurrences(self, span: str) -> Iterator[tuple[int, str, bool]]:
        """Where `span` occurs verbatim (whitespace runs compared as one space): (message, field, by model)."""
        wanted = collapse_whitespace(span)
        if not wanted:
            return
        if self._collapsed is None or len(self._collapsed) != len(self.fields):
            self._collapsed = [collapse_whitespace(text) for _, _, text, _ in self.fields]
        for (index, name, _text, by_model), collapsed in zip(self.fields, self._collapsed, strict=True):
            if wanted in collapsed:
                yield index, name, by_model


def _call_text_fields(message: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for i, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("arguments"), str):
            out.append((f"tool_calls[{i}].arguments", function["arguments"]))
    return out


def _call_ids(message: dict[str, Any]) -> list[str]:
    return [c.get("id") for c in message.get("tool_calls") or [] if isinstance(c, dict) and c.get("id")]


def read_trace(record: TrajectoryRecord, query: str | None = None) -> TraceView:
    """Walk the trace once, pairing it with the verified log by call id."""
    calls_by_id = {call.call_id: call for call in record.calls}
    parts: dict[int, Observed] = {}  # each call's result walked once: the trace and the inference log read it
    query = query if query is not None else record.problem.query
    observed = Observed()
    own = set(words(query))
    own_numbers = {price_key(n) for n, *_ in numbers_in(query)}
    turns: list[ModelTurn] = []
    fields: list[tuple[int, str, str, bool]] = []
    for index, message in enumerate(record.messages):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            ids = _call_ids(message)
            by_code = bool(ids) and all(
                calls_by_id.get(cid) is not None and calls_by_id[cid].origin == "code" for cid in ids
            )
            text = message_text(message)
            for key in ("reasoning_content", "reasoning", "content"):
                value = message.get(key)
                if isinstance(value, str) and value:
                    fields.append((index, key, value, not by_code))
                elif isinstance(value, list):
                    joined = message_text({key: value})
                    if joined:
                        fields.append((index, key, joined, not by_code))
            for name, arguments in _call_text_fields(message):
                fields.append((index, name, arguments, False))
            # the turn's own call arguments are the model's words too: it may describe the filter
            # it is sending ("price 0-397") in the same message without citing anything it saw
            call_words: set[str] = set()
            call_numbers: set[int] = set()
            for cid in ids:
                call = calls_by_id.get(cid)
                if call is not None and call.arguments:
                    written = " ".join(str(v) for v in call.arguments.values())
                    call_words.update(words(written))
                    call_numbers.update(price_key(n) for n, *_ in numbers_in(written))
            if text and not by_code:
                turns.append(
                    ModelTurn(index, text, observed.copy(), own | call_words, own_numbers | call_numbers)
                )
                own.update(words(text))
                own_numbers.update(price_key(n) for n, *_ in numbers_in(text))
            own.update(call_words)
            own_numbers.update(call_numbers)
        elif role == "tool":
            content = message.get("content")
            if isinstance(content, str):
                fields.append((index, "content", content, False))
            call = calls_by_id.get(message.get("tool_call_id"))
            if call is not None and call.error is None and call.result is not None:
                if record.inference is None:
                    observed.add_result(call.result)  # read once: no inference log reads it again
                else:
                    observed.merge(_seen_in(call, parts))
        else:
            content = message.get("content")
            if isinstance(content, str):
                fields.append((index, "content", content, False))
                if role == "system":
                    own.update(words(content))
                    own_numbers.update(price_key(n) for n, *_ in numbers_in(content))
    inference = None
    if record.inference is not None:
        inference = VerifiedInference.of(record.inference)
        turns.extend(_inference_turns(record.inference, record.calls, query, fields, parts))
    llm_calls = sum(1 for call in record.calls if call.origin == "llm")
    return TraceView(
        query=query,
        turns=turns,
        llm_calls=llm_calls,
        code_calls=len(record.calls) - llm_calls,
        observed=observed,
        fields=fields,
        inference=inference,
        ungrounded_recommendation=next(
            (
                call.ungrounded
                for call in record.calls
                if call.name == "recommend_product" and call.counted and call.error is None
            ),
            None,
        ),
    )


def response_text(entry: InferenceEntry) -> str:
    """The model's words in a logged response: its reasoning and content, tool-call blocks left out."""
    parts = [entry.reasoning or ""]
    content = entry.content or ""
    if "<tool_call>" in content or "<think>" in content or "</think>" in content:
        scan = scan_tags(content, ("think", "tool_call", "response"))
        parts.extend(body for name, body in scan.blocks if name != "tool_call")
        parts.append(scan.outside)
    else:
        parts.append(content)
    return "\n".join(part.strip() for part in parts if part.strip())


def _seen_in(call: CallRecord, parts: dict[int, Observed]) -> Observed:
    """The data of one call's result (walked once per verdict, by the call's position in the log)."""
    key = id(call)
    part = parts.get(key)
    if part is None:
        part = parts[key] = Observed.of(call.result)
    return part


def _inference_turns(
    log: InferenceLog,
    calls: list[CallRecord],
    query: str,
    fields: list[tuple[int, str, str, bool]],
    parts: dict[int, Observed],
) -> list[ModelTurn]:
    """One model turn per served response, seeing the results of the calls logged before its request."""
    seen = Observed()
    own = set(words(query))
    own_numbers = {price_key(n) for n, *_ in numbers_in(query)}
    taken = 0
    turns: list[ModelTurn] = []
    for entry in sorted(log.entries, key=lambda e: e.seq):
        if entry.outcome != "ok":
            continue
        for call in calls[taken : max(taken, entry.calls_before)]:
            if call.error is None and call.result is not None:
                seen.merge(_seen_in(call, parts))
            if call.arguments:
                written = " ".join(str(v) for v in call.arguments.values())
                own.update(words(written))
                own_numbers.update(price_key(n) for n, *_ in numbers_in(written))
        taken = max(taken, entry.calls_before)
        text = response_text(entry)
        if not text:
            continue
        # the response's own call arguments are its words too (a filter it describes is not a citation)
        written = " ".join(call.arguments for call in entry.tool_calls)
        call_words, call_numbers = set(words(written)), {price_key(n) for n, *_ in numbers_in(written)}
        fields.append((-entry.seq, "inference", text, True))
        turns.append(ModelTurn(-entry.seq, text, seen.copy(), own | call_words, own_numbers | call_numbers))
        own.update(words(text), call_words)
        own_numbers.update({price_key(n) for n, *_ in numbers_in(text)}, call_numbers)
    return turns
