"""Natural-language queries rendered from a task's constraints, in the style of ShoppingBench's files.

Every constraint a reward spec encodes is mentioned in the text: a phrase taken from the gold title,
the SKU option's values, every attribute value, every service in words and the price bounds. What
varies is the surface: a family of paraphrases per bucket, the order attributes are listed in and
the wording of each clause. The voucher block is the upstream wording, verbatim, because agents are
trained on it and scorers/parsers key on the backticked numbers.
"""

from __future__ import annotations

import random
import re

from shoparena.catalog.vocabulary import MARKETING_WORDS
from shoparena.problems.models import RewardSpec, Voucher

SERVICE_PHRASES: dict[str, tuple[str, ...]] = {
    "freeShipping": (
        "with free shipping",
        "that ships for free (free shipping)",
        "with free shipping included",
    ),
    "COD": ("with cash on delivery", "available for cash on delivery", "that offers cash on delivery (COD)"),
    "official": (
        "from an official store (LazMall)",
        "sold by an official LazMall store",
        "from an official store on LazMall",
    ),
    "flashsale": ("on flash sale", "that is on flash sale right now", "currently on flash sale (LazFlash)"),
}

PRICE_PHRASES: dict[str, tuple[str, ...]] = {
    "greater than": ("priced above {lo} pesos", "costing more than {lo} PHP", "over {lo} pesos"),
    "between": ("between {lo} and {hi} pesos", "priced from {lo} to {hi} PHP", "costing {lo} to {hi} pesos"),
    "less than": ("under {hi} pesos", "priced below {hi} PHP", "costing less than {hi} pesos"),
}

