"""A shop-task agent: find one seller that lists every requested item, by intersecting the shops of
each item's search hits and then searching inside the most promising shops."""

from collections import Counter, defaultdict

import miner_sdk

SHOPS_TO_PROBE = 3


def requested_items(query):
    if "(1)" in query:
        body = query[query.index("(1)") :]
        pieces = [p.split(")", 1)[-1] for p in body.split("(")[1:]]
        return [p.strip(" ;.") for p in pieces if p.strip(" ;.")]
    return [query]


def keywords(text, limit=8):
    words = [w.strip(".,;:()").lower() for w in text.split()]
    return " ".join([w for w in words if len(w) > 2 and w.isalnum()][:limit])


def agent_main(problem_data):
    items = requested_items(problem_data["query"])
    by_shop = defaultdict(dict)
    seen = Counter()
    for index, item in enumerate(items):
        hits = miner_sdk.call_tool("find_product", q=keywords(item))["result"] or []
        for hit in hits:
            by_shop[hit["shop_id"]].setdefault(index, hit["product_id"])
        seen.update({hit["shop_id"] for hit in hits})
    for shop, _ in seen.most_common(SHOPS_TO_PROBE):
        for index, item in enumerate(items):
            if index in by_shop[shop]:
                continue
            inside = miner_sdk.call_tool("find_product", q=keywords(item, 4), shop_id=shop)["result"] or []
            if inside:
                by_shop[shop][index] = inside[0]["product_id"]
    complete = [shop for shop, found in by_shop.items() if len(found) == len(items)]
    shop = complete[0] if complete else (seen.most_common(1)[0][0] if seen else None)
    chosen = [by_shop[shop][i] for i in range(len(items)) if shop and i in by_shop[shop]]
    if chosen:
        miner_sdk.call_tool("recommend_product", product_ids=",".join(chosen))
    miner_sdk.call_tool("terminate", status="success" if chosen else "failure")
    return [{"completion": {"message": {"think": f"shop {shop}: {chosen}"}}}]
