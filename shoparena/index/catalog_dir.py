"""A catalogue directory: the search index, the product store, shops and a manifest, built in one pass.

Layout of DIR:
  meta.json        what was built, from what, when, and how big (CatalogMeta)
  index/           tantivy BM25 index (ord, price, sold_count fast fields; shop_id, service terms)
  products.lmdb/   product store: ord → product JSON, product_id → ord
  shops.jsonl      one Shop per line
  rejects.jsonl    catalogue lines that were skipped, with line number and reason (file builds only)
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson
from pydantic import BaseModel

from shoparena.catalog.generator import GENERATOR_VERSION, CatalogGenerator
from shoparena.catalog.loader import LoadReport, iter_catalog
from shoparena.catalog.models import Shop, build_contents
from shoparena.index.product_store import ProductStore, ProductStoreWriter
from shoparena.index.tantivy_backend import TantivyCatalog, open_tantivy_index

FORMAT_VERSION = 1
META_FILE = "meta.json"
INDEX_DIR = "index"
STORE_DIR = "products.lmdb"
SHOPS_FILE = "shops.jsonl"
REJECTS_FILE = "rejects.jsonl"
WRITER_HEAP = 256 * 1024 * 1024

Progress = Callable[[int], None]


class CatalogMeta(BaseModel):
    format_version: int = FORMAT_VERSION
    n_products: int
    n_shops: int
    n_rejected: int = 0
    n_duplicates: int = 0
    source: str
    generator: str | None = None
    seed: int | None = None
    built_at: str
    build_seconds: float
    index_bytes: int = 0
    store_bytes: int = 0


class CatalogDirError(ValueError):
    """A directory that is not a usable catalogue; the message says what is missing."""


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _prepare(out: Path, overwrite: bool) -> None:
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise CatalogDirError(f"{out} is not empty; pass overwrite (--force) to replace it")
        if not (out / META_FILE).exists():
            raise CatalogDirError(f"{out} is not empty and is not a catalogue; refusing to delete it")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


def _partial_doc(product: dict, contents: str) -> bytes:
    """Index JSON without the ord (added by the single writer, which alone knows it)."""
    return orjson.dumps(
        {
            "contents": contents,
            "price": float(product["price"]),
            "sold_count": int(product.get("sold_count") or 0),
            "shop_id": product["shop_id"],
            "service": product.get("service") or [],
        }
    )


class IndexLayout(BaseModel):
    """How the index writer cuts segments. Pages never depend on it (ties go by catalogue order); tests
    vary it to prove that, since the default (one segment per writer thread) differs between machines."""

    writer_threads: int | None = None  # None: min(2, cores)
    commit_every: int | None = None  # None: one commit at the end


Row = tuple[str, str, bytes, bytes]  # product_id, shop_id, product JSON, partial index JSON


def _ingest(
    out: Path, rows: Iterable[Row], progress: Progress | None, layout: IndexLayout | None = None
) -> tuple[int, int, Counter]:
    """Write rows into the store and the index; returns (stored, duplicates, products per shop)."""
    layout = layout or IndexLayout()
    index = open_tantivy_index(out / INDEX_DIR, create=True)
    threads = layout.writer_threads or min(2, os.cpu_count() or 1)
    writer = index.writer(heap_size=WRITER_HEAP, num_threads=threads)
    since_commit = 0
    store = ProductStoreWriter(out / STORE_DIR)
    duplicates = 0
    per_shop: Counter = Counter()
    try:
        for product_id, shop_id, product_json, partial in rows:
            ordinal = store.add(product_id, product_json)
            if ordinal is None:
                duplicates += 1
                continue
            writer.add_json(f'{{"ord":{ordinal},{partial[1:].decode()}')
            per_shop[shop_id] += 1
            since_commit += 1
            if layout.commit_every and since_commit >= layout.commit_every:
                writer.commit()
                since_commit = 0
            if progress is not None:
                progress(1)
        writer.commit()
        writer.wait_merging_threads()
    finally:
        store.close()
    return store.count, duplicates, per_shop


def _write_meta(out: Path, meta: CatalogMeta) -> None:
    meta.index_bytes = _dir_bytes(out / INDEX_DIR)
    meta.store_bytes = _dir_bytes(out / STORE_DIR)
    (out / META_FILE).write_bytes(orjson.dumps(meta.model_dump(), option=orjson.OPT_INDENT_2))


# -- synthetic -------------------------------------------------------------------------------------
_worker_generator: CatalogGenerator | None = None


def _init_worker(n_products: int, seed: int) -> None:
    global _worker_generator
    _worker_generator = CatalogGenerator(n_products, seed)


def _generate_rows(chunk_index: int) -> list[Row]:
    assert _worker_generator is not None
    rows = []
    for product in _worker_generator.chunk_dicts(chunk_index):
        contents = build_contents(product["title"], product["sku_options"], product["attributes"])
        rows.append(
            (
                product["product_id"],
                product["shop_id"],
                orjson.dumps(product),
                _partial_doc(product, contents),
            )
        )
    return rows


def generated_rows(n_products: int, seed: int, workers: int = 1) -> Iterator[Row]:
    """Rows of the synthetic catalogue in deterministic order, generated by `workers` processes.

    At most `2 × workers` chunks are in flight: `Pool.imap` would let fast generators run ahead of the
    single index writer and pile finished chunks up in memory, which is what bounds the build's RSS.
    """
    n_chunks = CatalogGenerator(n_products, seed).n_chunks
    if workers <= 1:
        _init_worker(n_products, seed)
        for chunk in range(n_chunks):
            yield from _generate_rows(chunk)
        return
    context = multiprocessing.get_context("spawn")
    window = 2 * workers
    with context.Pool(workers, initializer=_init_worker, initargs=(n_products, seed)) as pool:
        pending: deque = deque()
        next_chunk = 0
        while pending or next_chunk < n_chunks:
            while next_chunk < n_chunks and len(pending) < window:
                pending.append(pool.apply_async(_generate_rows, (next_chunk,)))
                next_chunk += 1
            yield from pending.popleft().get()


def build_synthetic(
    out: Path,
    n_products: int,
    seed: int = 0,
    workers: int | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
    layout: IndexLayout | None = None,
) -> CatalogMeta:
    """Generate a synthetic catalogue of `n_products` from `seed` and index it into `out`."""
    started = time.perf_counter()
    _prepare(out, overwrite)
    generator = CatalogGenerator(n_products, seed)
    workers = workers if workers is not None else (os.cpu_count() or 1)
    stored, duplicates, _ = _ingest(out, generated_rows(n_products, seed, workers), progress, layout)
    with (out / SHOPS_FILE).open("wb") as handle:
        for shop in generator.shops:
            handle.write(orjson.dumps(shop.model_dump()) + b"\n")
    meta = CatalogMeta(
        n_products=stored,
        n_shops=len(generator.shops),
        n_duplicates=duplicates,
        source=f"synthetic:{n_products}",
        generator=GENERATOR_VERSION,
        seed=seed,
        built_at=datetime.now(UTC).isoformat(timespec="seconds"),
        build_seconds=round(time.perf_counter() - started, 3),
    )
    _write_meta(out, meta)
    return meta


# -- from an upstream file -------------------------------------------------------------------------
def build_from_file(
    out: Path,
    source: Path,
    strict: bool = False,
    overwrite: bool = False,
    progress: Progress | None = None,
    layout: IndexLayout | None = None,
) -> tuple[CatalogMeta, LoadReport]:
    """Index an upstream-format catalogue file; bad lines go to rejects.jsonl (fatal when strict)."""
    started = time.perf_counter()
    if not source.exists():
        raise CatalogDirError(f"{source}: no such file")
    _prepare(out, overwrite)
    report = LoadReport(source=str(source))
    rejects = (out / REJECTS_FILE).open("wb")

    def rows() -> Iterator[Row]:
        seen_errors = 0
        for record in iter_catalog(source, report, strict=strict):
            while seen_errors < report.rejected:
                _write_reject(
                    rejects, report.errors[seen_errors] if seen_errors < len(report.errors) else None
                )
                seen_errors += 1
            product = record.product.model_dump(mode="json")
            yield (
                record.product.product_id,
                record.product.shop_id,
                orjson.dumps(product),
                _partial_doc(product, record.contents),
            )
        while seen_errors < report.rejected:
            _write_reject(rejects, report.errors[seen_errors] if seen_errors < len(report.errors) else None)
            seen_errors += 1

    try:
        stored, duplicates, per_shop = _ingest(out, rows(), progress, layout)
    finally:
        rejects.close()
    with (out / SHOPS_FILE).open("wb") as handle:
        for shop_id, count in sorted(per_shop.items()):
            shop = Shop(shop_id=shop_id, name=f"Shop {shop_id}", rating=0.0, product_count=count)
            handle.write(orjson.dumps(shop.model_dump()) + b"\n")
    meta = CatalogMeta(
        n_products=stored,
        n_shops=len(per_shop),
        n_rejected=report.rejected,
        n_duplicates=duplicates,
        source=str(source),
        built_at=datetime.now(UTC).isoformat(timespec="seconds"),
        build_seconds=round(time.perf_counter() - started, 3),
    )
    _write_meta(out, meta)
    return meta, report


def _write_reject(handle, error) -> None:
    if error is None:  # past the in-memory cap: the count is still exact, the reason was not kept
        handle.write(b'{"line": null, "reason": "not recorded (error cap reached)"}\n')
        return
    handle.write(orjson.dumps({"line": error.line_no, "reason": error.reason}) + b"\n")


# -- opening -----------------------------------------------------------------------------------------
def read_meta(path: Path) -> CatalogMeta:
    meta_path = Path(path) / META_FILE
    if not meta_path.exists():
        raise CatalogDirError(
            f"{path}: not a catalogue directory (no {META_FILE}); build one with `shoparena catalog build`"
        )
    return CatalogMeta.model_validate_json(meta_path.read_bytes())


BACKENDS = ("tantivy", "elasticsearch")


def open_catalog(path: Path | str, backend: str = "tantivy"):
    """Open a built catalogue directory for search: the embedded index, or the Elasticsearch/OpenSearch
    index it was pushed to with `shoparena catalog push-es` (lookups stay on the local store)."""
    path = Path(path)
    read_meta(path)
    if backend == "elasticsearch":
        from shoparena.index.elastic_backend import ES_CONFIG_FILE, ElasticCatalog

        config_path = path / ES_CONFIG_FILE
        if not config_path.exists():
            raise CatalogDirError(
                f"{path} was never pushed to Elasticsearch; run `shoparena catalog push-es`"
            )
        config = orjson.loads(config_path.read_bytes())
        return ElasticCatalog(config["url"], config["index"], store=ProductStore(path / STORE_DIR))
    if backend != "tantivy":
        raise CatalogDirError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    return TantivyCatalog(path / INDEX_DIR, ProductStore(path / STORE_DIR))


def read_shops(path: Path | str) -> list[Shop]:
    shops_path = Path(path) / SHOPS_FILE
    with shops_path.open("rb") as handle:
        return [Shop.model_validate_json(line) for line in handle if line.strip()]