# Marketing filler that says nothing about what the product is; never used as the title phrase.
_FILLER = MARKETING_WORDS
_STOPWORDS = frozenset(
    ["a", "an", "and", "the", "in", "for", "of", "with", "to", "by", "on", "or", "from", "at"]
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")


def number(value: float | int | None) -> str:
    """Upstream prints bounds and voucher figures as plain integers where they are whole."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def title_phrase(title: str, rng: random.Random) -> str:
    """A short, lower-cased run of meaningful words from the gold title (the 'what' of the query).

    Runs that start or end on a function word ("in", "for", …) read badly and are avoided.
    """
    words = [w for w in title.split() if _WORD.fullmatch(w) and w.lower() not in _FILLER]
    if not words:
        return " ".join(title.split()[:4]).lower() or title.lower()
    length = min(len(words), rng.randint(2, 4))
    windows = [
        words[start : start + size]
        for size in range(length, 0, -1)
        for start in range(len(words) - size + 1)
        if words[start].lower() not in _STOPWORDS and words[start + size - 1].lower() not in _STOPWORDS
    ]
    if not windows:
        return " ".join(words[:length]).lower()
    longest = [w for w in windows if len(w) == len(windows[0])]
    return " ".join(rng.choice(longest)).lower()


def with_article(phrase: str, rng: random.Random) -> str:
    article = rng.choice(("a", "a", "some", "the"))
    if article == "a" and phrase[:1].lower() in "aeiou":
        article = "an"
    return f"{article} {phrase}"


def _key_words(key: str) -> str:
    return key.replace("_", " ").strip().lower()


def sku_clause(option: dict[str, str], rng: random.Random) -> str:
    parts = [(_key_words(k), v) for k, v in option.items()]
    style = rng.randrange(3)
    if style == 0:
        return "in " + " and ".join(f"{k} {v}" for k, v in parts)
    if style == 1:
        return "with the " + " / ".join(f"{v} {k}" for k, v in parts) + " option"
    return "in the " + ", ".join(f"{k}: {v}" for k, v in parts) + " variant"


def attribute_clause(key: str, value: str, rng: random.Random) -> str:
    words = _key_words(key)
    if words == "brand":
        return rng.choice((f"from the {value} brand", f"by {value}", f"of the brand {value}"))
    return rng.choice((f"with {words} {value}", f"whose {words} is {value}", f"{words}: {value}"))


def price_clause(spec: RewardSpec, rng: random.Random) -> str | None:
    if not spec.price:
        return None
    ((mode, (lo, hi)),) = spec.price[0].items()
    return rng.choice(PRICE_PHRASES[mode]).format(lo=number(lo), hi=number(hi))


def _join(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def describe_item(spec: RewardSpec, rng: random.Random) -> str:
    """A noun phrase for one gold item carrying every constraint of its spec, attributes in random order."""
    head = title_phrase(spec.title[0], rng)
    clauses: list[str] = []
    if spec.sku_options:
        clauses.append(sku_clause(spec.sku_options[0], rng))
    attributes = [(k, vals[0]) for entry in spec.attributes or [] for k, vals in entry.items()]
    rng.shuffle(attributes)
    clauses.extend(attribute_clause(k, v, rng) for k, v in attributes)
    clauses.extend(rng.choice(SERVICE_PHRASES[flag]) for flag in spec.service or [])
    price = price_clause(spec, rng)
    if price:
        clauses.append(price)
    if not clauses:
        return with_article(head, rng)
    return with_article(head, rng) + " " + _join(clauses)


PRODUCT_FAMILIES: tuple[str, ...] = (
    "Show me {item}.",
    "I'm looking for {item}.",
    "Looking for {item}.",
    "Can you help me find {item}?",
    "I need {item}. What are my options?",
    "Find {item} for me, please.",
)


def _numbered(items: list[str]) -> str:
    return "; ".join(f"({i}) {text}" for i, text in enumerate(items, start=1))


def _ordinal_list(items: list[str]) -> str:
    words = ["First", "Second", "Third", "Fourth"]
    parts = [f"{words[i]}, {text}." for i, text in enumerate(items[:-1])]
    return " ".join([*parts, f"Lastly, {items[-1]}."])


def _bulleted(items: list[str]) -> str:
    return "\n".join(f"- {text}" for text in items)


SHOP_FAMILIES: tuple[str, ...] = (
    "Find a shop that offers these items: {numbered}. The shop should sell all these products.",
    "Looking for a shop that offers these items: {ordinal} Please show shops that sell all of them.",
    "I want to buy everything from one store: {joined}. Which shop has all of them?",
    "Which single seller carries all of the following?\n{bulleted}",
    "Find shops offering {joined}, all from the same shop.",
)

MULTI_ITEM_FAMILIES: tuple[str, ...] = (
    "I'm looking for some products: {joined}. Please show me these products.",
    "Please help me find the following items: {numbered}.",
    "I want to buy {joined}.",
    "Show me these items. {ordinal}",
    "I need the following:\n{bulleted}",
)


def _fill(template: str, items: list[str]) -> str:
    return template.format(
        numbered=_numbered(items),
        ordinal=_ordinal_list(items),
        joined=_join(items),
        bulleted=_bulleted(items),
    )


def render_product_query(spec: RewardSpec, rng: random.Random, family: int | None = None) -> str:
    template = PRODUCT_FAMILIES[rng.randrange(len(PRODUCT_FAMILIES)) if family is None else family]
    return template.format(item=describe_item(spec, rng))


def render_shop_query(specs: list[RewardSpec], rng: random.Random, family: int | None = None) -> str:
    template = SHOP_FAMILIES[rng.randrange(len(SHOP_FAMILIES)) if family is None else family]
    return _fill(template, [describe_item(spec, rng) for spec in specs])


def voucher_rules(voucher: Voucher) -> str:
    """The upstream voucher paragraph, word for word."""
    scope = (
        "The voucher applies to all products."
        if voucher.voucher_type == "platform"
        else "The voucher only applies to the products from the same shop."
    )
    if voucher.discount_type == "fixed":
        discount = f"It provides a fixed discount of `{number(voucher.face_value)}`."
    else:
        percent = round((voucher.discount or 0.0) * 100)
        discount = f"It provides a percentage discount of `{percent}%` with a cap of `{number(voucher.cap)}`."
    return (
        f"My budget is only `{number(voucher.budget)}`, but I have a voucher with the following rules:\n"
        f"1. {scope}\n"
        f"2. It is valid only when the total price of the products exceeds `{number(voucher.threshold)}`.\n"
        f"3. {discount}"
    )


def render_voucher_query(
    specs: list[RewardSpec], voucher: Voucher, rng: random.Random, family: int | None = None
) -> str:
    if len(specs) == 1:
        head = render_product_query(specs[0], rng, None if family is None else family % len(PRODUCT_FAMILIES))
    else:
        template = MULTI_ITEM_FAMILIES[
            rng.randrange(len(MULTI_ITEM_FAMILIES)) if family is None else family % len(MULTI_ITEM_FAMILIES)
        ]
        head = _fill(template, [describe_item(spec, rng) for spec in specs])
    return f"{head}\n\n{voucher_rules(voucher)}"


def family_count(bucket: str, n_items: int = 1) -> int:
    if bucket == "shop":
        return len(SHOP_FAMILIES)
    if bucket == "voucher" and n_items > 1:
        return len(MULTI_ITEM_FAMILIES)
    return len(PRODUCT_FAMILIES)
