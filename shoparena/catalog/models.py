"""Catalogue records (SPEC §1).

Field names follow ShoppingBench's catalogue exactly, because the upstream catalogue file, the
web-task gold records and every tool observation use them; renaming anything here would break
format compatibility with real data.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

SERVICES: tuple[str, ...] = ("official", "freeShipping", "COD", "flashsale")
"""Service flags a product may carry; search filters require every listed one."""

ServiceFlag = Literal["official", "freeShipping", "COD", "flashsale"]
MAX_TEXT = 2000
MAX_SKU_OPTIONS = 9
MAX_ID_CHARS = 100  # upstream ids are ~11 digits; the store's key limit is 511 bytes (≤ 4 per char)
MAX_SOLD_COUNT = 2**63 - 1

NonEmptyId = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS, strip_whitespace=True)]


class Product(BaseModel):
    """One marketplace listing, as ShoppingBench's catalogue describes it."""

    model_config = ConfigDict(extra="ignore", frozen=False)

    product_id: NonEmptyId
    shop_id: NonEmptyId
    brand: str = ""
    category: str = ""
    title: str
    short_description: str = ""
    description: str = ""
    specification: str = ""
    price: float = Field(ge=0, allow_inf_nan=False)
    sold_count: int = Field(default=0, ge=0, le=MAX_SOLD_COUNT)
    sku_options: dict[str, dict[str, str]] = Field(default_factory=dict)
    attributes: dict[str, list[str]] = Field(default_factory=dict)
    service: list[ServiceFlag] = Field(default_factory=list)
    main_image_url: str = ""
    product_url: str = ""

    @field_validator("product_id", "shop_id", mode="before")
    @classmethod
    def _ids_as_strings(cls, value: object) -> object:
        # Upstream ids are numeric strings; some dumps carry them as integers. Accept both, never floats.
        if isinstance(value, bool):
            raise ValueError("id must be a string or integer, not a boolean")
        return str(value) if isinstance(value, int) else value

    @field_validator("price", "sold_count", mode="before")
    @classmethod
    def _no_booleans(cls, value: object) -> object:
        # JSON true/false is never a price or a count; pydantic would read it as 1/0
        if isinstance(value, bool):
            raise ValueError("expected a number, not a boolean")
        return value

    @field_validator("short_description", "description", "specification")
    @classmethod
    def _clip_text(cls, value: str) -> str:
        return value[:MAX_TEXT]

    @field_validator("sku_options")
    @classmethod
    def _check_sku_options(cls, value: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        if len(value) > MAX_SKU_OPTIONS:
            raise ValueError(f"at most {MAX_SKU_OPTIONS} sku options, got {len(value)}")
        return {k: {a.lower(): v.lower() for a, v in opt.items()} for k, opt in value.items()}

    @field_validator("attributes")
    @classmethod
    def _lower_attributes(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        return {k.lower(): [v.lower() for v in vals] for k, vals in value.items()}

    def search_contents(self) -> str:
        """The text BM25 indexes: title + unique SKU values + unique attribute values (upstream recipe)."""
        return build_contents(self.title, self.sku_options, self.attributes)


def build_contents(
    title: str, sku_options: dict[str, dict[str, str]], attributes: dict[str, list[str]]
) -> str:
    """Upstream's `contents`: the title followed by each distinct SKU value, then each distinct attribute value."""
    seen: dict[str, None] = {}
    for option in sku_options.values():
        for value in option.values():
            seen.setdefault(value, None)
    sku_values = list(seen)
    seen_attr: dict[str, None] = {}
    for values in attributes.values():
        for value in values:
            seen_attr.setdefault(value, None)
    return " ".join([title, *sku_values, *seen_attr])


class Shop(BaseModel):
    """A seller. Upstream only has `shop_id`; name, rating and flags are ours (SPEC §1)."""

    model_config = ConfigDict(extra="forbid")

    shop_id: NonEmptyId
    name: str
    rating: float = Field(ge=0, le=5)
    official: bool = False
    product_count: int = Field(default=0, ge=0)


class ProductInformation(BaseModel):
    """`view_product_information` output: deliberately no title and no price, as upstream."""

    model_config = ConfigDict(extra="forbid")

    product_id: str
    short_description: str
    description: str
    sku_options: dict[str, dict[str, str]]
    attributes: dict[str, list[str]]

    @classmethod
    def of(cls, product: Product) -> ProductInformation:
        return cls(
            product_id=product.product_id,
            short_description=product.short_description,
            description=product.description,
            sku_options=product.sku_options,
            attributes=product.attributes,
        )


SortOrder = Literal["order", "priceasc", "pricedesc"]
