"""Harness per-call overhead: every tool timed through the full `Episode.call` path on a real catalogue.

    .venv/bin/python bench/harness_bench.py                         # 100k products (built once, cached)
    .venv/bin/python bench/harness_bench.py --products 2700000      # the upstream catalogue's size
    .venv/bin/python bench/harness_bench.py --catalog /tmp/shoparena-bench/cat-2700000   # reuse a build

What one call costs the harness beyond the model: argument checking, the tool itself (LMDB point reads,
pydantic records, voucher arithmetic), the observation text, the call record and the trace message.
Each sample is the wall time of one `Episode.call` (perf_counter), with a fresh episode every 25 calls
as in real episodes (recommend_product and terminate get a fresh one every call: they are once per
episode). Target: p50 ≤ 1 ms for every non-search tool; find_product and find_products_in_same_shop
are reported for reference (they are BM25 searches). Results: a table on stdout and
bench/out/harness_bench-<size>.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from bench.common import bench_catalogue, percentiles
from shoparena.harness import Episode, load_shops
from shoparena.index.catalog_dir import open_catalog, read_meta

TARGET_P50_MS = 1.0
NON_SEARCH = (
    "view_product_information",
    "check_product_match",
    "calculate_voucher",
    "recommend_product",
    "terminate",
)
EPISODE_LENGTH = 25
console = Console(width=max(120, Console().width))


def time_calls(
    make_episode: Callable[[], Episode],
    name: str,
    arguments: Callable[[int], dict],
    n: int,
    per_episode: int = EPISODE_LENGTH,
    warmup: int = 50,
) -> list[float]:
    samples: list[float] = []
    episode = make_episode()
    calls_in_episode = 0
    failures = 0
    gc.collect()
    for i in range(-warmup, n):
        if calls_in_episode >= per_episode:
            episode, calls_in_episode = make_episode(), 0
        args = arguments(i)
        started = time.perf_counter()
        observation = episode.call(name, args)
        elapsed = time.perf_counter() - started
        calls_in_episode += 1
        if not observation.ok:
            failures += 1
        if i >= 0:
            samples.append(elapsed)
    if failures:
        raise SystemExit(f"{name}: {failures} calls failed; the benchmark inputs are wrong")
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--products", type=int, default=100_000, help="catalogue size (default 100000; 2700000 supported)"
    )
    parser.add_argument("--catalog", help="reuse a built catalogue directory")
    parser.add_argument("--calls", type=int, default=5000, help="timed calls per non-search tool")
    parser.add_argument("--search-calls", type=int, default=1000, help="timed calls per search tool")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "out"))
    args = parser.parse_args()

    directory = bench_catalogue(args.products, args.catalog, "harness", console)
    meta = read_meta(directory)
    backend = open_catalog(directory)
    shops = load_shops(directory)
    rng = random.Random(args.seed)
    sample = [backend.store.dict_by_ord(rng.randrange(len(backend))) for _ in range(2000)]
    with_attributes = [p for p in sample if p["attributes"]] or sample

    def make_episode() -> Episode:
        return Episode(backend, "benchmark query", profile="full", shops=shops)

    def pick(i: int) -> dict:
        return sample[i % len(sample)]

    def view_args(i: int) -> dict:
        return {"product_ids": ",".join(pick(i + k)["product_id"] for k in range(3))}

    def match_args(i: int) -> dict:
        product = with_attributes[i % len(with_attributes)]
        requirements = {key: values[0] for key, values in list(product["attributes"].items())[:3]}
        requirements["colour"] = "ultraviolet"
        return {"product_id": product["product_id"], "requirements": json.dumps(requirements)}

    def voucher_args(i: int) -> dict:
        prices = [pick(i + k)["price"] for k in range(1 + i % 4)]
        return {
            "product_prices": ",".join(str(p) for p in prices),
            "voucher_type": "percentage" if i % 2 else "fixed",
            "discount_value": 20 if i % 2 else 50,
            "threshold": round(sum(prices) * 0.5, 2),
            "budget": round(sum(prices), 2),
            "cap": 100,
        }

    def search_args(i: int) -> dict:
        words = pick(i)["title"].split()
        return {"q": " ".join(words[: 2 + i % 3]), "page": 1 + i % 2}

    def same_shop_args(i: int) -> dict:
        return {"product_queries": [{"q": " ".join(pick(i + k)["title"].split()[:3])} for k in range(2)]}

    plans: list[tuple[str, str, Callable[[int], dict], int, int]] = [
        (
            "view_product_information (3 ids)",
            "view_product_information",
            view_args,
            args.calls,
            EPISODE_LENGTH,
        ),
        ("check_product_match (4 reqs)", "check_product_match", match_args, args.calls, EPISODE_LENGTH),
        ("calculate_voucher (1-4 prices)", "calculate_voucher", voucher_args, args.calls, EPISODE_LENGTH),
        ("recommend_product", "recommend_product", view_args, args.calls, 1),
        ("terminate", "terminate", lambda i: {"status": "success"}, args.calls, 1),
        ("find_product (reference)", "find_product", search_args, args.search_calls, EPISODE_LENGTH),
        (
            "find_products_in_same_shop (reference)",
            "find_products_in_same_shop",
            same_shop_args,
            max(50, args.search_calls // 10),
            EPISODE_LENGTH,
        ),
    ]
    # The inputs must exercise the real work, not an early exit: check what the first calls return.
    probe = make_episode()
    assert len(probe.call("view_product_information", view_args(0)).result) == 3
    assert probe.call("check_product_match", match_args(0)).result["matches"]
    assert probe.call("calculate_voucher", voucher_args(1)).result["voucher_applied"]
    assert probe.call("find_product", search_args(0)).result

    results = {}
    for label, name, arguments, n, per_episode in plans:
        stats = percentiles(time_calls(make_episode, name, arguments, n, per_episode))
        stats["tool"] = name
        if name in NON_SEARCH:
            stats["meets_target"] = stats["p50_ms"] <= TARGET_P50_MS
        results[label] = stats

    table = Table(title=f"Episode.call overhead, {meta.n_products:,} products ({directory})")
    for column in ("call", "n", "p50 ms", "p95 ms", "p99 ms", "mean ms", f"p50 ≤ {TARGET_P50_MS} ms"):
        table.add_column(column, justify="left" if column == "call" else "right", no_wrap=True)
    for label, stats in results.items():
        verdict = {True: "[green]yes[/]", False: "[red]NO[/]"}.get(stats.get("meets_target"), "-")
        table.add_row(
            label,
            str(stats["n"]),
            f"{stats['p50_ms']:.3f}",
            f"{stats['p95_ms']:.3f}",
            f"{stats['p99_ms']:.3f}",
            f"{stats['mean_ms']:.3f}",
            verdict,
        )
    console.print(table)

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    out_file = out_dir / f"harness_bench-{meta.n_products}.json"
    report = {
        "bench": "harness_bench",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "processor": platform.processor(),
        },
        "catalogue": {
            "dir": str(directory),
            "n_products": meta.n_products,
            "source": meta.source,
            "n_shops": meta.n_shops,
        },
        "target_p50_ms": TARGET_P50_MS,
        "all_non_search_meet_target": all(s.get("meets_target", True) for s in results.values()),
        "results": results,
    }
    out_file.write_text(json.dumps(report, indent=2))
    console.print(f"wrote {out_file}")
    backend.close()


if __name__ == "__main__":
    main()
