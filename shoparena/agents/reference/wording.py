"""The wordings tasks use, as rules over plain text: the reference agents' query understanding without
its typed records, in the standard library only.

Why apart from `query`: the season's reference miner (`season/miners/reference_agentic.py`) is a
miner file, which may import only the standard library and `miner_sdk`; its query parsing is this
module's source, rendered into the file it submits (`season.variants`), so the reference agents and
the miner read a query by one set of rules. Keep it to `re` and built-ins.
"""

import re

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
"""Words of the templates' grammar: never search terms, never constraints (see `matching.residual`)."""


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
def voucher_numbers(text: str) -> dict | None:
    """The upstream voucher paragraph (backticked numbers) → its terms as a dict; None when there is none."""
    lowered = text.lower()
    budget = re.search(r"budget is only\s*`?\s*" + _NUMBER, lowered)
    threshold = re.search(r"exceeds?\s*`?\s*" + _NUMBER, lowered)
    if not budget or not threshold:
        return None
    terms = {
        "voucher_type": "shop" if "same shop" in lowered else "platform",
        "threshold": _num(threshold.group(1)),
        "budget": _num(budget.group(1)),
    }
    fixed = re.search(r"fixed discount of\s*`?\s*" + _NUMBER, lowered)
    if fixed:
        return {**terms, "discount_type": "fixed", "face_value": _num(fixed.group(1))}
    percent = re.search(r"percentage discount of\s*`?\s*" + _NUMBER + r"\s*%", lowered)
    cap = re.search(r"cap of\s*`?\s*" + _NUMBER, lowered)
    if not percent:
        return None
    return {
        **terms,
        "discount_type": "percentage",
        "discount": _num(percent.group(1)) / 100,
        "cap": _num(cap.group(1)) if cap else None,
    }


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


def price_phrase(text: str) -> tuple[str, float | None, float | None, tuple[int, int]] | None:
    """The first price phrase of `text`: (mode, low, high, its span); None when it has none."""
    for mode, pattern in PRICE_PATTERNS:
        match = pattern.search(text)
        if not match:
            continue
        numbers = [_num(g) for g in match.groups() if g is not None]
        if mode == "between" and len(numbers) == 2:
            low, high = sorted(numbers)
            return mode, low, high, match.span()
        if mode == "greater than":
            return mode, numbers[0], None, match.span()
        if mode == "less than":
            return mode, 0, numbers[0], match.span()
    return None


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


def item_fields(raw: str) -> dict:
    """One item phrase → its `text` (article dropped), `description` (without price and service
    phrases), `head` (the leading noun phrase), `price` ((mode, low, high) or None) and `services`."""
    text = _drop_article(normalise(raw).strip(" .,;"))
    price = price_phrase(text)
    services, service_spans = parse_services(text)
    description = _remove_spans(text, ([price[3]] if price else []) + service_spans).strip(" ,.;")
    description = re.sub(r"(?:,|\band)\s*$", "", description).strip(" ,")
    description = _SKU_WRAPPERS.sub(lambda m: m.group(1) or m.group(2), description)
    cut = _CLAUSE_START.search(" " + description + " ")
    head = description[: max(cut.start() - 1, 0)].strip() if cut else description
    return {
        "text": text,
        "description": description,
        "head": head or description,
        "price": price[:3] if price else None,
        "services": services,
    }


def request_phrases(query: str, bucket: str) -> tuple[list[str], str, str | None]:
    """(the item phrases, ≤ 10; the list style; the voucher paragraph or None) of a query: one item
    for product and web tasks, a list for shop and voucher tasks."""
    match = _VOUCHER_START.search(query)
    request_text = query[: match.start()] if match else query
    phrases, style = split_items(request_text)
    if bucket == "product" or bucket == "web":
        phrases = [" ".join(phrases)] if len(phrases) > 1 and style == "joined" else phrases[:1]
        style = "single"
    phrases = [p for p in phrases if p.strip()] or [request_text.strip()]
    return phrases[:10], style, query[match.start() :] if match else None
