"""Rule-based query understanding for the reference agents: no model, only the wordings tasks use.

A query is cut into the voucher paragraph (upstream's wording, numbers in backticks), the items the
user wants (numbered, ordinal, bulleted or joined lists for shop/voucher tasks; one item otherwise),
and per item its price bounds, service flags and the descriptive text that is left. The descriptive
text is not split into attribute pairs here: which words are keys and which are values is only known
once candidates are seen, so `matching.py` reads it against each candidate's own vocabulary.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from shoparena.problems.models import Field, Voucher

# -- vocabularies -----------------------------------------------------------------------------------
ARTICLES = ("a", "an", "some", "the")
_NUMBER = r"(\d+(?:,\d{3})*(?:\.\d+)?)"
_CURRENCY = r"(?:\s*(?:pesos?|php|₱))?"

# Longest first: a template phrase is removed whole so its words never reach the search query.
SERVICE_PATTERNS: tuple[tuple[str, str], ...] = (
    ("freeShipping", r"that ships for free \(free shipping\)"),
    ("freeShipping", r"(?:with |offers? |offering |and |plus )?free shipping(?: included)?"),
    ("freeShipping", r"ships? for free"),
    ("COD", r"that offers cash on delivery \(cod\)"),
    ("COD", r"(?:available (?:for|with) |with |offers? |and |plus )?cash[- ]on[- ]delivery(?: \(cod\))?"),
    ("COD", r"(?:with |and )?\bcod\b(?: available)?"),
    ("official", r"from an official store \(lazmall\)"),
    ("official", r"sold by an official lazmall store"),
    ("official", r"from an official store on lazmall"),
    (
        "official",
        r"(?:from |sold by |available (?:through|on|via) )?(?:an? )?(?:official (?:lazmall )?store|lazmall)",
    ),
    ("flashsale", r"that is on flash sale right now"),
    ("flashsale", r"currently on flash sale \(lazflash\)"),
    ("flashsale", r"(?:on |with |in )?(?:a )?flash[- ]?sale(?: deal)?"),
    ("flashsale", r"(?:with |on |via )?(?:a )?lazflash(?: deal| sale)?"),
)
_SERVICE_RES = [(flag, re.compile(rf"(?<![\w]){pattern}(?![\w])")) for flag, pattern in SERVICE_PATTERNS]

_LEAD = r"(?:(?:and |with |at |a |for |that |which )?(?:is |are |be )?(?:priced |price[sd]? |costing |costs? |a price |for |of |at )?)"
PRICE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "between",
        re.compile(rf"{_LEAD}(?:between|from) {_NUMBER}{_CURRENCY} (?:and|to|-) {_NUMBER}{_CURRENCY}"),
    ),
    ("between", re.compile(rf"{_LEAD}{_NUMBER}{_CURRENCY} (?:to|-) {_NUMBER}{_CURRENCY}(?=\W|$)")),
    (
        "greater than",
        re.compile(
            rf"{_LEAD}(?:above|over|more than|higher than|larger than|greater than|at least|exceeding|"
            rf"starting (?:at|from)) {_NUMBER}{_CURRENCY}"
        ),
    ),
    (
        "less than",
        re.compile(
            rf"{_LEAD}(?:under|below|less than|lower than|cheaper than|at most|no more than|within|"
            rf"up to) {_NUMBER}{_CURRENCY}"
        ),
    ),
)

# Template wrappers around the item list (generator families and upstream's usual openings).
_OPENINGS = re.compile(
    r"^(?:please |hi,? |hello,? )?(?:"
    r"find a shop that offers these items:|looking for a shop that offers these items:|"
    r"i want to buy everything from one store:|which single seller carries all of the following\??|"
    r"find shops offering|i'm looking for some products:|please help me find the following items:|"
    r"i need the following:|show me these items\.?|i want to buy|show me|i'm looking for|i am looking for|"
    r"looking for|can you help me find|help me find|i need|find|search for|i want)\s*",
    re.IGNORECASE,
)
_CLOSINGS = re.compile(
    r"(?:[.?!]?\s*(?:the shop should sell all these products|please show shops that sell all of them|"
    r"which shop has all of them\??|all from the same shop|please show me these products|"
    r"what are my options\??|for me, please|please)[.?!]?\s*)+$",
    re.IGNORECASE,
)
_ORDINALS = re.compile(r"(?:^|\s)(?:first|second|third|fourth|fifth|lastly|finally),\s+", re.IGNORECASE)
_NUMBERED = re.compile(r";?\s*\(\d+\)\s*")
_VOUCHER_START = re.compile(r"my budget is only", re.IGNORECASE)
_ITEM_SPLIT = re.compile(r"(?:,\s+|\s+and\s+)(?=(?:a|an|some|the)\s)", re.IGNORECASE)
_TOKEN = re.compile(r"[a-z0-9][a-z0-9+.\-:/]*[a-z0-9+]|[a-z0-9]")

STRUCTURE_WORDS = frozenset(
    [
        "a",
        "an",
        "some",
        "the",
        "and",
        "or",
        "with",
        "whose",
        "is",
        "are",
        "in",
        "of",
        "by",
        "from",
        "for",
        "to",
        "on",
        "at",
        "its",
        "option",
        "options",
        "variant",
        "variants",
        "brand",
        "that",
        "which",
        "this",
        "these",
        "those",
        "who",
        "me",
        "my",
        "i",
        "please",
        "show",
        "find",
        "looking",
        "need",
        "want",
        "buy",
        "also",
        "plus",
        "any",
        "one",
        "all",
        "item",
        "items",
        "product",
        "products",
        "size-wise",
        "type",
    ]
)
"""Words of the templates' grammar: never search terms, never constraints (see `matching.residual`)."""


