"""Problem records (SPEC §2): ShoppingBench's task format, read and written as is, plus our metadata.

A problem is `{"query", "reward", "voucher"?, "Knowledge_Attribute"?}` as in the upstream files, with
optional metadata (`problem_id`, `bucket`, `difficulty`, `leak_cluster_id`, `suite`, `suite_version`,
`seed`) and the arena suite fields (`category`, `title`, `reward_title_embeddings`). Unknown keys are
kept so a file round-trips; serialisation writes back only the keys the record had or we set.
"""

from __future__ import annotations

import hashlib
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from shoparena.catalog.models import Product, ServiceFlag

Bucket = Literal["product", "shop", "voucher", "web"]
BUCKETS: tuple[str, ...] = ("product", "shop", "voucher", "web")
PriceMode = Literal["less than", "greater than", "between"]
CATEGORY_TO_BUCKET = {
    "product": "product",
    "shop": "shop",
    "voucher": "voucher",
    "knowledge": "web",
    "web": "web",
}


class RewardSpec(BaseModel):
    """One gold item's constraints (product/shop/voucher tasks)."""

    model_config = ConfigDict(extra="forbid")

    product_id: str
    title: list[str] = Field(min_length=1)
    sku_options: list[dict[str, str]] | None = None
    attributes: list[dict[str, list[str]]] | None = None
    service: list[ServiceFlag] | None = None
    price: list[dict[PriceMode, list[int | float | None]]] | None = None

    @field_validator("product_id", mode="before")
    @classmethod
    def _id_as_string(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("sku_options")
    @classmethod
    def _one_sku(cls, value: list[dict[str, str]] | None) -> list[dict[str, str]] | None:
        if value is not None and len(value) > 1:
            raise ValueError("at most one sku option per reward")
        return value

    @field_validator("price")
    @classmethod
    def _price_bounds(cls, value):
        for constraint in value or []:
            if len(constraint) != 1:
                raise ValueError("each price constraint has exactly one mode")
            ((mode, bounds),) = constraint.items()
            if len(bounds) != 2:
                raise ValueError(f"price {mode!r} needs [low, high] bounds")
            low, high = bounds
            if mode == "between" and (low is None or high is None):
                raise ValueError("price 'between' needs both bounds")
            if mode == "between" and low > high:
                raise ValueError(f"price 'between' bounds are reversed: [{low}, {high}] (low first)")
            if mode == "greater than" and low is None:
                raise ValueError("price 'greater than' needs a lower bound")
            if mode == "less than" and high is None:
                raise ValueError("price 'less than' needs an upper bound")
        return value


class Voucher(BaseModel):
    """The voucher of a voucher task (upstream keys)."""

    model_config = ConfigDict(extra="forbid")

    voucher_type: Literal["platform", "shop"]
    # `int | float` keeps integers as integers, so a file is written back with the same JSON numbers.
    threshold: int | float = Field(ge=0)
    discount_type: Literal["fixed", "percentage"]
    face_value: int | float | None = None
    discount: float | None = None
    cap: int | float | None = None
    price_after_voucher: int | float | None = None
    budget: int | float = Field(ge=0)

    @model_validator(mode="after")
    def _consistent(self) -> Voucher:
        if self.discount_type == "fixed" and self.face_value is None:
            raise ValueError("a fixed voucher needs face_value")
        if self.discount_type == "percentage" and self.discount is None:
            raise ValueError("a percentage voucher needs discount (a fraction)")
        if self.discount is not None and not 0 < self.discount < 1:
            raise ValueError("discount is a fraction in (0, 1)")
        return self

    def discounted_total(self, total: float, single_shop: bool = True) -> float:
        """Total after the voucher, if it applies (threshold reached, and shop vouchers need one shop)."""
        if total < self.threshold or (self.voucher_type == "shop" and not single_shop):
            return total
        if self.discount_type == "fixed":
            return total - (self.face_value or 0.0)
        reduction = total * (self.discount or 0.0)
        if self.cap:
            reduction = min(reduction, self.cap)
        return total - reduction


class Problem(BaseModel):
    """One task. `reward` is a dict (product; web: the full gold product) or a list of 1–4 (shop, voucher)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    query: str = Field(min_length=1)
    reward: RewardSpec | list[RewardSpec] | Product
    voucher: Voucher | None = None
    knowledge_attribute: str | int | None = Field(default=None, alias="Knowledge_Attribute")
    problem_id: str | None = None
    bucket: Bucket | None = None
    difficulty: str | None = None
    leak_cluster_id: str | None = None
    suite: str | None = None
    suite_version: str | None = None
    seed: int | None = None
    category: str | None = None
    title: str | None = None
    reward_title_embeddings: dict[str, list[float]] | None = None

    @field_validator("reward", mode="before")
    @classmethod
    def _reward_shape(cls, value: object) -> object:
        if isinstance(value, list) and not 1 <= len(value) <= 4:
            raise ValueError(f"a reward list holds 1-4 items, got {len(value)}")
        return value

    @model_validator(mode="after")
    def _fill_metadata(self) -> Problem:
        if self.bucket is None:
            self.bucket = infer_bucket(self)
        if self.problem_id is None:
            self.problem_id = stable_problem_id(self)
        if self.bucket == "voucher" and self.voucher is None:
            raise ValueError("a voucher problem needs a 'voucher'")
        if self.bucket == "web" and self.knowledge_attribute in (None, ""):
            raise ValueError("a web problem needs 'Knowledge_Attribute'")
        return self

    # -- views ----------------------------------------------------------------------------------
    @property
    def rewards(self) -> list[RewardSpec]:
        """The reward as a list of specs (a web gold product becomes a title-only spec)."""
        if isinstance(self.reward, list):
            return self.reward
        if isinstance(self.reward, Product):
            return [RewardSpec(product_id=self.reward.product_id, title=[self.reward.title])]
        return [self.reward]

    @property
    def gold_titles(self) -> list[str]:
        return [spec.title[0] for spec in self.rewards]

    def task_record(self) -> dict:
        """The upstream task JSON (query, reward, voucher?, Knowledge_Attribute?) with no metadata."""
        data = {"query": self.query, "reward": _dump_reward(self.reward)}
        if self.voucher is not None:
            data["voucher"] = self.voucher.model_dump(mode="json")
        if self.knowledge_attribute is not None:
            data["Knowledge_Attribute"] = self.knowledge_attribute
        return data

    def to_record(self) -> dict:
        """Everything this problem carries, upstream keys first, metadata after (None fields left out)."""
        data = self.task_record()
        meta = self.model_dump(
            mode="json",
            exclude_none=True,
            exclude={"query", "reward", "voucher", "knowledge_attribute"},
        )
        data.update(meta)
        return data


def _dump_reward(reward) -> object:
    if isinstance(reward, list):
        return [spec.model_dump(mode="json", exclude_none=True) for spec in reward]
    if isinstance(reward, Product):
        return reward.model_dump(mode="json", exclude_unset=True)
    return reward.model_dump(mode="json", exclude_none=True)


def infer_bucket(problem: Problem) -> str:
    """From the arena suite's `category` if present, else from the record's shape."""
    if problem.category:
        bucket = CATEGORY_TO_BUCKET.get(problem.category.strip().lower())
        if bucket is None:
            raise ValueError(
                f"unknown category {problem.category!r}; expected Product, Shop, Voucher or Knowledge"
            )
        return bucket
    if problem.knowledge_attribute is not None or isinstance(problem.reward, Product):
        return "web"
    if problem.voucher is not None:
        return "voucher"
    return "shop" if isinstance(problem.reward, list) else "product"


def stable_problem_id(problem: Problem) -> str:
    """A content id: the same task text and reward always get the same id, whatever file it sits in."""
    digest = hashlib.sha256(orjson.dumps(problem.task_record(), option=orjson.OPT_SORT_KEYS)).hexdigest()
    return f"{problem.bucket or 'p'}-{digest[:16]}"
