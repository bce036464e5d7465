"""Same-run A/B of `find_product`: the embedded engine of this tree against the one of a git revision.

    .venv/bin/python bench/search_ab.py --base 3ae2a60              # 100k catalogue, 2,000 queries a kind
    .venv/bin/python bench/search_ab.py --base HEAD~1 --products 20000

A change to the search path is judged against its parent on a shared, noisy machine, so both run in
one process on one catalogue and alternate query by query (A then B, B then A), never in two runs that
the machine's load could tell apart. The base is the revision's `shoparena/index/tantivy_backend.py`
loaded beside the current one (it must open the current catalogue format). Query mix and catalogue:
those of `search_bench.py`. Results: a table on stdout and bench/out/search_ab-<size>.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import BENCH_ROOT, percentiles
from bench.search_bench import make_queries
from shoparena.index.catalog_dir import build_synthetic, read_meta
from shoparena.index.catalog_files import INDEX_DIR, STORE_DIR
from shoparena.index.product_store import ProductStore
from shoparena.index.tantivy_backend import TantivyCatalog

REPO = Path(__file__).resolve().parents[1]
MODULE = "shoparena/index/tantivy_backend.py"
KINDS = {
    "unfiltered": lambda q: {"q": q["text"]},
    "price+service": lambda q: {"q": q["text"], "price": q["price"], "service": q["service"]},
    "shop": lambda q: {"q": q["shop_text"], "shop_id": q["shop_id"]},
    "sorted (priceasc)": lambda q: {"q": q["text"], "sort": "priceasc"},
}


def base_backend(revision: str, work: Path):
    """The `TantivyCatalog` class as it was at `revision`, imported under a name of its own."""
    source = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{revision}:{MODULE}"], capture_output=True, text=True, check=True
    ).stdout
    path = work / "base_tantivy_backend.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("base_tantivy_backend", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.TantivyCatalog


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="git revision to compare against (e.g. HEAD~1)")
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=2000, help="queries per kind")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=BENCH_ROOT, help="where catalogues are kept")
    args = parser.parse_args()
    cat_dir = args.work / f"cat-{args.products}"
    if not (cat_dir / "meta.json").exists() or read_meta(cat_dir).n_products != args.products:
        print(f"building a {args.products:,}-product catalogue in {cat_dir} ...", flush=True)
        build_synthetic(cat_dir, args.products, seed=args.seed, overwrite=True)
    with tempfile.TemporaryDirectory() as work:
        base_class = base_backend(args.base, Path(work))
        sides = {
            "base": base_class(cat_dir / INDEX_DIR, ProductStore(cat_dir / STORE_DIR)),
            "this tree": TantivyCatalog(cat_dir / INDEX_DIR, ProductStore(cat_dir / STORE_DIR)),
        }
        queries = make_queries(sides["this tree"], args.queries, args.seed + 1)
        result: dict = {"products": args.products, "base": args.base, "queries_per_kind": args.queries}
        for kind, make in KINDS.items():
            times: dict[str, list[float]] = {name: [] for name in sides}
            for query in queries[:50]:  # warm-up
                for backend in sides.values():
                    backend.find_product(**make(query))
            for i, query in enumerate(queries):
                order = list(sides.items()) if i % 2 == 0 else list(reversed(sides.items()))
                for name, backend in order:
                    started = time.perf_counter()
                    backend.find_product(**make(query))
                    times[name].append(time.perf_counter() - started)
            result[kind] = {name: percentiles(samples) for name, samples in times.items()}
            base, ours = result[kind]["base"], result[kind]["this tree"]
            print(
                f"{kind:18s} p50 {base['p50_ms']:.3f} → {ours['p50_ms']:.3f} ms "
                f"({ours['p50_ms'] / base['p50_ms'] - 1:+.0%}); p95 {base['p95_ms']:.2f} → {ours['p95_ms']:.2f}; "
                f"mean {base['mean_ms']:.3f} → {ours['mean_ms']:.3f}",
                flush=True,
            )
        for backend in sides.values():
            backend.close()
    result["date"] = datetime.now(UTC).isoformat(timespec="seconds")
    out_dir = Path(__file__).parent / "out"
    out_dir.mkdir(exist_ok=True)
    (out_dir / f"search_ab-{args.products}.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
