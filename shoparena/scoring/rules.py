"""The rule scorer (SPEC §4): recommended products against a problem's reward, upstream or production-strict.

Every comparison keeps its per-axis hits and checks (title, price, service, sku/attr, knowledge), so a
report can say *why* an agent failed, and a process reward can use the decomposition. Product records
come through any `ProductLookup` (a catalogue backend, or a dict for constructed products in tests).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from pydantic import AfterValidator, BaseModel, Field

from shoparena.catalog.models import Product
from shoparena.problems.models import Problem, RewardSpec
from shoparena.records.score import ScoreSummary

ScoringMode = Literal["upstream", "strict"]
SCORING_MODES: tuple[str, ...] = ("upstream", "strict")
AXES: tuple[str, ...] = ("title", "price", "service", "sku_attr", "knowledge")
TITLE_THRESHOLD = {"upstream": 0.5, "strict": 0.7}
"""Cosine a recommended title needs to hit the gold title: ShoppingBench 0.5, the ORO arena 0.7."""
WEB_TITLE_THRESHOLD = 0.8
SCORING_PIPELINE_VERSION = "rules-1"


@runtime_checkable
class ProductLookup(Protocol):
    """Anything that resolves ids to products; a `CatalogBackend` is one."""

    def get_products(self, product_ids: Iterable[str]) -> dict[str, Product]: ...


class DictLookup:
    """Products held in memory: for constructed products, tests and benchmarks."""

    def __init__(self, products: Iterable[Product] = ()):
        self.products = {p.product_id: p for p in products}

    def add(self, product: Product) -> None:
        self.products[product.product_id] = product

    def get_products(self, product_ids: Iterable[str]) -> dict[str, Product]:
        return {pid: self.products[pid] for pid in product_ids if pid in self.products}


class AxisTally(BaseModel):
    hits: int = 0
    checks: int = 0

    def add(self, other: AxisTally) -> None:
        self.hits += other.hits
        self.checks += other.checks

    @property
    def ratio(self) -> float | None:
        return self.hits / self.checks if self.checks else None


def _empty_axes() -> dict[str, AxisTally]:
    return {axis: AxisTally() for axis in AXES}


def _all_axes(value: dict[str, AxisTally]) -> dict[str, AxisTally]:
    """Every axis present (a record written with fewer axes reads back with empty tallies)."""
    unknown = set(value) - set(AXES)
    if unknown:
        raise ValueError(f"unknown scoring axes {sorted(unknown)}; expected {AXES}")
    return {axis: value.get(axis, AxisTally()) for axis in AXES}


AxesField = Annotated[dict[str, AxisTally], AfterValidator(_all_axes)]


class ItemScore(BaseModel):
    """One recommended product (or the lack of one) against one reward position."""

    position: int
    gold_product_id: str
    product_id: str | None = None
    resolved: bool = False
    gold_hit: bool = False
    rule: float = 0.0
    title_similarity: float | None = None
    shop_id: str | None = None
    price: float | None = None
    axes: AxesField = Field(default_factory=_empty_axes)


class ProblemScore(BaseModel):
    """One episode's outcome: what the runner stores and the metrics aggregate."""

    index: int | None = None
    problem_id: str
    bucket: str
    mode: ScoringMode
    sample: int = 0
    success: bool = False
    rule: float = 0.0
    shop: bool | None = None
    budget: bool | None = None
    gold_rate: float = 0.0
    """Share of reward positions answered with exactly the gold product id."""
    scoreable: bool = True
    answered: bool = True
    product_ids: list[str] = Field(default_factory=list)
    items: list[ItemScore] = Field(default_factory=list)
    axes: AxesField = Field(default_factory=_empty_axes)
    steps: int | None = None
    terminated: bool | None = None
    format_ok: bool | None = None
    grounded: bool | None = None
    """Whether the recommendation named only products the episode's searches returned (None: not
    known, as for an answers file). Strict mode scores an ungrounded recommendation 0."""

    def axis_ratio(self, axis: str) -> float | None:
        return self.axes[axis].ratio

    def summary(self) -> ScoreSummary:
        """The flat per-problem record of `score --json` (and of a trajectory record's `score`)."""
        row: dict[str, Any] = {
            "index": self.index,
            "problem_id": self.problem_id,
            "bucket": self.bucket,
            "sample": self.sample,
            "success": self.success,
            "rule": round(self.rule, 6),
            "shop": self.shop,
            "budget": self.budget,
            "gold_rate": round(self.gold_rate, 6),
            "answered": self.answered,
            "scoreable": self.scoreable,
            "product_ids": self.product_ids,
        }
        for axis in AXES:
            tally = self.axes[axis]
            row[axis] = None if not tally.checks else round(tally.hits / tally.checks, 6)
            row[f"{axis}_hits"] = tally.hits
            row[f"{axis}_checks"] = tally.checks
        if self.grounded is not None:
            row["grounded"] = self.grounded
        return ScoreSummary(**row)


