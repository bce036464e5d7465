"""What several benchmarks share: where built catalogues are kept and how latencies are summarised."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from rich.console import Console

from shoparena.index.catalog_dir import build_synthetic, read_meta

BENCH_ROOT = Path("/tmp/shoparena-bench")
"""Catalogues built by one benchmark are reused by the others (search_bench builds cat-<N> here)."""


def bench_catalogue(products: int, explicit: str | Path | None, tag: str, console: Console) -> Path:
    """An explicit dir; else the shared build of that size; else this benchmark's own build (made once)."""
    if explicit:
        return Path(explicit)
    own = BENCH_ROOT / f"{tag}-cat-{products}"
    for candidate in (BENCH_ROOT / f"cat-{products}", own):
        if (candidate / "meta.json").exists() and read_meta(candidate).n_products == products:
            return candidate
    console.print(f"building a {products:,}-product catalogue in {own} (once) ...")
    started = time.perf_counter()
    build_synthetic(own, products, seed=0, overwrite=True)
    console.print(f"built in {time.perf_counter() - started:.1f} s")
    return own


def percentiles(samples: list[float]) -> dict:
    """p50/p95/p99/mean in ms of latencies given in seconds (nearest-rank, as every benchmark reports)."""
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return {
        "n": len(samples),
        "p50_ms": round(at(0.50), 4),
        "p95_ms": round(at(0.95), 4),
        "p99_ms": round(at(0.99), 4),
        "mean_ms": round(statistics.fmean(samples) * 1000, 4),
    }
