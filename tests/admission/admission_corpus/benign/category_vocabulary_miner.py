"""Guess the product category from a vocabulary of category words, and search with the category's
typical title words added; sizes are normalised with a unit table."""

import re

import miner_sdk

CATEGORY_WORDS = {
    "Audio": ["earbuds", "headphones", "speaker", "earphones", "soundbar"],
    "Phones & Tablets": ["phone", "smartphone", "tablet", "charger", "case", "screen protector"],
    "Computers": ["laptop", "keyboard", "mouse", "monitor", "ssd", "router"],
    "Beauty": ["serum", "toner", "cream", "lipstick", "sunscreen", "cleanser", "essence"],
    "Home & Living": ["sofa", "lamp", "curtain", "pillow", "mattress", "rug", "shelf"],
    "Kitchen": ["pan", "knife", "pot", "blender", "kettle", "mug", "tumbler"],
    "Fashion": ["dress", "shirt", "pants", "shoes", "sneakers", "bag", "wallet", "jacket"],
    "Sports": ["yoga mat", "dumbbell", "bicycle", "helmet", "jersey", "ball"],
    "Toys": ["lego", "doll", "puzzle", "crayons", "plush", "toy car"],
    "Tools": ["drill", "wrench", "screwdriver", "wheel", "tape measure", "saw"],
    "Music": ["guitar", "violin", "bow", "cymbals", "drum", "ukulele"],
    "Groceries": ["coffee", "rice", "chili powder", "noodles", "oil", "sugar"],
}
SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(ml|l|g|kg|inch|inches|cm|mm)\b", re.I)
UNIT_NAMES = {
    "inches": "inch",
    "l": "l",
    "ml": "ml",
    "g": "g",
    "kg": "kg",
    "cm": "cm",
    "mm": "mm",
    "inch": "inch",
}


def category_of(query):
    lowered = query.lower()
    scores = {name: sum(word in lowered for word in words) for name, words in CATEGORY_WORDS.items()}
    best = max(scores, key=scores.get)
    return best if scores[best] else None


def agent_main(problem_data):
    query = problem_data["query"]
    sizes = [f"{value}{UNIT_NAMES[unit.lower()]}" for value, unit in SIZE.findall(query)]
    category = category_of(query)
    words = [w for w in re.findall(r"[a-z]+", query.lower()) if len(w) > 3][:8]
    q = " ".join(words + sizes)
    hits = miner_sdk.call_tool("find_product", q=q)["result"] or []
    if not hits and category:
        hits = (
            miner_sdk.call_tool("find_product", q=" ".join(CATEGORY_WORDS[category][:2] + words[:3]))[
                "result"
            ]
            or []
        )
    chosen = hits[0]["product_id"] if hits else None
    if chosen:
        miner_sdk.call_tool("recommend_product", product_ids=chosen)
    miner_sdk.call_tool("terminate", status="success" if chosen else "failure")
    return [{"completion": {"message": {"think": f"category {category}, sizes {sizes}, chose {chosen}"}}}]
