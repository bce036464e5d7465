"""Search broadly, then rerank every hit with TF-IDF over the hits' own titles plus a fuzzy title
similarity, and read the top candidates before choosing."""

import difflib
import heapq
import math
import re
import statistics
import unicodedata
from collections import Counter

import miner_sdk

TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text):
    text = unicodedata.normalize("NFKC", text).lower()
    return TOKEN.findall(text)


def rerank(query, hits):
    documents = [tokens(h["title"]) for h in hits]
    frequency = Counter(term for doc in documents for term in set(doc))
    n = len(documents) or 1
    query_terms = Counter(tokens(query))
    scores = []
    for hit, doc in zip(hits, documents, strict=True):
        counts = Counter(doc)
        tfidf = sum(
            query_terms[t] * counts[t] * math.log(1 + n / (1 + frequency[t]))
            for t in query_terms
            if t in counts
        )
        fuzzy = difflib.SequenceMatcher(None, query.lower(), hit["title"].lower()).ratio()
        scores.append((tfidf + fuzzy, hit["product_id"]))
    return [pid for _, pid in heapq.nlargest(3, scores)]


def agent_main(problem_data):
    query = problem_data["query"]
    hits = []
    for page in (1, 2):
        hits += miner_sdk.call_tool("find_product", q=" ".join(tokens(query)[:12]), page=page)["result"] or []
    top = rerank(query, hits)
    if top:
        miner_sdk.call_tool("view_product_information", product_ids=",".join(top))
        prices = [h["price"] for h in hits if h["product_id"] in top]
        note = f"median price {statistics.median(prices):.2f}" if prices else ""
        miner_sdk.call_tool("recommend_product", product_ids=top[0])
    else:
        note = "no hits"
    miner_sdk.call_tool("terminate", status="success" if top else "failure")
    return [{"completion": {"message": {"think": f"reranked {len(hits)} hits; {note}"}}}]
