"""The reference pipeline agent (shoparena.agents.reference.agent, target "pipeline") as a miner file.

Same search-and-verify idea as the agentic reference, but run as plain code: one tool call per step,
every call recorded with origin="code", a classification note at the start and a narration before the
recommendation. Typed records (dataclasses, enums) instead of dicts, as a careful engineer would write.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import miner_sdk

PAGE_SIZE = 10
MAX_STEPS = 18
VIEW_BATCH = 6


class Bucket(Enum):
    PRODUCT = "product"
    SHOP = "shop"
    VOUCHER = "voucher"
    WEB = "web"


@dataclass
class PriceRange:
    low: float | None = None
    high: float | None = None

    def admits(self, price: float) -> bool:
        return (self.low is None or price >= self.low) and (self.high is None or price <= self.high)

    def as_filter(self) -> str | None:
        if self.low is None and self.high is None:
            return None
        low = int(self.low or 0)
        return f"{low}-{int(self.high + 0.999)}" if self.high is not None else f"{low}-"


@dataclass
class Request:
    text: str
    keywords: list[str]
    price: PriceRange = field(default_factory=PriceRange)
    services: list[str] = field(default_factory=list)


@dataclass
class Candidate:
    product_id: str
    title: str
    price: float
    shop_id: str
    services: list[str]
    rank: int
    attributes: dict[str, list[str]] = field(default_factory=dict)

    def text(self) -> str:
        values = [v for vs in self.attributes.values() for v in vs]
        return " ".join([self.title, *values]).lower()


_PRICE = re.compile(
    r"(?P<kind>between|from|above|over|more than|at least|under|below|less than|at most)\s+"
    r"(?P<a>\d[\d,]*(?:\.\d+)?)(?:\s*(?:pesos|php))?(?:\s*(?:and|to|-)\s*(?P<b>\d[\d,]*(?:\.\d+)?))?"
)
_SERVICES = {
    "free shipping": "freeShipping",
    "cash on delivery": "COD",
    "lazmall": "official",
    "official store": "official",
    "flash sale": "flashsale",
}
_FILLER = set(
    [
        "a",
        "an",
        "the",
        "some",
        "with",
        "and",
        "or",
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
    ]
)
_FILLER |= set(
    ["looking", "need", "want", "buy", "price", "priced", "pesos", "php", "product", "item", "items"]
)


def parse_request(text: str) -> Request:
    lowered = text.lower()
    price = PriceRange()
    match = _PRICE.search(lowered)
    if match:
        a = float(match.group("a").replace(",", ""))
        b = float(match.group("b").replace(",", "")) if match.group("b") else None
        kind = match.group("kind")
        if b is not None:
            price = PriceRange(min(a, b), max(a, b))
        elif kind in ("above", "over", "more than", "at least"):
            price = PriceRange(low=a)
        else:
            price = PriceRange(high=a)
        lowered = lowered.replace(match.group(0), " ")
    services = [flag for phrase, flag in _SERVICES.items() if phrase in lowered]
    for phrase in _SERVICES:
        lowered = lowered.replace(phrase, " ")
    keywords = [w for w in re.findall(r"[a-z0-9][a-z0-9\-]*", lowered) if w not in _FILLER]
    return Request(text=text, keywords=keywords, price=price, services=sorted(set(services)))


def split_requests(query: str, bucket: Bucket) -> list[Request]:
    body = re.split(r"(?i)my budget is only", query)[0]
    if bucket in (Bucket.PRODUCT, Bucket.WEB):
        return [parse_request(body)]
    parts = re.split(r"\(\d+\)|;|\n-\s", body)
    parts = [p for p in parts if len(p.split()) >= 2] or [body]
    return [parse_request(p) for p in parts[1:] if p.strip()] or [parse_request(body)]


class Pipeline:
    def __init__(self, problem_data: dict[str, Any]):
        self.problem = problem_data
        self.bucket = Bucket(problem_data.get("bucket", "product"))
        self.requests = split_requests(problem_data["query"], self.bucket)
        self.candidates: list[dict[str, Candidate]] = [{} for _ in self.requests]
        self.steps: list[dict] = []

    def call(self, name: str, **arguments: Any) -> Any:
        reply = miner_sdk.call_tool(name, **arguments)
        self.steps.append(
            {
                "completion": {
                    "message": {
                        "tool_call": [
                            {"name": name, "parameters": arguments, "tool_call_id": reply["call_id"]}
                        ],
                        "response": reply.get("text", "")[:2000],
                    }
                },
                "extra_info": {"step": len(self.steps)},
            }
        )
        return reply.get("result") if reply.get("ok") else None

    def note(self, text: str) -> None:
        self.steps.append(
            {"completion": {"message": {"think": text}}, "extra_info": {"step": len(self.steps)}}
        )

    def search(self, index: int, query: str, page: int = 1) -> None:
        request = self.requests[index]
        arguments: dict[str, Any] = {"q": query, "page": page}
        if request.price.as_filter():
            arguments["price"] = request.price.as_filter()
        if request.services:
            arguments["service"] = ",".join(request.services)
        for rank, hit in enumerate(self.call("find_product", **arguments) or []):
            pid = str(hit["product_id"])
            self.candidates[index].setdefault(
                pid,
                Candidate(
                    pid, hit["title"], float(hit["price"]), str(hit["shop_id"]), list(hit["service"]), rank
                ),
            )

    def score(self, index: int, candidate: Candidate) -> tuple:
        request = self.requests[index]
        text = candidate.text()
        covered = sum(1 for word in request.keywords if word in text)
        in_budget = request.price.admits(candidate.price)
        has_services = all(s in candidate.services for s in request.services)
        return (in_budget and has_services, covered, -candidate.rank)

    def run(self) -> list[dict]:
        self.note(
            f"task type: {self.bucket.value}; {len(self.requests)} item(s): "
            + json.dumps([r.keywords[:6] for r in self.requests])
        )
        for index, request in enumerate(self.requests):
            self.search(index, " ".join(request.keywords[:10]) or request.text)
        for pool in self.candidates:
            ids = [c.product_id for c in sorted(pool.values(), key=lambda c: c.rank)[:VIEW_BATCH]]
            if ids and len(self.steps) < MAX_STEPS:
                for info in self.call("view_product_information", product_ids=",".join(ids)) or []:
                    pool[str(info["product_id"])].attributes = info.get("attributes") or {}
        choice = []
        for index, pool in enumerate(self.candidates):
            if pool:
                best = max(pool.values(), key=lambda c, i=index: self.score(i, c))
                if best.product_id not in choice:
                    choice.append(best.product_id)
        self.note("best matches: " + ", ".join(choice) if choice else "nothing matched")
        if choice:
            self.call("recommend_product", product_ids=",".join(choice))
        self.call("terminate", status="success" if choice else "failure")
        return self.steps


def agent_main(problem_data):
    return Pipeline(problem_data).run()
