"""The sandbox gate for tests that run miner files: they run in the real sandbox, so they fail where it
is missing, unless the machine is declared unable to sandbox (tests/sandbox/conftest.py); and the one
generated catalogue and problems the file-agent and inference-proxy tests share (read-only)."""

import pytest

from shoparena.index.catalog_dir import build_synthetic, open_catalog
from shoparena.problems.generator import ProblemGenerator
from tests.sandbox.conftest import sandbox_ready  # noqa: F401  (a fixture, shared)


@pytest.fixture(scope="session")
def agent_catalog_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("agent-cat") / "c"
    build_synthetic(path, 2000, seed=5, workers=1)
    return path


@pytest.fixture(scope="session")
def agent_catalog(agent_catalog_dir):
    catalog = open_catalog(agent_catalog_dir)
    yield catalog
    catalog.close()


@pytest.fixture(scope="session")
def agent_problems(agent_catalog):
    return ProblemGenerator(agent_catalog, seed=3).generate(3, buckets=("product", "shop", "voucher"))
