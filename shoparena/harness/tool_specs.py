"""The tool surface the model sees: names, descriptions, parameters and the three profiles (SPEC §3).

Descriptions are prompts: they say what a tool returns and how its arguments are read, because a
model has nothing else to go on. Schemas are OpenAI function-calling tools, which every protocol's
system prompt can also embed.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from shoparena.catalog.models import SERVICES
from shoparena.harness.params import Param, parameters_schema, signature


class ToolSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    params: tuple[Param, ...]

    def schema(self) -> dict:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters_schema(self.params),
            },
        }

    def signature(self) -> str:
        return signature(self.name, self.params)


_SERVICE_LIST = ", ".join(SERVICES)

FIND_PRODUCT = ToolSpec(
    name="find_product",
    description=(
        "Search the catalogue (BM25 over title, SKU and attribute values). Returns up to 10 products per "
        "page, each with product_id, shop_id, title, price, service and sold_count. Only the first 50 "
        "matches that pass the filters are reachable (pages 1-5); a page outside 1-5 returns []."
    ),
    params=(
        Param(name="q", type="string", required=True, description="Search words, e.g. 'wireless earbuds'."),
        Param(name="page", type="integer", default=1, description="Result page, 1-5 (default 1)."),
        Param(name="shop_id", type="string", description="Only products of this shop (exact id)."),
        Param(
            name="price",
            type="string",
            description="Price range 'low-high' (inclusive) or open-ended 'low-', e.g. '100-500', '300-'.",
        ),
        Param(
            name="sort",
            type="string",
            enum=("default", "order", "priceasc", "pricedesc"),
            description=(
                "Reorder the filtered matches: 'order' (most sold first), 'priceasc', 'pricedesc'; "
                "'default' or absent keeps relevance order."
            ),
        ),
        Param(
            name="service",
            type="string",
            list_as_csv=True,
            description=f"Comma-separated service flags a product must all have: {_SERVICE_LIST}.",
        ),
    ),
)

VIEW_PRODUCT_INFORMATION = ToolSpec(
    name="view_product_information",
    description=(
        "Details of products by id: product_id, short_description, description, sku_options and "
        "attributes (no title or price: those are in search results). Unknown ids are left out."
    ),
    params=(
        Param(
            name="product_ids",
            type="string",
            required=True,
            list_as_csv=True,
            description="Comma-separated product ids, e.g. '123,456'.",
        ),
    ),
)

RECOMMEND_PRODUCT = ToolSpec(
    name="recommend_product",
    description=(
        "Recommend products to the user. Callable once per task; later calls are refused and the first "
        "recommendation stands. For several products give them in the order the user asked for them."
    ),
    params=(
        Param(
            name="product_ids",
            type="string",
            required=True,
            list_as_csv=True,
            description="Comma-separated product ids, in the user's order.",
        ),
    ),
)

TERMINATE = ToolSpec(
    name="terminate",
    description="End the task: 'success' once you have recommended, 'failure' if you cannot proceed.",
    params=(
        Param(
            name="status",
            type="string",
            enum=("success", "failure"),
            default="success",
            description="'success' or 'failure' (default 'success').",
        ),
    ),
)

CHECK_PRODUCT_MATCH = ToolSpec(
    name="check_product_match",
    description=(
        "Check one product against required attribute values. Each required value is matched "
        "case-insensitively (as a substring) against that attribute's values, then against all attribute "
        "and SKU values, then against the descriptions. Returns {matched, matches, mismatches, "
        "product_summary}; matches and mismatches list requirement keys."
    ),
    params=(
        Param(name="product_id", type="string", required=True, description="One product id."),
        Param(
            name="requirements",
            type="string",
            required=True,
            json_kind="object",
            description=(
                'JSON object of required values, e.g. \'{"color": "black", "size": "large"}\'; a list '
                "value requires every item."
            ),
        ),
    ),
)

FIND_PRODUCTS_IN_SAME_SHOP = ToolSpec(
    name="find_products_in_same_shop",
    description=(
        "Find one product per search spec, all from the same shop. Searches the first spec, then tries "
        "up to 10 of the shops it returned, searching every other spec inside each shop (relaxing: no "
        "service filter, then the first 2 words, then the first word). Returns {found, shop_id, products "
        "(in input order: product_id, title, price, shop_id), shops_tried}."
    ),
    params=(
        Param(
            name="product_queries",
            type="string",
            required=True,
            json_kind="array",
            description=(
                'JSON array of search specs, e.g. \'[{"q": "foam roller", "price": "0-500"}, '
                '{"q": "yoga mat", "service": "COD"}]\'; each needs q, price and service are optional.'
            ),
        ),
    ),
)

CALCULATE_VOUCHER = ToolSpec(
    name="calculate_voucher",
    description=(
        "Total a basket and apply a voucher. The voucher applies when the total reaches the threshold; a "
        "fixed voucher takes discount_value off; a percentage voucher takes discount_value percent "
        "(0.35 and 35 both mean 35%), limited to cap when cap > 0. Returns {prices, total_before, "
        "discount_amount, total_after, within_budget, voucher_applied, budget}."
    ),
    params=(
        Param(
            name="product_prices",
            type="string",
            required=True,
            list_as_csv=True,
            description="Comma-separated prices, e.g. '120.5,80'.",
        ),
        Param(
            name="voucher_type",
            type="string",
            required=True,
            enum=("fixed", "percentage"),
            description="How the discount is expressed: 'fixed' amount or 'percentage'.",
        ),
        Param(
            name="discount_value",
            type="number",
            required=True,
            description="Fixed amount off, or the percentage (35 or 0.35 for 35%).",
        ),
        Param(name="threshold", type="number", required=True, description="Minimum total for the voucher."),
        Param(name="budget", type="number", required=True, description="The user's budget."),
        Param(
            name="cap",
            type="number",
            default=0,
            description="Largest discount of a percentage voucher (0 = no cap).",
        ),
    ),
)

VIEW_SHOP_INFORMATION = ToolSpec(
    name="view_shop_information",
    description="A shop's record: shop_id, name, rating (0-5), official flag and product_count.",
    params=(Param(name="shop_id", type="string", required=True, description="The shop id."),),
)

VIEW_VOUCHER_INFORMATION = ToolSpec(
    name="view_voucher_information",
    description=(
        "The voucher of this task, if it has one: voucher_type (platform or shop), discount_type (fixed "
        "or percentage), threshold, face_value, discount (a fraction), cap and budget."
    ),
    params=(),
)

TOOL_SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        FIND_PRODUCT,
        VIEW_PRODUCT_INFORMATION,
        RECOMMEND_PRODUCT,
        TERMINATE,
        CHECK_PRODUCT_MATCH,
        FIND_PRODUCTS_IN_SAME_SHOP,
        CALCULATE_VOUCHER,
        VIEW_SHOP_INFORMATION,
        VIEW_VOUCHER_INFORMATION,
    )
}

_UPSTREAM4 = ("find_product", "view_product_information", "recommend_product", "terminate")
_ORO7 = (*_UPSTREAM4, "check_product_match", "find_products_in_same_shop", "calculate_voucher")
PROFILES: dict[str, tuple[str, ...]] = {
    "upstream4": _UPSTREAM4,
    "oro7": _ORO7,
    "full": (*_ORO7, "view_shop_information", "view_voucher_information"),
}
DEFAULT_STEP_CAPS: dict[str, int] = {"upstream4": 30, "oro7": 25, "full": 25}
"""Upstream's ReAct loop allows 30 steps; the arena's (ORO) template 25."""


class ProfileError(ValueError):
    pass


def profile_tools(profile: str) -> tuple[str, ...]:
    try:
        return PROFILES[profile]
    except KeyError:
        raise ProfileError(f"unknown profile {profile!r}; use one of {', '.join(PROFILES)}") from None


def tool_schemas(profile: str) -> list[dict]:
    """The OpenAI function-calling `tools` list of a profile, in a stable order."""
    return [TOOL_SPECS[name].schema() for name in profile_tools(profile)]