class PriceBound(BaseModel):
    mode: str
    low: float | None = None
    high: float | None = None

    def filter_text(self) -> str:
        """The find_product `price` argument for these bounds (inclusive, as the scorer reads them)."""
        low = plain_number(self.low or 0)
        return f"{low}-{plain_number(self.high)}" if self.high is not None else f"{low}-"

    def admits(self, price: float) -> bool:
        if self.low is not None and price < self.low:
            return False
        return not (self.high is not None and price > self.high)

    def describe(self) -> str:
        if self.mode == "between":
            return f"between {plain_number(self.low)} and {plain_number(self.high)}"
        if self.mode == "greater than":
            return f"at least {plain_number(self.low)}"
        return f"at most {plain_number(self.high)}"


class ItemRequest(BaseModel):
    """One product the user wants, as far as the words say."""

    position: int
    text: str
    """The item's words as the user wrote them (article dropped)."""
    description: str
    """`text` without the price and service phrases: the head noun phrase plus attribute/SKU clauses."""
    head: str
    """The leading noun phrase (the product itself), cut before the first clause."""
    price: PriceBound | None = None
    services: list[str] = Field(default_factory=list)

    @property
    def service_filter(self) -> str | None:
        return ",".join(self.services) or None

    def head_tokens(self) -> list[str]:
        return content_tokens(self.head)

    def search_text(self, limit: int = 14) -> str:
        """Every content word of the description, head first: BM25 is an OR over title and values."""
        words = list(dict.fromkeys(self.head_tokens() + content_tokens(self.description)))
        return " ".join(words[:limit]) or self.head or self.text


class VoucherTerms(BaseModel):
    voucher_type: str
    discount_type: str
    threshold: float
    budget: float
    face_value: float | None = None
    discount: float | None = None
    """A fraction (0.27 for 27%)."""
    cap: float | None = None

    def total_after(self, total: float, single_shop: bool) -> float:
        """The voucher arithmetic of the task format itself (terms read from text are not validated)."""
        return Voucher.model_construct(**self.model_dump()).discounted_total(total, single_shop)

    def fits(self, total: float, single_shop: bool) -> bool:
        """The scorer's budget rule: within budget as is, or after the voucher."""
        return total <= self.budget + 1e-9 or self.total_after(total, single_shop) <= self.budget + 1e-9

    def describe(self) -> str:
        if self.discount_type == "fixed":
            off = f"{plain_number(self.face_value)} off"
        else:
            off = f"{round((self.discount or 0) * 100)}% off capped at {plain_number(self.cap)}"
        return (
            f"{self.voucher_type} voucher, {off} from a total of {plain_number(self.threshold)}, "
            f"budget {plain_number(self.budget)}"
        )


