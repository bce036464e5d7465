"""first_hit, improved (its miner resubmits this later in a season): drop filler words, search with
the stated price bound as a filter, read the top five hits and recommend the one whose title and
attributes cover most of the request's words."""

import re

import miner_sdk

FILLER = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "with",
        "for",
        "of",
        "in",
        "on",
        "to",
        "by",
        "from",
        "that",
        "is",
        "are",
        "i",
        "me",
        "my",
        "please",
        "find",
        "show",
        "looking",
        "need",
        "want",
        "buy",
        "price",
        "priced",
        "pesos",
        "php",
        "product",
        "item",
        "items",
        "some",
    ]
)
PRICE = re.compile(r"(under|below|less than|at most|above|over|more than|at least)\s+(\d[\d,]*)")


def keywords(text):
    return [w for w in re.findall(r"[a-z0-9][a-z0-9\-]*", text.lower()) if w not in FILLER]


def price_filter(text):
    found = PRICE.search(text.lower())
    if not found:
        return None
    value = int(found.group(2).replace(",", ""))
    return f"0-{value}" if found.group(1) in ("under", "below", "less than", "at most") else f"{value}-"


def coverage(words, hit, info):
    text = " ".join(
        [hit["title"], *[v for vs in (info.get("attributes") or {}).values() for v in vs]]
    ).lower()
    return sum(1 for w in words if w in text)


def agent_main(problem_data):
    words = keywords(problem_data["query"])
    arguments = {"q": " ".join(words[:10]) or problem_data["query"][:80]}
    bound = price_filter(problem_data["query"])
    if bound:
        arguments["price"] = bound
    hits = miner_sdk.call_tool("find_product", **arguments).get("result") or []
    if not hits and bound:
        arguments.pop("price")
        hits = miner_sdk.call_tool("find_product", **arguments).get("result") or []
    if not hits:
        miner_sdk.call_tool("terminate", status="failure")
        return [{"completion": {"message": {"think": "nothing found"}}}]
    top = hits[:5]
    ids = ",".join(str(h["product_id"]) for h in top)
    infos = {
        str(i["product_id"]): i
        for i in miner_sdk.call_tool("view_product_information", product_ids=ids).get("result") or []
    }
    best = max(top, key=lambda h: (coverage(words, h, infos.get(str(h["product_id"]), {})), -top.index(h)))
    miner_sdk.call_tool("recommend_product", product_ids=str(best["product_id"]))
    miner_sdk.call_tool("terminate", status="success")
    return [
        {
            "completion": {
                "message": {"think": f"read {len(top)} hits; {best['product_id']} covers the most words"}
            }
        }
    ]
