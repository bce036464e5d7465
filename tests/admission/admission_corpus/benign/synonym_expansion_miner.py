"""Query rewriting with a synonym table, unit normalisation and a price sanity filter."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

import miner_sdk

SYNONYMS: dict[str, list[str]] = {
    "earbuds": ["earphones", "headphones", "tws"],
    "earphones": ["earbuds", "headset"],
    "phone": ["smartphone", "mobile"],
    "case": ["cover", "casing"],
    "charger": ["adapter", "power adapter"],
    "laptop": ["notebook"],
    "sofa": ["couch"],
    "trousers": ["pants"],
    "sneakers": ["shoes", "trainers", "rubber shoes"],
    "tshirt": ["t-shirt", "tee", "shirt"],
    "bag": ["backpack", "sling bag", "tote"],
    "cymbal": ["cymbals", "crash"],
    "crayons": ["oil pastels", "craypas"],
    "wheel": ["caster", "tire"],
    "bottle": ["tumbler", "flask"],
    "lamp": ["light", "led light"],
    "mat": ["pad", "rug"],
    "knife": ["blade", "cutter"],
    "mug": ["cup"],
    "watch": ["smartwatch", "wristwatch"],
    "cream": ["moisturizer", "lotion"],
    "serum": ["essence", "ampoule"],
    "toner": ["essence water"],
    "shampoo": ["hair wash"],
    "diaper": ["nappy"],
    "bike": ["bicycle"],
    "helmet": ["headgear"],
    "drill": ["driver", "impact drill"],
}
UNITS = {
    "millilitre": "ml",
    "milliliter": "ml",
    "litre": "l",
    "liter": "l",
    "gram": "g",
    "kilogram": "kg",
    "inch": "in",
}
MAX_REASONABLE_PRICE = 1_000_000.0
PESOS_PER_USD = 56.1
TRANSLATE = str.maketrans({c: " " for c in string.punctuation if c not in "-."})


def normalise(text: str) -> list[str]:
    words = text.lower().translate(TRANSLATE).split()
    return [UNITS.get(w.rstrip("s"), w) for w in words]


def expansions(words: Iterable[str]) -> list[str]:
    words = list(words)
    queries = [" ".join(words[:10])]
    for position, word in enumerate(words):
        for other in SYNONYMS.get(word, [])[:2]:
            queries.append(" ".join(words[:position] + [other] + words[position + 1 :])[:120])
    return list(dict.fromkeys(queries))[:4]


def agent_main(problem_data):
    words = [w for w in normalise(problem_data["query"]) if len(w) > 2 or re.fullmatch(r"\d+\w*", w)]
    ranked = {}
    for rank, query in enumerate(expansions(words)):
        for position, hit in enumerate(miner_sdk.call_tool("find_product", q=query)["result"] or []):
            if 0 < hit["price"] < MAX_REASONABLE_PRICE:
                overlap = len(set(normalise(hit["title"])) & set(words))
                ranked.setdefault(hit["product_id"], (-overlap, rank, position))
    best = min(ranked, key=ranked.get) if ranked else None
    if best:
        miner_sdk.call_tool("recommend_product", product_ids=best)
    miner_sdk.call_tool("terminate", status="success" if best else "failure")
    return [{"completion": {"message": {"think": f"{len(ranked)} candidates; chose {best}"}}}]
