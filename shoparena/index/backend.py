"""The one interface every catalogue search backend implements (embedded tantivy, Elasticsearch)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from shoparena.catalog.models import Product


@runtime_checkable
class CatalogBackend(Protocol):
    """Search and lookup over one catalogue; what the harness's tools call."""

    def find_product(
        self,
        q: str,
        page: int = 1,
        shop_id: str | None = None,
        price: str | None = None,
        sort: str | None = None,
        service: str | Sequence[str] | None = None,
    ) -> list[dict]:
        """Upstream find_product: a page of ≤10 hits with product_id, shop_id, title, price, service, sold_count."""
        ...

    def get_product(self, product_id: str) -> Product | None:
        """The full record for one id, or None when the catalogue has no such product."""
        ...

    def get_products(self, product_ids: Iterable[str]) -> dict[str, Product]:
        """Full records for the ids that exist (missing ids are simply absent)."""
        ...

    def products_in_shop(self, shop_id: str, limit: int = 1000) -> list[dict]:
        """Up to `limit` full product records (dicts) of one shop, in build order."""
        ...

    def __len__(self) -> int: ...

    def close(self) -> None: ...
