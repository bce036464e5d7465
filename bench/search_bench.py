"""Catalogue search benchmark: shoparena's embedded engine vs SQLite FTS5, side by side in one run.

    .venv/bin/python bench/search_bench.py                      # 100k, 1M and 2.7M products
    .venv/bin/python bench/search_bench.py --sizes 100000       # one size

For each size: generate + index time, peak RSS of the whole process tree during the build, index and
store size, and p50/p95/p99 latency of three query kinds from a realistic mix (free text; price +
service filtered; shop filtered), for shoparena (tantivy + LMDB, full find_product page including
the record fetch) and for the peer (SQLite FTS5 with its bm25 rank, filters in SQL, same contents and
stemming). Both engines answer the same queries in the same process, interleaved, so the ratio holds
on a noisy machine. Results: a table on stdout and bench/out/search_bench-<size>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import contextlib

from bench.common import percentiles
from shoparena.catalog.models import SERVICES, build_contents
from shoparena.index.catalog_dir import build_synthetic, open_catalog, read_meta

TARGETS = {"build_s": 180.0, "peak_rss_mb": 2048.0, "p50_ms": 10.0, "p99_ms": 50.0}


class PeakRss:
    """Samples the RSS of this process and all its children; the max of the sum is the peak."""

    def __init__(self, interval: float = 0.05):
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        me = psutil.Process()
        while not self._stop.is_set():
            total = 0
            for proc in [me, *me.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    total += proc.memory_info().rss
            self.peak = max(self.peak, total)
            time.sleep(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def make_queries(catalog, n: int, seed: int) -> list[dict]:
    """Agent-like queries drawn from real listings: 2–5 title words, sometimes an attribute value."""
    rng = random.Random(seed)
    store = catalog.store
    queries = []
    for _ in range(n):
        product = store.dict_by_ord(rng.randrange(len(store)))
        words = [w for w in product["title"].split() if w.isascii() and len(w) > 2]
        k = min(len(words), rng.randint(2, 5))
        text_words = rng.sample(words, k) if k else ["bag"]
        attrs = [v for vals in product["attributes"].values() for v in vals]
        if attrs and rng.random() < 0.4:
            text_words.append(rng.choice(attrs))
        text = " ".join(text_words)
        price = product["price"]
        low = max(0, int(price * rng.uniform(0.3, 0.9)))
        high = int(price * rng.uniform(1.1, 3.0)) + 1
        service = [rng.choice(product["service"] or ["COD"])]
        queries.append(
            {
                "text": text,
                "price": f"{low}-{high}" if rng.random() < 0.8 else f"{low}-",
                "service": service,
                "shop_id": product["shop_id"],
                "shop_text": " ".join(text_words[:2]),
            }
        )
    return queries


# -- SQLite FTS5 peer ---------------------------------------------------------------------------
SERVICE_BITS = {flag: 1 << i for i, flag in enumerate(SERVICES)}


def build_fts(path: Path, catalog) -> float:
    if path.exists():
        path.unlink()
    started = time.perf_counter()
    db = sqlite3.connect(path)
    db.executescript(
        """
        PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;
        CREATE VIRTUAL TABLE fts USING fts5(contents, tokenize='porter unicode61');
        CREATE TABLE meta(rowid INTEGER PRIMARY KEY, product_id TEXT, shop_id TEXT, title TEXT,
                          price REAL, service INTEGER, sold_count INTEGER);
        """
    )
    batch_fts, batch_meta = [], []
    for rowid, product in enumerate(catalog.store.iter_dicts(), start=1):
        contents = build_contents(product["title"], product["sku_options"], product["attributes"])
        bits = sum(SERVICE_BITS[s] for s in product["service"])
        batch_fts.append((rowid, contents))
        batch_meta.append(
            (
                rowid,
                product["product_id"],
                product["shop_id"],
                product["title"],
                product["price"],
                bits,
                product["sold_count"],
            )
        )
        if len(batch_fts) >= 50_000:
            db.executemany("INSERT INTO fts(rowid, contents) VALUES (?, ?)", batch_fts)
            db.executemany("INSERT INTO meta VALUES (?, ?, ?, ?, ?, ?, ?)", batch_meta)
            batch_fts, batch_meta = [], []
    db.executemany("INSERT INTO fts(rowid, contents) VALUES (?, ?)", batch_fts)
    db.executemany("INSERT INTO meta VALUES (?, ?, ?, ?, ?, ?, ?)", batch_meta)
    db.execute("CREATE INDEX meta_shop ON meta(shop_id)")
    db.commit()
    db.execute("INSERT INTO fts(fts) VALUES ('optimize')")
    db.commit()
    db.close()
    return time.perf_counter() - started


def fts_match(text: str) -> str | None:
    tokens = [t for t in "".join(c if c.isalnum() else " " for c in text.lower()).split() if t]
    return " OR ".join(f'"{t}"' for t in dict.fromkeys(tokens)) or None


def fts_search(db, text, price=None, service=(), shop_id=None) -> list:
    match = fts_match(text)
    if match is None:
        return []
    sql = (
        "SELECT m.product_id, m.shop_id, m.title, m.price, m.service, m.sold_count FROM fts "
        "JOIN meta m ON m.rowid = fts.rowid WHERE fts MATCH ?"
    )
    args: list = [match]
    if price:
        low, _, high = price.partition("-")
        sql += " AND m.price >= ?"
        args.append(float(low or 0))
        if high:
            sql += " AND m.price <= ?"
            args.append(float(high))
    if service:
        bits = sum(SERVICE_BITS[s] for s in service)
        sql += " AND (m.service & ?) = ?"
        args += [bits, bits]
    if shop_id:
        sql += " AND m.shop_id = ?"
        args.append(shop_id)
    sql += " ORDER BY fts.rank LIMIT 50"
    return db.execute(sql, args).fetchall()[:10]


def run_size(
    n: int, work: Path, n_queries: int, seed: int, rebuild: bool, skip_peer: bool, peer_every: int = 10
) -> dict:
    cat_dir = work / f"cat-{n}"
    result: dict = {"products": n}
    if rebuild or not (cat_dir / "meta.json").exists():
        with PeakRss() as rss:
            started = time.perf_counter()
            build_synthetic(cat_dir, n, seed=seed, overwrite=True)
            result["build_s"] = time.perf_counter() - started
        result["peak_rss_mb"] = rss.peak / 2**20
    else:
        result["build_s"] = read_meta(cat_dir).build_seconds
        result["peak_rss_mb"] = None
        result["note"] = "catalogue reused; build figures from its meta.json, RSS not measured"
    meta = read_meta(cat_dir)
    result["index_mb"] = meta.index_bytes / 2**20
    result["store_mb"] = meta.store_bytes / 2**20
    catalog = open_catalog(cat_dir)
    queries = make_queries(catalog, n_queries, seed + 1)
    db = None
    if not skip_peer:
        fts_path = work / f"fts-{n}.sqlite"
        result["peer_build_s"] = build_fts(fts_path, catalog)
        result["peer_index_mb"] = fts_path.stat().st_size / 2**20
        db = sqlite3.connect(fts_path)
    kinds = {
        "unfiltered": lambda q: {"q": q["text"]},
        "price+service": lambda q: {"q": q["text"], "price": q["price"], "service": q["service"]},
        "shop": lambda q: {"q": q["shop_text"], "shop_id": q["shop_id"]},
    }
    for kind, make in kinds.items():
        ours, peer = [], []
        for q in queries[:50]:  # warm-up: page cache and code paths
            args = make(q)
            catalog.find_product(**args)
            if db is not None:
                fts_search(db, args["q"], args.get("price"), args.get("service", ()), args.get("shop_id"))
        for i, q in enumerate(queries):
            args = make(q)
            started = time.perf_counter()
            catalog.find_product(**args)
            ours.append(time.perf_counter() - started)
            if db is not None and i % peer_every == 0:  # the peer is ~100x slower at 2.7M: sample it
                started = time.perf_counter()
                fts_search(db, args["q"], args.get("price"), args.get("service", ()), args.get("shop_id"))
                peer.append(time.perf_counter() - started)
        result[kind] = {"shoparena": percentiles(ours)}
        if peer:
            result[kind]["sqlite_fts5"] = percentiles(peer)
    catalog.close()
    return result


def verdicts(result: dict) -> list[str]:
    lines = []
    build = result["build_s"]
    lines.append(
        f"generate+index {build:.1f}s (target ≤ {TARGETS['build_s']:.0f}s): {'MET' if build <= TARGETS['build_s'] else 'MISSED'}"
    )
    rss = result.get("peak_rss_mb")
    if rss is not None:
        lines.append(
            f"peak RSS {rss:.0f} MB (target ≤ 2048): {'MET' if rss <= TARGETS['peak_rss_mb'] else 'MISSED'}"
        )
    for kind in ("unfiltered", "price+service", "shop"):
        ours = result[kind]["shoparena"]
        ok = ours["p50_ms"] <= TARGETS["p50_ms"] and ours["p99_ms"] <= TARGETS["p99_ms"]
        line = (
            f"{kind}: p50 {ours['p50_ms']:.2f} ms, p99 {ours['p99_ms']:.2f} ms: {'MET' if ok else 'MISSED'}"
        )
        if "sqlite_fts5" in result[kind]:
            peer = result[kind]["sqlite_fts5"]
            line += (
                f"; peer p50 {peer['p50_ms']:.2f} ms → {peer['p50_ms'] / ours['p50_ms']:.1f}× faster"
                if ours["p50_ms"] < peer["p50_ms"]
                else f"; peer p50 {peer['p50_ms']:.2f} ms → SLOWER than peer"
            )
        lines.append(line)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100000,1000000,2700000", help="comma-separated catalogue sizes")
    parser.add_argument("--queries", type=int, default=2000, help="queries per kind")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--work", type=Path, default=Path("/tmp/shoparena-bench"), help="where catalogues are kept"
    )
    parser.add_argument("--reuse", action="store_true", help="reuse catalogues already built in --work")
    parser.add_argument("--no-peer", action="store_true", help="skip the SQLite FTS5 peer")
    parser.add_argument(
        "--peer-every", type=int, default=10, help="run the peer on every k-th query (it is slow)"
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    out_dir = Path(__file__).parent / "out"
    out_dir.mkdir(exist_ok=True)
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB"
    for size in [int(s) for s in args.sizes.split(",")]:
        print(f"== {size:,} products ({machine})", flush=True)
        result = run_size(
            size, args.work, args.queries, args.seed, rebuild=not args.reuse, skip_peer=args.no_peer
        )
        result["machine"] = machine
        result["date"] = datetime.now(UTC).isoformat(timespec="seconds")
        for line in verdicts(result):
            print("  " + line)
        print(json.dumps(result, indent=1), flush=True)
        (out_dir / f"search_bench-{size}.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
