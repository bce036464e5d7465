"""One real generated catalogue per test session, shared by every harness test."""

from __future__ import annotations

import pytest

from shoparena.harness import Episode, load_shops
from shoparena.index.catalog_dir import build_synthetic, open_catalog


@pytest.fixture(scope="session")
def catalog_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("harness-cat") / "c"
    build_synthetic(path, 3000, seed=7, workers=1)
    return path


@pytest.fixture(scope="session")
def backend(catalog_dir):
    catalog = open_catalog(catalog_dir)
    yield catalog
    catalog.close()


@pytest.fixture(scope="session")
def shops(catalog_dir):
    return load_shops(catalog_dir)


@pytest.fixture(scope="session")
def products(backend):
    """Every product record of the catalogue, in build order."""
    return [backend.store.dict_by_ord(i) for i in range(len(backend))]


@pytest.fixture(scope="session")
def rich_product(products):
    """A product with several attributes and SKU options (for match checks)."""
    return next(p for p in products if len(p["attributes"]) >= 2 and len(p["sku_options"]) >= 2)


@pytest.fixture
def episode(backend, shops):
    return Episode(backend, "a test query", profile="full", shops=shops)
