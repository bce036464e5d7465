"""Reading an item's words against one candidate's own vocabulary (its title, attribute and SKU values).

The query text says "with the 200ml volume option" or "whose net weight is 500g"; which words are a
key and which a value is only clear next to a product that has `volume: 200ml`. So a candidate is
judged by how much of the item's description its own (key, value) pairs and title *explain*: every
phrasing the task templates use for a pair is searched in the text, and the content words left
unexplained are what the candidate lacks. The gold product explains everything by construction; a
candidate that does too satisfies every constraint the scorer checks (one SKU option at a time, as
the scorer reads SKUs).
"""

from __future__ import annotations

import re
from functools import lru_cache

from pydantic import BaseModel, Field

from shoparena.agents.reference.query import ItemRequest
from shoparena.agents.reference.wording import STRUCTURE_WORDS, normalise, tokens
from shoparena.catalog.vocabulary import MARKETING_WORDS

TITLE_FILLER = MARKETING_WORDS
"""Marketing words a user never repeats from a title: skipped when looking for the query's phrase in one."""
_ALPHA_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")
_TOKEN_SPAN = re.compile(r"[a-z0-9][a-z0-9+.\-:/]*[a-z0-9+]|[a-z0-9]")


class Candidate(BaseModel):
    """What the agent has observed about one product: a search hit, and details once viewed."""

    product_id: str
    shop_id: str
    title: str
    price: float
    service: list[str] = Field(default_factory=list)
    sold_count: int = 0
    rank: int = 99
    """Best position it reached in any search for its item (0 = first)."""
    attributes: dict[str, list[str]] | None = None
    sku_options: dict[str, dict[str, str]] | None = None

    @property
    def viewed(self) -> bool:
        return self.attributes is not None

    @classmethod
    def of_hit(cls, hit: dict, rank: int) -> Candidate:
        return cls(
            product_id=str(hit["product_id"]),
            shop_id=str(hit.get("shop_id", "")),
            title=str(hit.get("title", "")),
            price=float(hit.get("price") or 0.0),
            service=list(hit.get("service") or []),
            sold_count=int(hit.get("sold_count") or 0),
            rank=rank,
        )


class Fit(BaseModel):
    """How well one candidate answers one item."""

    product_id: str
    residual: list[str]
    """Content words of the item the candidate does not explain (empty = every constraint met)."""
    matched_pairs: dict[str, str]
    """Pairs whose template phrasing appears in the query: the requirements for check_product_match."""
    head_coverage: float
    head_in_order: bool = False
    """The head phrase appears as a run in the title (filler and numbers skipped), as query phrases are cut."""
    price_ok: bool
    services_ok: bool
    option: str | None = None

    @property
    def complete(self) -> bool:
        return not self.residual and self.price_ok and self.services_ok

    def sort_key(self, candidate: Candidate) -> tuple:
        return (
            0 if self.price_ok and self.services_ok else 1,
            len(self.residual),
            -round(self.head_coverage, 3),
            0 if self.head_in_order else 1,
            candidate.rank,
            -candidate.sold_count,
            candidate.product_id,
        )


def key_words(key: str) -> str:
    return key.replace("_", " ").strip().lower()


@lru_cache(maxsize=65536)
def _phrasing_re(key: str, value: str) -> re.Pattern[str]:
    """Every way the templates (and plain writing) put a pair into words; the bare value last."""
    kw, v = re.escape(key_words(key)), re.escape(normalise(value))
    forms = [
        rf"{kw}\s*:\s*{v}",
        rf"{kw} is {v}",
        rf"{kw} of {v}",
        rf"{kw} {v}",
        rf"{v} {kw}",
    ]
    if key_words(key) == "brand":
        forms += [rf"by {v}", rf"the {v} brand", rf"{v} brand", rf"brand {v}"]
    return re.compile(r"(?<![a-z0-9])(?:" + "|".join(forms) + r")(?![a-z0-9])")


@lru_cache(maxsize=65536)
def _value_re(value: str) -> re.Pattern[str]:
    return re.compile(r"(?<![a-z0-9])" + re.escape(normalise(value)) + r"(?![a-z0-9])")


def _pair_spans(text: str, key: str, value: str) -> tuple[list[tuple[int, int]], bool]:
    """Spans of `text` this pair explains, and whether a keyed phrasing (not only the bare value) hit."""
    if not value.strip():
        return [], False
    spans = [m.span() for m in _phrasing_re(key, value).finditer(text)]
    if spans:
        return spans, True
    return [m.span() for m in _value_re(value).finditer(text)], False


def _residual(text: str, covered: list[tuple[int, int]], title_tokens: set[str]) -> list[str]:
    left = []
    for match in _TOKEN_SPAN.finditer(text):
        start, end = match.span()
        word = match.group().rstrip(":")
        if not word or word in STRUCTURE_WORDS or word in title_tokens:
            continue
        if any(s <= start and end <= e for s, e in covered):
            continue
        left.append(word)
    return left


def _in_order(head: list[str], title: str) -> bool:
    words = [w.lower() for w in title.split() if _ALPHA_WORD.fullmatch(w)]
    words = [w for w in words if w not in TITLE_FILLER]
    return bool(head) and any(words[i : i + len(head)] == head for i in range(len(words) - len(head) + 1))


def fit_candidate(item: ItemRequest, candidate: Candidate) -> Fit:
    """Judge `candidate` (viewed or not) against `item`; unviewed ones are judged by title alone."""
    text = normalise(item.description)
    title_tokens = set(tokens(candidate.title))
    head = [t for t in tokens(item.head) if t not in STRUCTURE_WORDS]
    coverage = sum(1 for t in head if t in title_tokens) / len(head) if head else 1.0
    price_ok = item.price.admits(candidate.price) if item.price else True
    services_ok = all(flag in candidate.service for flag in item.services)
    attribute_spans: list[tuple[int, int]] = []
    attribute_pairs: dict[str, str] = {}
    for key, values in (candidate.attributes or {}).items():
        for value in values:
            spans, keyed = _pair_spans(text, key, value)
            attribute_spans += spans
            if keyed:
                attribute_pairs.setdefault(key, value)
    options: list[tuple[str | None, dict[str, str]]] = [(None, {})]
    options += [(name, option) for name, option in (candidate.sku_options or {}).items()]
    best: Fit | None = None
    for name, option in options:
        spans = list(attribute_spans)
        pairs = dict(attribute_pairs)
        for key, value in option.items():
            found, keyed = _pair_spans(text, key, value)
            spans += found
            if keyed:
                pairs[key] = value
        fit = Fit(
            product_id=candidate.product_id,
            residual=_residual(text, spans, title_tokens),
            matched_pairs=pairs,
            head_coverage=coverage,
            head_in_order=_in_order(head, candidate.title),
            price_ok=price_ok,
            services_ok=services_ok,
            option=name,
        )
        if best is None or (len(fit.residual), -len(fit.matched_pairs)) < (
            len(best.residual),
            -len(best.matched_pairs),
        ):
            best = fit
    assert best is not None
    return best