class QueryPlan(BaseModel):
    """What the reference agents understood of one query."""

    bucket: str
    items: list[ItemRequest]
    voucher: VoucherTerms | None = None
    list_style: str = "single"

    def summary(self) -> str:
        parts = []
        for item in self.items:
            bits = [f'"{item.head or item.description}"']
            if item.price:
                bits.append(f"price {item.price.describe()}")
            if item.services:
                bits.append("services " + "+".join(item.services))
            parts.append(f"item {item.position + 1}: " + ", ".join(bits))
        if self.voucher:
            parts.append(self.voucher.describe())
        return "; ".join(parts)


# -- helpers ------------------------------------------------------------------------------------------
def plain_number(value: float | None) -> str:
    """A number as a person writes it in a sentence or a filter: 1200, not 1200.0; 12.5 stays."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def normalise(text: str) -> str:
    return " ".join(text.lower().replace("’", "'").split())


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(normalise(text))


def content_tokens(text: str) -> list[str]:
    """Tokens that can carry meaning (grammar words and bare punctuation dropped), order kept."""
    return [t.rstrip(":") for t in tokens(text) if t.rstrip(":") and t.rstrip(":") not in STRUCTURE_WORDS]


def _drop_article(text: str) -> str:
    words = text.split(" ", 1)
    if len(words) == 2 and words[0].lower() in ARTICLES:
        return words[1]
    return text


# -- voucher ------------------------------------------------------------------------------------------
def parse_voucher_text(text: str) -> VoucherTerms | None:
    """The upstream voucher paragraph (backticked numbers) → terms; None when there is none."""
    lowered = text.lower()
    budget = re.search(r"budget is only\s*`?\s*" + _NUMBER, lowered)
    threshold = re.search(r"exceeds?\s*`?\s*" + _NUMBER, lowered)
    if not budget or not threshold:
        return None
    voucher_type = "shop" if "same shop" in lowered else "platform"
    fixed = re.search(r"fixed discount of\s*`?\s*" + _NUMBER, lowered)
    if fixed:
        return VoucherTerms(
            voucher_type=voucher_type,
            discount_type="fixed",
            threshold=_num(threshold.group(1)),
            budget=_num(budget.group(1)),
            face_value=_num(fixed.group(1)),
        )
    percent = re.search(r"percentage discount of\s*`?\s*" + _NUMBER + r"\s*%", lowered)
    cap = re.search(r"cap of\s*`?\s*" + _NUMBER, lowered)
    if not percent:
        return None
    return VoucherTerms(
        voucher_type=voucher_type,
        discount_type="percentage",
        threshold=_num(threshold.group(1)),
        budget=_num(budget.group(1)),
        discount=_num(percent.group(1)) / 100,
        cap=_num(cap.group(1)) if cap else None,
    )


def voucher_from_view(data: dict[str, Any] | None) -> VoucherTerms | None:
    """The ProblemView voucher dict (upstream keys) → terms; it wins over the text when both exist."""
    if not data:
        return None
    try:
        return VoucherTerms(
            voucher_type=str(data["voucher_type"]),
            discount_type=str(data["discount_type"]),
            threshold=float(data.get("threshold") or 0),
            budget=float(data.get("budget") or 0),
            face_value=None if data.get("face_value") is None else float(data["face_value"]),
            discount=None if data.get("discount") is None else float(data["discount"]),
            cap=None if data.get("cap") is None else float(data["cap"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


# -- items ------------------------------------------------------------------------------------------
def split_items(head: str) -> tuple[list[str], str]:
    """The item phrases of a request (1 for a single product) and the list style that was recognised."""
    text = head.strip()
    if re.search(r"\(1\)", text):
        body = text[text.index("(1)") :]
        parts = [p.strip() for p in _NUMBERED.split(body) if p.strip()]
        return [_CLOSINGS.sub("", p).strip(" .;") for p in parts], "numbered"
    bullets = [line[2:].strip() for line in text.splitlines() if line.strip().startswith(("- ", "* ", "• "))]
    if len(bullets) >= 2:
        return [b.strip(" .;") for b in bullets], "bulleted"
    if len(_ORDINALS.findall(text)) >= 2:
        parts = _ORDINALS.split(text)[1:]
        return [_CLOSINGS.sub("", p).strip(" .;") for p in parts if p.strip()], "ordinal"
    body = " ".join(text.split())
    for _ in range(2):
        body = _OPENINGS.sub("", body).strip()
        body = _CLOSINGS.sub("", body).strip(" .,;?!")
    parts = [p.strip(" .,;") for p in _ITEM_SPLIT.split(body) if p.strip(" .,;")]
    return (parts or [body]), ("joined" if len(parts) > 1 else "single")


def _remove_spans(text: str, spans: list[tuple[int, int]]) -> str:
    out, last = [], 0
    for start, end in sorted(spans):
        if start < last:
            continue
        out.append(text[last:start])
        out.append(" ")
        last = end
    out.append(text[last:])
    return " ".join("".join(out).split())


def parse_price(text: str) -> tuple[PriceBound | None, list[tuple[int, int]]]:
    for mode, pattern in PRICE_PATTERNS:
        match = pattern.search(text)
        if not match:
            continue
        numbers = [_num(g) for g in match.groups() if g is not None]
        if mode == "between" and len(numbers) == 2:
            low, high = sorted(numbers)
            return PriceBound(mode=mode, low=low, high=high), [match.span()]
        if mode == "greater than":
            return PriceBound(mode=mode, low=numbers[0]), [match.span()]
        if mode == "less than":
            return PriceBound(mode=mode, low=0, high=numbers[0]), [match.span()]
    return None, []


def parse_services(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    flags: list[str] = []
    spans: list[tuple[int, int]] = []
    for flag, pattern in _SERVICE_RES:
        for match in pattern.finditer(text):
            if any(s < match.end() and match.start() < e for s, e in spans):
                continue
            spans.append(match.span())
            if flag not in flags:
                flags.append(flag)
    order = ("official", "freeShipping", "COD", "flashsale")
    return sorted(flags, key=order.index), spans


_SKU_WRAPPERS = re.compile(r"\b(in the [^;]+?) variant(?![\w:])|\b(with the [^;]+?) option(?![\w:])")
"""The SKU clause templates' closing word ("in the size: m variant", "with the red color option")."""

