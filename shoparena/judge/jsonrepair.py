"""Reading a JSON object out of what a model answered: after any thinking, the last object, repaired when
generation stopped part-way (a length limit, a dropped connection).

Models wrap their answer in prose, code fences or `<think>…</think>` (a reasoning model's thinking may
even hold a draft object), so the answer is the LAST object after the thinking; a truncated last
object is closed at its last complete value rather than thrown away.
"""

from __future__ import annotations

import json
from typing import Any

_DECODER = json.JSONDecoder()
_CLOSERS = {"{": "}", "[": "]"}


def strip_thinking(text: str) -> str:
    """The text after the last `</think>`; empty when a `<think>` was opened and never closed."""
    close = text.rfind("</think>")
    if close >= 0:
        return text[close + len("</think>") :]
    if "<think>" in text:
        return ""
    return text


def repair_truncated(text: str) -> Any | None:
    """Parse `text` (starting at `{` or `[`), closing it after its last complete value when cut short."""
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                cuts.append((index + 1, "".join(stack)))
            continue
        if char == '"':
            in_string = True
        elif char in "{[":
            stack.append(char)
            cuts.append((index + 1, "".join(stack)))
        elif char in "}]":
            if not stack or _CLOSERS[stack[-1]] != char:
                return None
            stack.pop()
            cuts.append((index + 1, "".join(stack)))
            if not stack:
                return _loads(text[: index + 1])
        elif (char.isalnum() or char == ".") and index + 1 < len(text) and not _in_literal(text[index + 1]):
            cuts.append((index + 1, "".join(stack)))  # a number or literal that ended before the text did
    attempts = []
    if in_string:
        body = text[:-1] if escaped else text
        attempts.append(body + '"' + _closing("".join(stack)))
    for end, opened in reversed(cuts[-200:]):
        attempts.append(text[:end].rstrip().rstrip(",") + _closing(opened))
    for attempt in attempts:
        value = _loads(attempt)
        if value is not None:
            return value
    return None


def _in_literal(char: str) -> bool:
    return char.isalnum() or char in ".-+"


def _closing(opened: str) -> str:
    return "".join(_CLOSERS[c] for c in reversed(opened))


def _loads(text: str) -> Any | None:
    try:
        return json.loads(text)
    except ValueError:
        return None


def last_json_object(text: str, required_key: str | None = None) -> dict | None:
    """The last JSON object in `text` after any thinking (with `required_key` when given), repaired
    when the last one was cut short; None when there is none."""
    body = strip_thinking(text)
    complete: list[tuple[int, dict]] = []
    unparsed_starts: list[int] = []
    index = 0
    while (start := body.find("{", index)) >= 0:
        try:
            value, end = _DECODER.raw_decode(body, start)
        except ValueError:
            unparsed_starts.append(start)
            index = start + 1
            continue
        if isinstance(value, dict) and (required_key is None or required_key in value):
            complete.append((end, value))
        index = end
    last_end = complete[-1][0] if complete else 0
    for start in unparsed_starts:  # outermost first: the object the answer was cut inside
        if start < last_end:
            continue
        repaired = repair_truncated(body[start:])
        if isinstance(repaired, dict) and (required_key is None or required_key in repaired):
            return repaired
    return complete[-1][1] if complete else None