# -- constraint checks ----------------------------------------------------------------------------


def _norm(text: str) -> str:
    return text.strip().lower()


def required_pairs(spec: RewardSpec) -> list[tuple[str, str]]:
    """Every (key, value) the reward asks for: its SKU option's pairs, then each attribute value."""
    pairs: list[tuple[str, str]] = []
    for option in spec.sku_options or []:
        pairs.extend((_norm(k), _norm(v)) for k, v in option.items())
    for attribute in spec.attributes or []:
        for key, values in attribute.items():
            pairs.extend((_norm(key), _norm(v)) for v in values)
    return pairs


def price_hit(price: float, mode: str, bounds: Sequence[float | None]) -> bool:
    """Inclusive bounds; a missing bound is open (`greater than` [lo, null], `less than` [0, hi])."""
    low, high = bounds
    if low is not None and price < low:
        return False
    return not (high is not None and price > high)


def sku_attr_hits(product: Product, pairs: list[tuple[str, str]]) -> int:
    """Hits with the best single SKU option: the product is bought as one option plus all its attributes."""
    if not pairs:
        return 0
    attribute_pairs = {(_norm(k), _norm(v)) for k, values in product.attributes.items() for v in values}
    options = [
        {(_norm(k), _norm(v)) for k, v in option.items()} for option in product.sku_options.values()
    ] or [set()]
    return max(sum(1 for pair in pairs if pair in option | attribute_pairs) for option in options)


def spec_checks(spec: RewardSpec) -> int:
    """How many constraints a reward position defines (an empty gold title is not a check)."""
    title = 1 if spec.title and spec.title[0].strip() else 0
    return title + len(spec.price or []) + len(spec.service or []) + len(required_pairs(spec))


def _spec_axes(spec: RewardSpec) -> dict[str, AxisTally]:
    axes = _empty_axes()
    axes["title"].checks = 1 if spec.title and spec.title[0].strip() else 0
    axes["price"].checks = len(spec.price or [])
    axes["service"].checks = len(spec.service or [])
    axes["sku_attr"].checks = len(required_pairs(spec))
    return axes


def score_item(
    product: Product | None,
    spec: RewardSpec,
    similarity,
    title_threshold: float,
    position: int = 0,
    product_id: str | None = None,
) -> ItemScore:
    """One product against one reward dict: exact gold id → 1, else hits / checks over every constraint."""
    axes = _spec_axes(spec)
    item = ItemScore(
        position=position,
        gold_product_id=spec.product_id,
        product_id=product.product_id if product is not None else product_id,
        axes=axes,
    )
    if product is None:
        return item
    item.resolved = True
    item.shop_id = product.shop_id
    item.price = product.price
    if product.product_id == spec.product_id:
        item.gold_hit = True
        item.rule = 1.0
        for tally in axes.values():
            tally.hits = tally.checks
        return item
    if axes["title"].checks:
        item.title_similarity = similarity.similarity(product.title, spec.title[0])
        axes["title"].hits = int(item.title_similarity >= title_threshold)
    for constraint in spec.price or []:
        ((mode, bounds),) = constraint.items()
        axes["price"].hits += int(price_hit(product.price, mode, bounds))
    offered = set(product.service)
    axes["service"].hits = sum(1 for flag in spec.service or [] if flag in offered)
    axes["sku_attr"].hits = sku_attr_hits(product, required_pairs(spec))
    checks = sum(t.checks for t in axes.values())
    item.rule = sum(t.hits for t in axes.values()) / checks if checks else 1.0
    return item