_CLAUSE_START = re.compile(
    r"\s(?:in|with|whose|from|by|of the brand|that|available|sold|on|currently|priced|costing|"
    r"made of|featuring)\s|\s(?:[a-z]+ ){0,2}[a-z]+:\s|,|;|\s/\s",
)


def parse_item(position: int, raw: str) -> ItemRequest:
    text = _drop_article(normalise(raw).strip(" .,;"))
    price, price_spans = parse_price(text)
    services, service_spans = parse_services(text)
    description = _remove_spans(text, price_spans + service_spans).strip(" ,.;")
    description = re.sub(r"(?:,|\band)\s*$", "", description).strip(" ,")
    description = _SKU_WRAPPERS.sub(lambda m: m.group(1) or m.group(2), description)
    cut = _CLAUSE_START.search(" " + description + " ")
    head = description[: max(cut.start() - 1, 0)].strip() if cut else description
    if not head:
        head = description
    return ItemRequest(
        position=position, text=text, description=description, head=head, price=price, services=services
    )


def parse_query(query: str, bucket: str = "product", voucher: dict[str, Any] | None = None) -> QueryPlan:
    """Understand a query; `bucket` and `voucher` come from the ProblemView when known."""
    match = _VOUCHER_START.search(query)
    request_text = query[: match.start()] if match else query
    terms = voucher_from_view(voucher) or (parse_voucher_text(query[match.start() :]) if match else None)
    if bucket == "product" or bucket == "web":
        phrases, style = split_items(request_text)
        phrases = [" ".join(phrases)] if len(phrases) > 1 and style == "joined" else phrases[:1]
        if style != "single":
            style = "single"
    else:
        phrases, style = split_items(request_text)
    phrases = [p for p in phrases if p.strip()] or [request_text.strip()]
    items = [parse_item(i, phrase) for i, phrase in enumerate(phrases[:10])]
    return QueryPlan(bucket=bucket, items=items, voucher=terms, list_style=style)
