"""The reference agents' search-and-verify policy, shared by both shapes (agentic and pipeline).

`Solver.steps()` is a generator: it yields a `Batch` of tool calls with the reasoning behind them and
receives the harness observations for those calls, in order. The agentic agent sends each batch as one
model-shaped assistant turn (reasoning + tool_calls); the pipeline executes the calls one by one as
code. The policy is deterministic: same query and catalogue → same calls.

Policy: search each item with its price/service filters → view the best-looking hits → explain the
query's words with each candidate's own attribute/SKU values (`matching.py`) → search further where an
item has no complete candidate (next page, head phrase, inside candidate shops for shop tasks,
cheapest-first for voucher budgets) → choose → verify (check_product_match / calculate_voucher where
the profile has them) → recommend → terminate.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from pydantic import BaseModel, Field

from shoparena.agents.reference.matching import Candidate, Fit, fit_candidate
from shoparena.agents.reference.query import ItemRequest, QueryPlan
from shoparena.agents.reference.wording import plain_number

MAX_VIEW_IDS = 12
"""Ids per view_product_information call: enough to compare, small enough to read."""
MAX_ROUNDS = 4


class ToolCall(BaseModel):
    name: str
    arguments: dict[str, Any]
    item: int | None = None
    """Which requested item a search is for (None for calls about the whole basket)."""


class Batch(BaseModel):
    calls: list[ToolCall]
    reasoning: str
    content: str | None = None


class Outcome(BaseModel):
    """What the solver settled on, for the final narration."""

    product_ids: list[str] = Field(default_factory=list)
    complete: bool = False
    notes: list[str] = Field(default_factory=list)


def _short(title: str, words: int = 9) -> str:
    parts = title.split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def _money(value: float) -> str:
    return f"{value:,.2f}".rstrip("0").rstrip(".")


class Solver:
    def __init__(self, plan: QueryPlan, tools: tuple[str, ...], capacity: Callable[[], int]):
        """`capacity()` says how many calls the next batch may hold (0: only the final calls remain)."""
        self.plan = plan
        self.tools = tools
        self.capacity = capacity
        self.items = plan.items
        self.products: dict[str, Candidate] = {}
        self.by_item: list[dict[str, int]] = [{} for _ in self.items]
        """item → product_id → best rank seen in that item's searches."""
        self.searched: set[tuple] = set()
        self.shops_searched: set[tuple[int, str]] = set()
        self.nominated_shops: list[str] = []
        self.outcome = Outcome()
        self._last_observed: list[str] = []
        self._fit_cache: dict[tuple, tuple[Fit, Candidate]] = {}

    # -- bookkeeping -------------------------------------------------------------------------------
    def _search_call(
        self,
        item: ItemRequest,
        q: str,
        page: int = 1,
        shop_id: str | None = None,
        sort: str | None = None,
        with_price: bool = True,
    ) -> ToolCall | None:
        args: dict[str, Any] = {"q": q, "page": page}
        if shop_id:
            args["shop_id"] = shop_id
        if item.price and with_price:
            args["price"] = item.price.filter_text()
        if item.service_filter:
            args["service"] = item.service_filter
        if sort:
            args["sort"] = sort
        key = (item.position, q, page, shop_id, sort, with_price)
        if key in self.searched:
            return None
        self.searched.add(key)
        return ToolCall(name="find_product", arguments=args, item=item.position)

    def _absorb(self, batch: Batch, observations: list[Any]) -> None:
        self._last_observed = []
        for call, observation in zip(batch.calls, observations, strict=False):
            ok = getattr(observation, "ok", False)
            result = getattr(observation, "result", None)
            if not ok:
                self._last_observed.append(f"{call.name} failed: {getattr(observation, 'error', '')}")
                continue
            if call.name == "find_product" and call.item is not None:
                self._absorb_hits(call, result or [])
            elif call.name == "view_product_information":
                for info in result or []:
                    product = self.products.get(str(info.get("product_id")))
                    if product is not None:
                        product.attributes = info.get("attributes") or {}
                        product.sku_options = info.get("sku_options") or {}
            elif call.name == "find_products_in_same_shop" and isinstance(result, dict):
                if result.get("found") and result.get("shop_id"):
                    shop = str(result["shop_id"])
                    if shop not in self.nominated_shops:
                        self.nominated_shops.append(shop)
                    self._last_observed.append(
                        f"find_products_in_same_shop proposed shop {shop} "
                        f"({', '.join(str(p['product_id']) for p in result.get('products', []))})"
                    )
                else:
                    self._last_observed.append("find_products_in_same_shop found no single shop")

    def _absorb_hits(self, call: ToolCall, hits: list[dict]) -> None:
        item = call.item
        assert item is not None
        offset = (int(call.arguments.get("page", 1)) - 1) * 10
        for position, hit in enumerate(hits):
            pid = str(hit["product_id"])
            rank = offset + position
            if pid not in self.products:
                self.products[pid] = Candidate.of_hit(hit, rank)
            ranks = self.by_item[item]
            ranks[pid] = min(ranks.get(pid, rank), rank)
        where = f" in shop {call.arguments['shop_id']}" if call.arguments.get("shop_id") else ""
        if hits:
            top = "; ".join(
                f'{h["product_id"]} "{_short(h["title"], 7)}" at {_money(float(h["price"]))} (shop {h["shop_id"]})'
                for h in hits[:3]
            )
            self._last_observed.append(
                f'search for item {item + 1} "{call.arguments["q"]}"{where} gave {len(hits)} hits, led by {top}'
            )
        else:
            self._last_observed.append(
                f'search for item {item + 1} "{call.arguments["q"]}"{where} gave nothing'
            )

    def fits(self, item: int, viewed_only: bool = True) -> list[tuple[Fit, Candidate]]:
        """Candidates of one item, best first."""
        out = []
        for pid, rank in self.by_item[item].items():
            candidate = self.products[pid]
            if viewed_only and not candidate.viewed:
                continue
            key = (item, pid, rank, candidate.viewed)
            if key not in self._fit_cache:
                ranked = candidate.model_copy(update={"rank": rank})
                self._fit_cache[key] = (fit_candidate(self.items[item], ranked), ranked)
            out.append(self._fit_cache[key])
        out.sort(key=lambda pair: pair[0].sort_key(pair[1]))
        return out

    def _complete(self, item: int) -> list[tuple[Fit, Candidate]]:
        return [pair for pair in self.fits(item) if pair[0].complete]

    def _to_view(self, limit: int) -> list[str]:
        """Unviewed candidates worth opening, round-robin over items so every item gets a look."""
        queues = []
        for item in range(len(self.items)):
            pending = [pair for pair in self.fits(item, viewed_only=False) if not pair[1].viewed]
            if self._complete(item) and self.plan.bucket == "product":
                pending = []
            queues.append([c.product_id for f, c in pending if f.price_ok and f.services_ok][:MAX_VIEW_IDS])
        chosen: list[str] = []
        while len(chosen) < limit and any(queues):
            for queue in queues:
                while queue and queue[0] in chosen:
                    queue.pop(0)
                if queue and len(chosen) < limit:
                    chosen.append(queue.pop(0))
        return chosen

    # -- describing what was seen -------------------------------------------------------------------
    def _compare_text(self, item: int, limit: int = 3) -> str:
        pairs = self.fits(item)
        if not pairs:
            return f"item {item + 1}: nothing verified yet"
        parts = []
        for fit, cand in pairs[:limit]:
            facts = ", ".join(f"{k}={v}" for k, v in list(fit.matched_pairs.items())[:4])
            verdict = (
                "meets every stated requirement"
                if fit.complete
                else "misses " + ", ".join(dict.fromkeys(fit.residual[:5]))
                if fit.residual
                else "fails the price/service filter"
            )
            option = f" (SKU option {fit.option})" if fit.option else ""
            parts.append(
                f'{cand.product_id} "{_short(cand.title)}" at {_money(cand.price)}'
                + (f" has {facts}{option}" if facts else "")
                + f" and {verdict}"
            )
        return f"item {item + 1}: " + "; ".join(parts)

    # -- the policy -----------------------------------------------------------------------------------
    def steps(self) -> Generator[Batch, list[Any], None]:
        first = self._first_batch()
        observations = yield first
        self._absorb(first, observations)
        for round_index in range(MAX_ROUNDS):
            room = self.capacity()
            ids = self._to_view(min(MAX_VIEW_IDS * max(1, min(len(self.items), 2)), MAX_VIEW_IDS * 2))
            if ids and room >= 1:
                view = self._view_batch(ids, room)
                observations = yield view
                self._absorb(view, observations)
            if self._satisfied():
                break
            follow = self._follow_up(round_index)
            if follow is None:
                break
            observations = yield follow
            self._absorb(follow, observations)
        choice = self._choose()
        self.outcome.product_ids = choice
        verify = self._verify_batch(choice)
        if verify is not None:
            observations = yield verify
            self._absorb(verify, observations)
            self._note_verification(verify, observations)
        yield self._recommend_batch(choice)
        yield Batch(
            calls=[ToolCall(name="terminate", arguments={"status": "success" if choice else "failure"})],
            reasoning=(
                "The recommendation is recorded, so the task is done; ending the episode."
                if choice
                else "Nothing in the catalogue fits the request, so I end the episode as a failure."
            ),
        )

    def _first_batch(self) -> Batch:
        calls: list[ToolCall] = []
        room = max(self.capacity(), 1)
        for item in self.items:
            call = self._search_call(item, item.search_text())
            if call:
                calls.append(call)
        if self.plan.bucket in ("product", "web"):
            item = self.items[0]
            if item.head and item.head != item.search_text():
                call = self._search_call(item, item.head)
                if call:
                    calls.append(call)
        multi_shop = self.plan.bucket == "shop" or (
            self.plan.voucher is not None and self.plan.voucher.voucher_type == "shop" and len(self.items) > 1
        )
        if multi_shop and "find_products_in_same_shop" in self.tools and len(self.items) > 1:
            specs = []
            for item in self.items:
                spec: dict[str, Any] = {"q": item.search_text()}
                if item.price:
                    spec["price"] = item.price.filter_text()
                if item.service_filter:
                    spec["service"] = item.service_filter
                specs.append(spec)
            calls.append(ToolCall(name="find_products_in_same_shop", arguments={"product_queries": specs}))
        if self.plan.voucher is not None and "view_voucher_information" in self.tools:
            calls.append(ToolCall(name="view_voucher_information", arguments={}))
        calls = calls[:room]
        return Batch(calls=calls, reasoning=self._opening_reasoning(calls))

    def _opening_reasoning(self, calls: list[ToolCall]) -> str:
        n = len(self.items)
        lines = [
            f"The request is a {self.plan.bucket} task with {n} item{'s' if n > 1 else ''}: {self.plan.summary()}."
        ]
        for item in self.items:
            if item.description != item.head:
                lines.append(
                    f'For item {item.position + 1} the details to verify are "{item.description}"; '
                    "attribute and SKU values must be checked on the product pages, not just titles."
                )
        if self.plan.bucket == "shop":
            lines.append("All items must come from one shop, so I need shop ids that appear for every item.")
        if self.plan.voucher is not None:
            lines.append(
                f"The basket must fit the budget of {plain_number(self.plan.voucher.budget)} after the voucher, "
                "so prices matter as much as the attributes."
            )
        searches = [c for c in calls if c.name == "find_product"]
        filters = sorted(
            {f"price {c.arguments['price']}" for c in searches if "price" in c.arguments}
            | {f"service {c.arguments['service']}" for c in searches if "service" in c.arguments}
        )
        lines.append(
            f"I start with {len(searches)} catalogue search{'es' if len(searches) != 1 else ''}"
            + (f" using the filters {', '.join(filters)}" if filters else "")
            + " so every hit already satisfies the price and service constraints."
        )
        return " ".join(lines)

    def _view_batch(self, ids: list[str], room: int) -> Batch:
        chunks = [ids[i : i + MAX_VIEW_IDS] for i in range(0, len(ids), MAX_VIEW_IDS)][: max(room, 1)]
        calls = [
            ToolCall(name="view_product_information", arguments={"product_ids": ",".join(c)}) for c in chunks
        ]
        observed = " ".join(s + "." for s in self._last_observed) or "The searches returned candidates."
        shown = ", ".join(i for c in chunks for i in c)
        return Batch(
            calls=calls,
            reasoning=(
                f"{observed} Titles alone do not show SKU options or attributes, so I open the details of "
                f"{shown} to compare them against the requirements."
            ),
        )

    def _satisfied(self) -> bool:
        complete = [bool(self._complete(i)) for i in range(len(self.items))]
        if not all(complete):
            return False
        if self.plan.bucket == "shop" or self._shop_voucher_needs_one_shop():
            return self._best_complete_shop() is not None
        if self.plan.voucher is not None:
            ids = self._independent_choice()
            return self._fits_budget(ids)
        return True

    def _shop_voucher_needs_one_shop(self) -> bool:
        voucher = self.plan.voucher
        if voucher is None or voucher.voucher_type != "shop" or len(self.items) < 2:
            return False
        return not self._fits_budget(self._independent_choice())

    def _follow_up(self, round_index: int) -> Batch | None:
        room = self.capacity() - 1  # keep one call for viewing what this finds
        if room < 1:
            return None
        calls: list[ToolCall] = []
        why: list[str] = []
        missing = [i for i in range(len(self.items)) if not self._complete(i)]
        for i in missing:
            why.append(self._compare_text(i))
        if self.plan.bucket == "shop" or (self._shop_voucher_needs_one_shop() and not missing):
            calls, shop_why = self._shop_searches(room)
            why.append(shop_why)
        else:
            for i in missing:
                item = self.items[i]
                options = [
                    (item.search_text(), 2),
                    (item.head, 1),
                    (item.head, 2),
                    (item.search_text(), 3),
                ]
                for q, page in options:
                    call = self._search_call(item, q, page)
                    if call:
                        calls.append(call)
                        break
            if not missing and self.plan.voucher is not None:
                for item in self.items:
                    call = self._search_call(item, item.search_text(), sort="priceasc")
                    if call:
                        calls.append(call)
                why.append(
                    "Every item has a match but the basket is over budget even after the voucher, so I look "
                    "for cheaper listings of the same items (sorted by price)."
                )
            if (
                self.plan.voucher is not None
                and self.plan.voucher.voucher_type == "shop"
                and len(self.items) > 1
            ):
                shop_calls, shop_why = self._shop_searches(max(room - len(calls), 0))
                if shop_calls:
                    calls += shop_calls
                    why.append(shop_why)
        calls = calls[:room]
        if not calls:
            return None
        return Batch(
            calls=calls,
            reasoning=" ".join(why)
            + f" Searching further ({len(calls)} more quer{'ies' if len(calls) > 1 else 'y'}).",
        )

    # -- shops ----------------------------------------------------------------------------------------
    def _shop_cover(self) -> dict[str, dict[int, tuple[Fit, Candidate]]]:
        """shop → item → its best viewed candidate in that shop."""
        cover: dict[str, dict[int, tuple[Fit, Candidate]]] = {}
        for item in range(len(self.items)):
            for fit, cand in self.fits(item):
                slot = cover.setdefault(cand.shop_id, {})
                if item not in slot or (fit.complete and not slot[item][0].complete):
                    slot[item] = (fit, cand)
        return cover

    def _shop_rank(self, shop: str, slots: dict[int, tuple[Fit, Candidate]]) -> tuple:
        complete = sum(1 for fit, _ in slots.values() if fit.complete)
        hits = sum(
            1
            for i in range(len(self.items))
            if any(self.products[p].shop_id == shop for p in self.by_item[i])
        )
        nominated = 0 if shop in self.nominated_shops else 1
        return (-complete, -hits, nominated, min(c.rank for _, c in slots.values()), shop)

    def _best_complete_shop(self) -> str | None:
        cover = self._shop_cover()
        full = [
            (
                sum(fit.sort_key(c)[1] for fit, c in slots.values()),
                sum(c.price for _, c in slots.values()),
                shop,
            )
            for shop, slots in cover.items()
            if len(slots) == len(self.items) and all(fit.complete for fit, _ in slots.values())
        ]
        if self.plan.voucher is not None:
            full = [
                entry
                for entry in full
                if self._fits_budget([cover[entry[2]][i][1].product_id for i in range(len(self.items))])
            ]
        return min(full)[2] if full else None

    def _shop_searches(self, room: int) -> tuple[list[ToolCall], str]:
        cover = self._shop_cover()
        for shop in self.nominated_shops:
            cover.setdefault(shop, {})
        ranked = sorted(cover, key=lambda s: self._shop_rank(s, cover[s]) if cover[s] else (0, 0, 0, 0, s))
        calls: list[ToolCall] = []
        shops_used: list[str] = []
        for shop in ranked:
            slots = cover[shop]
            missing = [i for i in range(len(self.items)) if i not in slots or not slots[i][0].complete]
            missing = [i for i in missing if (i, shop) not in self.shops_searched]
            if not missing or len(calls) + len(missing) > room:
                continue
            for i in missing:
                self.shops_searched.add((i, shop))
                call = self._search_call(self.items[i], self.items[i].search_text(), shop_id=shop)
                if call:
                    calls.append(call)
            shops_used.append(shop)
            if len(calls) >= room:
                break
        if not calls:
            return [], ""
        covered = {s: sum(1 for f, _ in cover[s].values() if f.complete) for s in shops_used}
        text = (
            "No shop has a verified match for every item yet. "
            + "; ".join(f"shop {s} already covers {n} of {len(self.items)}" for s, n in covered.items())
            + ", so I search the missing items inside those shops."
        )
        return calls, text

    # -- choosing -------------------------------------------------------------------------------------
    def _ranked(self, item: int, shop: str | None = None) -> list[Candidate]:
        """An item's candidates best first: viewed ones by fit, then unviewed ones by search rank."""
        viewed = [c for _, c in self.fits(item)]
        unviewed = [c for f, c in self.fits(item, viewed_only=False) if not c.viewed]
        ranked = viewed + unviewed
        return [c for c in ranked if c.shop_id == shop] if shop is not None else ranked

    def _assign(self, lists: list[list[Candidate]]) -> list[str]:
        """One distinct product per item (the gold items are distinct), scarcest item first."""
        chosen: dict[int, str] = {}
        for item in sorted(range(len(lists)), key=lambda i: (len(lists[i]), i)):
            used = set(chosen.values())
            pick = next((c.product_id for c in lists[item] if c.product_id not in used), None)
            if pick is None and lists[item]:
                pick = lists[item][0].product_id
            if pick is not None:
                chosen[item] = pick
        return [chosen[i] for i in range(len(lists)) if i in chosen]

    def _independent_choice(self) -> list[str]:
        return self._assign([self._ranked(item) for item in range(len(self.items))])

    def _fits_budget(self, ids: list[str]) -> bool:
        voucher = self.plan.voucher
        if voucher is None or len(ids) != len(self.items):
            return voucher is None
        total = sum(self.products[p].price for p in ids)
        single = len({self.products[p].shop_id for p in ids}) == 1
        return voucher.fits(total, single)

    def _choose(self) -> list[str]:
        if self.plan.bucket == "shop":
            return self._choose_shop()
        if self.plan.voucher is not None:
            return self._choose_voucher()
        return self._independent_choice()

    def _choose_shop(self) -> list[str]:
        shop = self._best_complete_shop()
        cover = self._shop_cover()
        if shop is None and cover:
            shop = min(cover, key=lambda s: (-len(cover[s]),) + self._shop_rank(s, cover[s]))
        if shop is None:
            return self._independent_choice()
        lists = []
        for item in range(len(self.items)):
            inside = self._ranked(item, shop)
            lists.append(inside or self._ranked(item))
        chosen = self._assign(lists)
        self.outcome.complete = self._best_complete_shop() == shop
        self.outcome.notes.append(f"all items from shop {shop}")
        return chosen

    def _choose_voucher(self) -> list[str]:
        preferred = self._independent_choice()
        if self._fits_budget(preferred):
            self.outcome.complete = all(self._complete(i) for i in range(len(self.items)))
            return preferred
        shop = self._best_complete_shop() if len(self.items) > 1 else None
        if shop is not None:
            self.outcome.complete = True
            self.outcome.notes.append(f"one shop ({shop}) so the shop voucher applies")
            return self._assign([self._ranked(i, shop) for i in range(len(self.items))])
        lists = []
        for item in range(len(self.items)):
            pool = self._complete(item) or self.fits(item) or self.fits(item, viewed_only=False)
            lists.append([c for _, c in sorted(pool, key=lambda pair: (pair[1].price, pair[1].product_id))])
        cheapest = self._assign(lists)
        if self._fits_budget(cheapest):
            self.outcome.notes.append("cheapest verified listings chosen to stay within the budget")
            self.outcome.complete = all(self._complete(i) for i in range(len(self.items)))
            return cheapest
        self.outcome.notes.append("no combination found within the budget")
        return preferred

    def _why_first(self, item: int, product_id: str) -> str:
        """Why the chosen candidate beats the runner-up, in the terms the ranking used."""
        pairs = self.fits(item)
        chosen = next(((f, c) for f, c in pairs if c.product_id == product_id), None)
        others = [(f, c) for f, c in pairs if c.product_id != product_id]
        if chosen is None or not others:
            return f"{product_id} is the only verified candidate."
        (fit, cand), (other_fit, other) = chosen, others[0]
        if len(fit.residual) < len(other_fit.residual):
            reason = f"it explains more of the request than {other.product_id} (which misses {', '.join(other_fit.residual[:3])})"
        elif fit.head_in_order and not other_fit.head_in_order:
            reason = (
                f'its title contains the phrase "{self.items[item].head}" and {other.product_id}\'s does not'
            )
        else:
            reason = (
                f"both meet the requirements, and {cand.product_id} ranks higher for the query "
                f"(position {cand.rank + 1} vs {other.rank + 1})"
            )
        return f"I prefer {cand.product_id}: {reason}."

    # -- finishing --------------------------------------------------------------------------------------
    def _verify_batch(self, choice: list[str]) -> Batch | None:
        if not choice or self.capacity() < 1:
            return None
        voucher = self.plan.voucher
        if voucher is not None and "calculate_voucher" in self.tools:
            prices = [self.products[p].price for p in choice]
            value = (
                voucher.face_value
                if voucher.discount_type == "fixed"
                else round((voucher.discount or 0) * 100, 4)
            )
            args = {
                "product_prices": ",".join(_money(p).replace(",", "") for p in prices),
                "voucher_type": voucher.discount_type,
                "discount_value": value,
                "threshold": voucher.threshold,
                "budget": voucher.budget,
                "cap": voucher.cap or 0,
            }
            single = len({self.products[p].shop_id for p in choice}) == 1
            scope = (
                "all from one shop, so the shop voucher can apply"
                if single
                else "from several shops"
                + (", so the shop voucher cannot apply" if voucher.voucher_type == "shop" else "")
            )
            return Batch(
                calls=[ToolCall(name="calculate_voucher", arguments=args)],
                reasoning=" ".join(self._compare_text(i, 2) + "." for i in range(len(self.items)))
                + f" The basket {', '.join(choice)} costs {_money(sum(prices))} in total ({scope}); "
                "I check the voucher arithmetic against the budget before recommending.",
            )
        if self.plan.bucket in ("product", "web") and "check_product_match" in self.tools:
            fit = next((f for f, c in self.fits(0) if c.product_id == choice[0]), None)
            if fit is None or not fit.matched_pairs:
                return None
            return Batch(
                calls=[
                    ToolCall(
                        name="check_product_match",
                        arguments={"product_id": choice[0], "requirements": dict(fit.matched_pairs)},
                    )
                ],
                reasoning=self._compare_text(0)
                + f". {self._why_first(0, choice[0])} I confirm its attributes with check_product_match.",
            )
        return None

    def _note_verification(self, batch: Batch, observations: list[Any]) -> None:
        for call, observation in zip(batch.calls, observations, strict=False):
            result = getattr(observation, "result", None)
            if not isinstance(result, dict):
                continue
            if call.name == "calculate_voucher":
                self.outcome.notes.append(
                    f"total {_money(result.get('total_before', 0))} → {_money(result.get('total_after', 0))} "
                    f"after the voucher, {'within' if result.get('within_budget') else 'over'} the budget"
                )
            elif call.name == "check_product_match":
                self.outcome.notes.append(
                    "check_product_match: "
                    + (
                        "all requirements matched"
                        if result.get("matched")
                        else f"mismatches {result.get('mismatches')}"
                    )
                )

    def _recommend_batch(self, choice: list[str]) -> Batch:
        if not choice:
            return Batch(calls=[], reasoning="No candidate was found for the request.")
        details = []
        for position, pid in enumerate(choice):
            cand = self.products[pid]
            details.append(
                f'item {position + 1} → {pid} "{_short(cand.title)}" at {_money(cand.price)} (shop {cand.shop_id})'
            )
        notes = f" ({'; '.join(self.outcome.notes)})" if self.outcome.notes else ""
        checked = " ".join(s + "." for s in self._last_observed[-2:]) if self._last_observed else ""
        reasoning = (
            (checked + " " if checked else "")
            + "Final choice: "
            + "; ".join(details)
            + notes
            + (
                ". Every stated requirement is met."
                if self.outcome.complete or (self.plan.bucket in ("product", "web") and self._complete(0))
                else ". This is the closest match I found."
            )
        )
        return Batch(
            calls=[ToolCall(name="recommend_product", arguments={"product_ids": ",".join(choice)})],
            reasoning=reasoning,
        )
