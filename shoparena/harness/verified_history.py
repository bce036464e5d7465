"""What a model was really shown: product ids of an episode's real results, found in a chat request.

Matching a tool call to a served response (`call_ledger`) proves the model wrote the call, not that
the model chose it: agent code writes the request's history, and a history of doctored `tool` messages
(a "page" holding only the code's pick) makes the model write the code's choice. So the inference
proxy also checks the history (issue 22, item 3): a served call counts as the model's only when every
product id in its arguments occurs in a *verified* tool message of that same request.

A `tool` message is verified when its content is a real result of this episode (`ShownResult`, kept
by the `Episode` for every call it answered), in one of these forms and no other:

- the result's text exactly as the tool server answered it (`text` of the reply: canonical JSON, or
  the tool's own message);
- the result's JSON written any other way (spacing, key order): the same JSON value;
- the result with the fields of `COMPACT_DROP_FIELDS` removed from every object (all of them, a
  fixed list: never a choice of the code);
- a result that is a list (a search page, a product view) cut to its first N items, in its order,
  with or without those fields.

`miner_sdk.tool_message` writes the accepted forms. A subset, a reordering, an edited value or a
summary is not a result, and its ids do not count. Ids come from `product_id` fields of the verified
content, and only from results that vouch for them: a search (`find_product`,
`find_products_in_same_shop`: the catalogue chose the hits) or a call recorded as the model's (`llm`:
the model chose its arguments, from what it was shown). The result of a `code` call that names its
own ids (viewing or checking a product the code picked) echoes the code's choice and shows none.

The same walk over results serves grounding (`Episode`: an id recommended, viewed or checked must have
appeared in a search result of the episode).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shoparena.harness import jsontext
from shoparena.harness.tools import split_ids

COMPACT_DROP_FIELDS: tuple[str, ...] = ("description", "short_description", "sold_count")
"""Fields the compact form removes from every object of a result (`miner_sdk.COMPACT_DROP_FIELDS`)."""
SEARCH_TOOLS = frozenset({"find_product", "find_products_in_same_shop"})
"""The tools whose results ground a product id: the catalogue, not the agent, chose what they hold."""
PRODUCT_ID_ARGUMENTS: dict[str, str] = {
    "recommend_product": "product_ids",
    "view_product_information": "product_ids",
    "check_product_match": "product_id",
}
"""The tools that take product ids, and the argument that holds them."""
MAX_MEMO = 4096
"""Contents a session remembers the verdict of (a request resends its whole history)."""


def product_ids_in_arguments(name: str, arguments: Mapping[str, Any] | None) -> list[str]:
    """The product ids a call of `name` names (empty for tools that take none)."""
    key = PRODUCT_ID_ARGUMENTS.get(name)
    if key is None or not isinstance(arguments, Mapping):
        return []
    value = arguments.get(key)
    if isinstance(value, list | tuple):
        return [str(item).strip() for item in value if str(item).strip()]
    if isinstance(value, str | int) and not isinstance(value, bool):
        return split_ids(str(value))
    return []


def product_ids_in_value(value: Any, into: set[str] | None = None) -> set[str]:
    """Every `product_id` field's value in a JSON value, as text."""
    ids = set() if into is None else into
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "product_id" and isinstance(item, str | int) and not isinstance(item, bool):
                ids.add(str(item))
            elif isinstance(item, dict | list):
                product_ids_in_value(item, ids)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list):
                product_ids_in_value(item, ids)
    return ids


def compact(value: Any) -> Any:
    """`value` with `COMPACT_DROP_FIELDS` removed from every object."""
    if isinstance(value, dict):
        return {key: compact(item) for key, item in value.items() if key not in COMPACT_DROP_FIELDS}
    if isinstance(value, list):
        return [compact(item) for item in value]
    return value


@dataclass
class ShownResult:
    """One result the episode answered a call with, as the agent got it."""

    call_id: str
    name: str
    origin: str
    text: str
    """The reply's `text` (what a faithful tool message holds)."""
    value: Any
    """The result as a JSON value."""
    _compact: Any = field(default=None, repr=False)
    _ids: frozenset[str] | None = field(default=None, repr=False)

    @property
    def vouches(self) -> bool:
        """Whether ids in this result count as shown by the catalogue or chosen by the model."""
        return self.name in SEARCH_TOOLS or self.origin == "llm"

    @property
    def ids(self) -> frozenset[str]:
        if self._ids is None:
            self._ids = frozenset(product_ids_in_value(self.value))
        return self._ids

    def holds(self, value: Any) -> bool:
        """Whether `value` (a tool message's JSON) is this result in one of the accepted forms."""
        real = self.value
        if value == real:
            return True
        if self._compact is None:
            self._compact = compact(real)
        small = self._compact
        if value == small:
            return True
        if isinstance(value, list) and isinstance(real, list) and 0 < len(value) < len(real):
            cut = len(value)
            return value == real[:cut] or value == small[:cut]
        return False


@dataclass
class HistoryVerdict:
    """What one request's history showed the model: the ids of its verified tool messages."""

    ids: set[str] = field(default_factory=set)
    tool_messages: int = 0
    unverified: int = 0
    """Tool messages that are not a result of this episode in an accepted form."""

    def unshown(self, name: str, arguments: Mapping[str, Any] | None) -> list[str]:
        """The product ids of a call that no verified tool message of the request held."""
        return [pid for pid in product_ids_in_arguments(name, arguments) if pid not in self.ids]


def _content(message: Mapping[str, Any]) -> str | None:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return None


class HistoryCheck:
    """Verifies the tool messages of an episode's chat requests; remembers each content's verdict (a
    request resends the whole conversation, so each message is checked about once). One per episode;
    used by one request at a time (the proxy serialises an episode's requests)."""

    def __init__(self) -> None:
        self._memo: dict[bytes, tuple[frozenset[str] | None, int]] = {}

    def check(self, messages: Sequence[Any], shown: Sequence[ShownResult]) -> HistoryVerdict:
        verdict = HistoryVerdict()
        by_id: dict[str, ShownResult] | None = None
        for message in messages:
            if not isinstance(message, dict) or message.get("role") != "tool":
                continue
            verdict.tool_messages += 1
            text = _content(message)
            if text is None:
                verdict.unverified += 1
                continue
            key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
            known = self._memo.get(key)
            if known is not None and (known[0] is not None or known[1] == len(shown)):
                ids = known[0]
            else:
                if by_id is None:
                    by_id = {item.call_id: item for item in shown}
                ids = _match(text, by_id.get(str(message.get("tool_call_id"))), shown)
                if len(self._memo) >= MAX_MEMO:
                    self._memo.clear()
                self._memo[key] = (ids, len(shown))
            if ids is None:
                verdict.unverified += 1
            else:
                verdict.ids.update(ids)
        return verdict


def _match(text: str, named: ShownResult | None, shown: Sequence[ShownResult]) -> frozenset[str] | None:
    """The ids a tool message's content shows (empty: a real result that vouches for none); None when
    it is no result of the episode."""
    order = [named, *reversed(shown)] if named is not None else list(reversed(shown))
    for item in order:
        if item.text == text:
            return item.ids if item.vouches else frozenset()
    try:
        value = jsontext.loads(text)
    except ValueError:
        return None
    if not isinstance(value, list | dict):
        return None
    for item in order:
        if item.holds(value):
            return frozenset(product_ids_in_value(value)) if item.vouches else frozenset()
    return None