def score_web_item(product: Product | None, gold: Product, knowledge: str, similarity) -> ItemScore:
    """Web task: the knowledge attribute must appear in the title/description and the title be close (≥ 0.8)."""
    axes = _empty_axes()
    axes["title"].checks = 1
    axes["knowledge"].checks = 1
    item = ItemScore(position=0, gold_product_id=gold.product_id, axes=axes)
    if product is None:
        return item
    item.product_id = product.product_id
    item.resolved = True
    item.shop_id = product.shop_id
    item.price = product.price
    item.gold_hit = product.product_id == gold.product_id
    item.title_similarity = similarity.similarity(product.title, gold.title)
    axes["title"].hits = int(item.title_similarity >= WEB_TITLE_THRESHOLD)
    needle = knowledge.strip().lower()
    haystack = f"{product.title}\n{product.description}".lower()
    axes["knowledge"].hits = int(bool(needle) and needle in haystack)
    item.rule = (axes["title"].hits + axes["knowledge"].hits) / 2
    return item


# -- recommendation ids ---------------------------------------------------------------------------


def parse_product_ids(value: str | Sequence[object] | None) -> list[str]:
    """`recommend_product`'s argument as a list: "a,b" is split on commas (pieces stripped); lists kept."""
    if value is None:
        return []
    if isinstance(value, str):
        return [piece.strip() for piece in value.split(",") if piece.strip()]
    ids = []
    for element in value:
        if isinstance(element, bool) or not isinstance(element, str | int):
            raise ValueError(f"product id {element!r} is not a string or integer")
        ids.append(str(element))
    return ids


def normalise_ids(ids: Sequence[str], mode: ScoringMode) -> list[str]:
    """Strict mode strips, drops empties and de-duplicates (first occurrence wins); upstream keeps ids as given."""
    if mode == "upstream":
        return list(ids)
    return list(dict.fromkeys(i.strip() for i in ids if i.strip()))


# -- the scorer -----------------------------------------------------------------------------------


