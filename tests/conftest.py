"""Session-wide fixtures: one real generated catalogue, built once and shared read-only."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from shoparena.index.catalog_dir import build_synthetic, open_catalog

REPO = Path(__file__).resolve().parents[1]
UPSTREAM_RELATIVE = Path("shared") / "data" / "upstream"


def find_upstream_dir() -> Path | None:
    """The real task files: $SHOPARENA_UPSTREAM_DIR, else `shared/` beside this checkout or beside the
    repository it was cloned from (a clone made elsewhere, e.g. in /tmp, still finds them)."""
    if os.environ.get("SHOPARENA_UPSTREAM_DIR"):
        return Path(os.environ["SHOPARENA_UPSTREAM_DIR"])
    candidates = [REPO.parent / UPSTREAM_RELATIVE]
    try:
        origin = subprocess.run(
            ["git", "-C", str(REPO), "config", "--get", "remote.origin.url"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        origin = ""
    if origin and Path(origin).is_dir():
        candidates.append(Path(origin).resolve().parent / UPSTREAM_RELATIVE)
    return next((c for c in candidates if c.is_dir()), None)


UPSTREAM_DIR = find_upstream_dir()
SMALL_CATALOG_SIZE = 5000
SMALL_CATALOG_SEED = 11


@pytest.fixture(scope="session")
def upstream_dir() -> Path:
    if UPSTREAM_DIR is None:
        pytest.fail(
            "upstream task files not found: put shared/ beside the checkout or set SHOPARENA_UPSTREAM_DIR"
        )
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
