"""Session-wide fixtures, built once and shared read-only: the real generated catalogues, the problems on
them, the tiny Qwen3 checkpoints, and the gate of every test that runs miner files in the sandbox.

A session fixture lives here, not imported into test modules: pytest builds an imported one again for
each module that imports it. Under pytest-xdist each worker is its own session; what takes long to make
(the tiny checkpoints) is made once for all workers by `built_once`."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from shoparena.index.catalog_dir import build_synthetic, open_catalog
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from shoparena.sandbox import SandboxUnavailable, check_sandbox, run_sandboxed
from tests.browser import chromium, shots  # noqa: F401 (fixtures: headless Chromium, where screenshots go)
from tests.sandbox.conftest import SMALL

# `make test` runs two xdist workers on two cores: torch's OpenMP pool, sized to every core in each
# worker (and in the servers and workers they start), makes the two fight over the cores and spin, twice
# the CPU for the same result. One thread each, unless the caller chose otherwise; set before torch loads.
os.environ.setdefault("OMP_NUM_THREADS", "1")

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
SANDBOX_UNAVAILABLE_ENV = "SHOPARENA_SANDBOX_UNAVAILABLE"
SMALL_CATALOG_SIZE = 5000
SMALL_CATALOG_SEED = 11


def built_once(tmp_path_factory, name: str, build: Callable[[Path], object]) -> Path:
    """`build(path)` run once for the whole test run, its result at the returned path (read-only).

    Under pytest-xdist the workers share the run's temporary root (the parent of their own basetemps):
    the first to take the lock builds into a scratch directory and renames it into place, the others wait
    on the lock and reuse it. Without xdist this is the session's own basetemp."""
    basetemp = tmp_path_factory.getbasetemp()
    root = basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp
    done = root / "built-once" / name
    done.parent.mkdir(parents=True, exist_ok=True)
    with open(done.with_name(f"{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this worker dies
        if not done.is_dir():
            scratch = done.with_name(f"{name}.building")
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
            build(scratch / "out")
            (scratch / "out").rename(done)
            shutil.rmtree(scratch)
    return done


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


@pytest.fixture(scope="session")
def problems_file(small_catalog, tmp_path_factory) -> Path:
    """Six problems on the small catalogue: the bank of the arena and season tests."""
    path = tmp_path_factory.mktemp("bank") / "bank.jsonl"
    write_problems(path, ProblemGenerator(small_catalog, seed=3).generate(6))
    return path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A tiny Qwen3 checkpoint made by the real `make_tiny_model` (tens of seconds on a busy CPU: made
    once for every worker), for the renderer, the training stages and the model server."""
    from shoparena.train.tiny_model import TinyModelConfig, make_tiny_model

    return built_once(
        tmp_path_factory, "tiny-model", lambda out: make_tiny_model(TinyModelConfig(out=out, seed=0))
    )


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="session")
def tiny_qwen3(tmp_path_factory, small_catalog) -> str:
    """A random-weight Qwen3 with a tokenizer trained on the small catalogue's titles, for the hf agent
    and the eval's protocol tests (made once for every worker)."""
    pytest.importorskip("transformers")
    from tests.agents.tiny_qwen3 import save_tiny_qwen3

    return str(built_once(tmp_path_factory, "tiny-qwen3", lambda out: save_tiny_qwen3(out, small_catalog)))


@pytest.fixture(scope="session")
def agent_catalog_dir(tmp_path_factory) -> Path:
    """The catalogue of the agent, eval and inference tests (smaller than `small_catalog_dir`)."""
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


@pytest.fixture(scope="session")
def sandbox_ready() -> None:
    """Tests that run untrusted code must fail where the sandbox is missing, unless the machine is
    declared unable to sandbox (`SHOPARENA_SANDBOX_UNAVAILABLE=<why>`), which skips them with that reason."""
    reason = os.environ.get(SANDBOX_UNAVAILABLE_ENV)
    if reason:
        pytest.skip(f"{SANDBOX_UNAVAILABLE_ENV}: {reason}")
    try:
        check_sandbox()
        outcome = run_sandboxed("print('ok')", limits=SMALL)
    except SandboxUnavailable as exc:
        pytest.fail(
            f"the sandbox is unavailable on this machine: {exc}. Set {SANDBOX_UNAVAILABLE_ENV}=<reason> only "
            "on a machine that cannot sandbox; the escape tests then skip.",
            pytrace=False,
        )
    assert outcome.ok and outcome.stdout == "ok\n", outcome