class RuleScorer:
    """Scores recommendations for problems in one mode with one title similarity and product lookup."""

    def __init__(
        self,
        lookup: ProductLookup,
        similarity,
        mode: ScoringMode = "upstream",
        title_threshold: float | None = None,
    ):
        if mode not in SCORING_MODES:
            raise ValueError(f"unknown scoring mode {mode!r}; expected one of {SCORING_MODES}")
        self.lookup = lookup
        self.similarity = similarity
        self.mode: ScoringMode = mode
        self.title_threshold = TITLE_THRESHOLD[mode] if title_threshold is None else title_threshold

    def score(self, problem: Problem, product_ids: str | Sequence[str] | None, **meta) -> ProblemScore:
        """Score one recommendation (ids in the user's order) for one problem."""
        return self.score_many([(problem, product_ids, meta)])[0]

    def score_many(
        self, episodes: Sequence[tuple[Problem, str | Sequence[str] | None, dict]]
    ) -> list[ProblemScore]:
        """Score a batch: one catalogue lookup for all ids and one embedding pass for all titles.

        Each episode is (problem, product ids, meta) where meta may hold index, sample, steps,
        terminated, format_ok, answered, grounded (False: strict mode scores the episode 0).
        """
        prepared = []
        wanted: set[str] = set()
        for problem, raw_ids, meta in episodes:
            ids = normalise_ids(parse_product_ids(raw_ids), self.mode)
            used = ids[: len(problem.rewards)]
            wanted.update(used)
            prepared.append((problem, ids, used, meta))
        products = self.lookup.get_products(sorted(wanted)) if wanted else {}
        titles: list[str] = []
        for problem, _ids, used, _meta in prepared:
            if any(pid in products for pid in used):
                titles.extend(problem.gold_titles)
                titles.extend(products[pid].title for pid in used if pid in products)
        if titles:
            self.similarity.prepare(titles)
        return [self._score_one(problem, ids, used, products, meta) for problem, ids, used, meta in prepared]

    def _score_one(
        self, problem: Problem, ids: list[str], used: list[str], products: dict[str, Product], meta: dict
    ) -> ProblemScore:
        bucket = problem.bucket or "product"
        result = ProblemScore(
            index=meta.get("index"),
            problem_id=problem.problem_id or "",
            bucket=bucket,
            mode=self.mode,
            sample=meta.get("sample", 0) or 0,
            answered=meta.get("answered", True),
            product_ids=ids,
            steps=meta.get("steps"),
            terminated=meta.get("terminated"),
            format_ok=meta.get("format_ok"),
            grounded=meta.get("grounded"),
        )
        if bucket == "web":
            self._score_web(problem, used, products, result)
        else:
            self._score_constraints(problem, used, products, result)
        for item in result.items:
            for axis, tally in item.axes.items():
                result.axes[axis].add(tally)
        result.gold_rate = sum(item.gold_hit for item in result.items) / max(len(result.items), 1)
        if self.mode == "strict" and result.grounded is False:
            # grounded answers: an id no search of the episode returned came from somewhere else
            # (memory, a table); the per-axis checks stay, to show what it would have scored
            result.rule, result.success = 0.0, False
            result.shop = False if result.shop is not None else None
            result.budget = False if result.budget is not None else None
        return result

    def _score_web(self, problem: Problem, used, products, result: ProblemScore) -> None:
        gold = problem.reward
        assert isinstance(gold, Product)
        product = products.get(used[0]) if used else None
        item = score_web_item(product, gold, str(problem.knowledge_attribute or ""), self.similarity)
        if product is None and used:
            item.product_id = used[0]
        result.items = [item]
        result.rule = item.rule
        result.success = item.rule >= 1

    def _score_constraints(self, problem: Problem, used, products, result: ProblemScore) -> None:
        specs = problem.rewards
        items = []
        for position, spec in enumerate(specs):
            pid = used[position] if position < len(used) else None
            product = products.get(pid) if pid is not None else None
            items.append(score_item(product, spec, self.similarity, self.title_threshold, position, pid))
        result.items = items
        result.scoreable = all(spec_checks(spec) > 0 for spec in specs)
        result.rule = sum(item.rule for item in items) / len(items)
        if self.mode == "strict" and not result.scoreable:
            result.rule = 0.0
            result.success = False
            return
        bucket = result.bucket
        if bucket == "product":
            result.success = result.rule >= 1
            return
        counted = [item.resolved and (self.mode == "upstream" or item.rule > 0) for item in items]
        every_position = all(counted)
        single_shop = len({item.shop_id for item in items}) == 1
        result.shop = every_position and single_shop
        if bucket == "voucher" and problem.voucher is not None:
            total = sum(item.price or 0.0 for item in items)
            voucher = problem.voucher
            result.budget = every_position and (
                total <= voucher.budget or voucher.discounted_total(total, single_shop) <= voucher.budget
            )
            result.success = result.rule >= 1 and result.budget
        else:
            result.success = result.rule >= 1 and result.shop


def unanswered_score(problem: Problem, mode: ScoringMode, index: int | None = None, sample: int = 0):
    """A failure for a problem with no answer (crash, timeout, missing line): strict mode counts these."""
    scorer = RuleScorer(DictLookup(), _NoSimilarity(), mode)
    score = scorer.score(problem, [], index=index, sample=sample, answered=False)
    return score


class _NoSimilarity:
    """Never called: an unanswered problem has no product to compare."""

    name = "none"

    def prepare(self, texts) -> None:
        return None

    def similarity(self, a: str, b: str) -> float:  # pragma: no cover - unreachable by construction
        raise AssertionError("no similarity needed for an unanswered problem")
