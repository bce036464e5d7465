"""Answerable problems sampled from a built catalogue, following ShoppingBench's rules (SPEC §2).

Every task starts from real catalogue products (the gold answer) and samples constraints from what
those products actually carry, so the gold answer satisfies its own reward spec by construction:

- each constraint item is kept on a fair coin: the title always; the first SKU option that wins its
  coin (the whole option dict); each attribute key, with one random value of it; each service flag;
- price: the modes are tried in the order less/greater/between, each on its own coin, with
  `hi = p + randint(0, p)` and `lo = p − randint(0, p)`; a mode is rejected when `lo < 0`,
  `p <= lo` or `p >= hi`, and the next is tried (so the bounds are strict: lo < p < hi). The
  upstream test files hold only greater/between (≈ 1/2 and 1/4 of items, as if "less than" never
  passed); we follow the rules as SPEC writes them, so "less than" appears too;
- shop task: 2–4 distinct products from one shop that has that many;
- voucher task: platform → 1–4 random products, shop → 2–4 from one shop; their total T ≥ 100;
  `threshold = randint(.1T, .9T)`; fixed `face = randint(.1·thr, .5·thr)`; percentage
  `d = randint(10, 50)%`, `cap = randint(thr·d, thr)` with `cap > thr·d`; the price after the voucher
  is what `Voucher.discounted_total` gives for T (= T − face, or max(T(1−d), T − cap)) and
  `budget = ceil(pav) + randint(0, ceil(.1·pav))`; voucher items carry no price constraint.

Randomness: each task draws from its own `random.Random` seeded by (seed, bucket, index), so the
output is a pure function of catalogue + seed + arguments, whatever order tasks are made in.
The web (knowledge) bucket is not generated: it needs a knowledge source this project does not ship.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

from shoparena.problems.canonical import reward_fingerprint
from shoparena.problems.models import Problem, RewardSpec, Voucher
from shoparena.problems.templates import (
    family_count,
    render_product_query,
    render_shop_query,
    render_voucher_query,
)

GENERATED_BUCKETS: tuple[str, ...] = ("product", "shop", "voucher")
PRICE_MODES: tuple[str, ...] = ("less than", "greater than", "between")
MIN_VOUCHER_TOTAL = 100
MAX_ATTEMPTS = 200
SHOP_SCAN_LIMIT = 1000


class GenerationError(RuntimeError):
    """The catalogue cannot yield the requested task (e.g. no shop sells enough products)."""


def coin(rng: random.Random) -> bool:
    return rng.random() < 0.5


def sample_price(price: float, rng: random.Random) -> list[dict] | None:
    """Upstream's price constraint: modes tried in order on their own coin; invalid bounds are rejected."""
    whole = int(price)
    for mode in PRICE_MODES:
        if not coin(rng):
            continue
        hi = whole + rng.randint(0, whole)
        lo = whole - rng.randint(0, whole)
        if mode == "less than":
            if price >= hi:
                continue
            return [{"less than": [0, hi]}]
        if mode == "greater than":
            if lo < 0 or price <= lo:
                continue
            return [{"greater than": [lo, None]}]
        if lo < 0 or price <= lo or price >= hi:
            continue
        return [{"between": [lo, hi]}]
    return None


def sample_reward_spec(product: dict, rng: random.Random, with_price: bool = True) -> RewardSpec:
    """One gold item's constraints, every one of them drawn from what `product` really has."""
    spec: dict = {"product_id": str(product["product_id"]), "title": [product["title"]]}
    options = product.get("sku_options") or {}
    for key in sorted(options, key=lambda k: (len(k), k)):
        if options[key] and coin(rng):
            spec["sku_options"] = [dict(options[key])]
            break
    attributes = [
        {key: [rng.choice(values)]}
        for key, values in (product.get("attributes") or {}).items()
        if values and coin(rng)
    ]
    if attributes:
        spec["attributes"] = attributes
    services = [flag for flag in product.get("service") or [] if coin(rng)]
    if services:
        spec["service"] = services
    if with_price:
        price = sample_price(float(product["price"]), rng)
        if price:
            spec["price"] = price
    return RewardSpec.model_validate(spec)


