"""Run several query variants at once in threads (the tool server handles concurrent calls), then
pick the listing that appears most often near the top."""

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote_plus, unquote_plus

import miner_sdk

WORKERS = 4


def variants(query):
    words = [w.strip(".,;:!?").lower() for w in query.split() if len(w) > 2]
    return [" ".join(words[:n]) for n in (10, 6, 4, 3) if words[:n]]


def search(q):
    # quote/unquote round trip: the same normalisation the query string of a web search would get
    q = unquote_plus(quote_plus(q))
    return miner_sdk.call_tool("find_product", q=q)["result"] or []


def agent_main(problem_data):
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        pages = list(pool.map(search, variants(problem_data["query"])))
    votes = Counter()
    for page in pages:
        for rank, hit in enumerate(page[:5]):
            votes[hit["product_id"]] += 5 - rank
    best = votes.most_common(1)[0][0] if votes else None
    if best:
        miner_sdk.call_tool("recommend_product", product_ids=best)
    miner_sdk.call_tool("terminate", status="success" if best else "failure")
    return [{"completion": {"message": {"think": f"votes: {dict(votes.most_common(3))}"}}}]
