"""Session-wide fixtures: one real generated catalogue, built once and shared read-only."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoparena.index.catalog_dir import build_synthetic, open_catalog

UPSTREAM_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "upstream"
SMALL_CATALOG_SIZE = 5000
SMALL_CATALOG_SEED = 11


@pytest.fixture(scope="session")
def upstream_dir() -> Path:
    if not UPSTREAM_DIR.exists():
        pytest.fail(f"upstream task files not found at {UPSTREAM_DIR} (the repo expects ../shared beside it)")
    return UPSTREAM_DIR


@pytest.fixture(scope="session")
def small_catalog_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("catalog") / "small"
    build_synthetic(out, SMALL_CATALOG_SIZE, seed=SMALL_CATALOG_SEED, workers=1)
    return out


@pytest.fixture(scope="session")
def small_catalog(small_catalog_dir):
    catalog = open_catalog(small_catalog_dir)
    yield catalog
    catalog.close()