def count_constraints(specs: Sequence[RewardSpec]) -> int:
    """Constraints beyond the title: a SKU option, each attribute, each service, a price."""
    return sum(
        (1 if spec.sku_options else 0)
        + len(spec.attributes or [])
        + len(spec.service or [])
        + (1 if spec.price else 0)
        for spec in specs
    )


def difficulty_for(specs: Sequence[RewardSpec], voucher: Voucher | None = None) -> str:
    """easy / medium / hard from the constraint load: each constraint, each extra item and a voucher count 1."""
    load = count_constraints(specs) + (len(specs) - 1) + (1 if voucher is not None else 0)
    if load <= 3:
        return "easy"
    if load <= 8:
        return "medium"
    return "hard"


def build_voucher(total: float, voucher_type: str, rng: random.Random) -> Voucher:
    """Upstream voucher arithmetic for a gold set costing `total` (≥ 100)."""
    threshold = rng.randint(int(0.1 * total), int(0.9 * total))
    if coin(rng):
        face = rng.randint(int(0.1 * threshold), int(0.5 * threshold))
        voucher = Voucher(
            voucher_type=voucher_type, threshold=threshold, discount_type="fixed", face_value=face, budget=0
        )
    else:
        percent = rng.randint(10, 50)
        low = math.ceil(threshold * percent / 100)
        cap = rng.randint(low, threshold)
        while cap * 100 <= threshold * percent:  # upstream rejects cap == thr·d
            cap = rng.randint(low, threshold)
        voucher = Voucher(
            voucher_type=voucher_type,
            threshold=threshold,
            discount_type="percentage",
            discount=percent / 100,
            cap=cap,
            budget=0,
        )
    pav = voucher.discounted_total(total)
    budget = math.ceil(pav) + rng.randint(0, math.ceil(0.1 * pav))
    return voucher.model_copy(update={"price_after_voucher": round(pav, 3), "budget": budget})


class ProblemGenerator:
    """Samples product, shop and voucher tasks from a catalogue backend (see the module docstring)."""

    def __init__(self, backend, seed: int):
        self.backend = backend
        self.store = backend.store
        self.seed = seed
        self._size = len(self.store)
        self._shop_cache: dict[str, list[dict]] = {}
        if self._size == 0:
            raise GenerationError("the catalogue is empty")

    # -- sampling products ------------------------------------------------------------------------
    def _random_product(self, rng: random.Random) -> dict:
        return self.store.dict_by_ord(rng.randrange(self._size))

    def _shop_products(self, shop_id: str) -> list[dict]:
        if shop_id not in self._shop_cache:
            self._shop_cache[shop_id] = self.backend.products_in_shop(shop_id, limit=SHOP_SCAN_LIMIT)
        return self._shop_cache[shop_id]

    def _from_one_shop(self, k: int, rng: random.Random) -> list[dict]:
        """k distinct products of one shop: a random product's shop, retried until one has k."""
        for _ in range(MAX_ATTEMPTS):
            products = self._shop_products(str(self._random_product(rng)["shop_id"]))
            if len(products) >= k:
                return rng.sample(products, k)
        raise GenerationError(f"no shop with {k} products found in {MAX_ATTEMPTS} tries")

    def _distinct_random(self, k: int, rng: random.Random) -> list[dict]:
        picked: dict[str, dict] = {}
        for _ in range(MAX_ATTEMPTS):
            product = self._random_product(rng)
            picked.setdefault(str(product["product_id"]), product)
            if len(picked) == k:
                return list(picked.values())
        raise GenerationError(f"could not draw {k} distinct products")

    # -- one reward spec per bucket ---------------------------------------------------------------
    def product_task(self, rng: random.Random) -> tuple[list[RewardSpec], Voucher | None]:
        return [sample_reward_spec(self._random_product(rng), rng)], None

    def shop_task(self, rng: random.Random) -> tuple[list[RewardSpec], Voucher | None]:
        products = self._from_one_shop(rng.randint(2, 4), rng)
        return [sample_reward_spec(p, rng) for p in products], None

    def voucher_task(self, rng: random.Random) -> tuple[list[RewardSpec], Voucher | None]:
        voucher_type = rng.choice(("platform", "shop"))
        for _ in range(MAX_ATTEMPTS):
            if voucher_type == "platform":
                products = self._distinct_random(rng.randint(1, 4), rng)
            else:
                products = self._from_one_shop(rng.randint(2, 4), rng)
            total = sum(float(p["price"]) for p in products)
            if total >= MIN_VOUCHER_TOTAL:
                break
        else:
            raise GenerationError(
                f"no {voucher_type}-voucher gold set reached a total of {MIN_VOUCHER_TOTAL}"
            )
        voucher = build_voucher(total, voucher_type, rng)
        return [sample_reward_spec(p, rng, with_price=False) for p in products], voucher

    # -- problems -------------------------------------------------------------------------------
    def _render(
        self, bucket: str, specs: list[RewardSpec], voucher: Voucher | None, rng: random.Random, family: int
    ) -> str:
        if bucket == "product":
            return render_product_query(specs[0], rng, family)
        if bucket == "shop":
            return render_shop_query(specs, rng, family)
        return render_voucher_query(specs, voucher, rng, family)

    def task_variants(
        self, bucket: str, index: int, variants: int = 1, avoid: set[str] | None = None
    ) -> list[Problem]:
        """`variants` surface forms of task `index` of `bucket`; all share one leak cluster id.

        A reward spec whose fingerprint is in `avoid` is redrawn (a few times) so a batch does not
        hold the same underlying task twice.
        """
        if bucket not in GENERATED_BUCKETS:
            raise GenerationError(
                f"cannot generate {bucket!r} tasks: only {', '.join(GENERATED_BUCKETS)} are supported "
                "(web tasks need a knowledge source)"
            )
        sampler = {"product": self.product_task, "shop": self.shop_task, "voucher": self.voucher_task}[bucket]
        for attempt in range(20):
            rng = random.Random(f"{self.seed}:{bucket}:{index}:{attempt}")
            specs, voucher = sampler(rng)
            draft = Problem(query="-", reward=specs if bucket != "product" else specs[0], voucher=voucher)
            cluster = reward_fingerprint(draft)
            if avoid is None or cluster not in avoid:
                break
        base_family = rng.randrange(family_count(bucket, len(specs)))
        problems = []
        for variant in range(variants):
            text_rng = random.Random(f"{self.seed}:{bucket}:{index}:text:{variant}")
            variant_specs = specs
            if variant:  # reordered attributes are the same task: the fingerprint must not change
                variant_specs = [
                    spec.model_copy(
                        update={"attributes": text_rng.sample(spec.attributes, len(spec.attributes))}
                    )
                    if spec.attributes
                    else spec
                    for spec in specs
                ]
            family = (base_family + variant) % family_count(bucket, len(specs))
            query = self._render(bucket, variant_specs, voucher, text_rng, family)
            problems.append(
                Problem(
                    query=query,
                    reward=variant_specs if bucket != "product" else variant_specs[0],
                    voucher=voucher,
                    bucket=bucket,
                    difficulty=difficulty_for(specs, voucher),
                    leak_cluster_id=cluster,
                    seed=self.seed,
                )
            )
        return problems

    def generate(
        self,
        n: int,
        buckets: Sequence[str] = GENERATED_BUCKETS,
        variants: int = 1,
        progress: Callable[[int], object] | None = None,
    ) -> list[Problem]:
        """`n` distinct tasks split evenly over `buckets` (first buckets take the remainder), each in
        `variants` surface forms, so `n × variants` problems, grouped bucket by bucket."""
        if n < 0 or variants < 1:
            raise ValueError("n must be ≥ 0 and variants ≥ 1")
        buckets = list(dict.fromkeys(buckets))
        for bucket in buckets:
            if bucket not in GENERATED_BUCKETS:
                raise GenerationError(
                    f"cannot generate {bucket!r} tasks: the generator makes {', '.join(GENERATED_BUCKETS)} "
                    "(web/knowledge tasks need a knowledge source, which is not shipped)"
                )
        if not buckets:
            raise ValueError("no buckets to generate")
        share, extra = divmod(n, len(buckets))
        seen: set[str] = set()
        problems: list[Problem] = []
        for position, bucket in enumerate(buckets):
            for index in range(share + (1 if position < extra else 0)):
                batch = self.task_variants(bucket, index, variants, avoid=seen)
                seen.add(batch[0].leak_cluster_id or "")
                problems.extend(batch)
                if progress is not None:
                    progress(1)
        return problems
