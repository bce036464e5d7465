"""A catalogue directory: the search index, the product store, shops and a manifest, built in one pass.

Layout of DIR:
  meta.json        what was built, from what, when, and how big (CatalogMeta)
  index/           tantivy BM25 index (ord, price, sold_count fast fields; shop_id, service terms)
  products.lmdb/   product store: ord → product JSON, product_id → ord
  shops.jsonl      one Shop per line
  rejects.jsonl    catalogue lines that were skipped, with line number, reason and content (file builds)
  es.json          where `catalog push-es` loaded the products (Elasticsearch URL and index), if it did
(the names live in `catalog_files`, shared with the backends that read a built directory).

A build writes into a hidden sibling directory and moves it onto DIR only when complete (see
`staging`), so a failed build leaves nothing, and `overwrite` replaces a catalogue only by a finished one.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from array import array
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import orjson
from pydantic import BaseModel, ValidationError

from shoparena.catalog.generator import GENERATOR_VERSION, CatalogGenerator
from shoparena.catalog.loader import (
    CatalogFormatError,
    CatalogReadError,
    LoadReport,
    iter_catalog,
    reject_record,
)
from shoparena.catalog.models import Shop, build_contents
from shoparena.index.catalog_files import (
    ES_CONFIG_FILE,
    INDEX_DIR,
    META_FILE,
    REJECTS_FILE,
    SHOPS_FILE,
    STORE_DIR,
)
from shoparena.index.product_store import ProductStore, ProductStoreWriter
from shoparena.index.staging import staged_build
from shoparena.index.tantivy_backend import TantivyCatalog, open_tantivy_index

FORMAT_VERSION = 1
WRITER_HEAP = 256 * 1024 * 1024

Progress = Callable[[int], None]


class CatalogMeta(BaseModel):
    format_version: int = FORMAT_VERSION
    n_products: int
    n_shops: int
    n_rejected: int = 0
    n_duplicates: int = 0
    n_lines_read: int | None = None  # file builds: = products + rejected + duplicates + blank
    n_blank: int | None = None
    source: str
    generator: str | None = None
    seed: int | None = None
    built_at: str
    build_seconds: float
    index_bytes: int = 0
    store_bytes: int = 0


class CatalogDirError(ValueError):
    """A directory that is not a usable catalogue, or cannot become one; the message says why."""


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _check_target(out: Path, overwrite: bool) -> None:
    """Refuse, before any work, a target that a finished build could not replace."""
    if out.exists() and not out.is_dir():
        raise CatalogDirError(f"{out} exists and is not a directory; give a directory path for the catalogue")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise CatalogDirError(f"{out} is not empty; pass --force to replace it")
        if not (out / META_FILE).exists():
            raise CatalogDirError(f"{out} is not empty and is not a catalogue; refusing to replace it")


def check_build_target(out: Path, overwrite: bool = False) -> None:
    """Raise `CatalogDirError` if a build into `out` would be refused: callers that show progress ask
    first, so a refusal comes before a progress bar rather than after an empty one."""
    _check_target(out.resolve() if out.is_symlink() else out, overwrite)


def _staged(out: Path, overwrite: bool):
    """The build directory of a catalogue at `out` (`staging.staged_build`)."""
    return staged_build(out, lambda target: _check_target(target, overwrite), CatalogDirError)


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


class IndexRow(NamedTuple):
    """One product on its way into the store and the index (a tuple: generator workers pickle them)."""

    product_id: str
    shop_id: str
    product_json: bytes
    partial_doc: bytes  # index JSON without the ord
    line_no: int | None = None  # file builds: where it came from


@dataclass
class IngestResult:
    stored: int
    duplicates: int
    per_shop: Counter


Duplicate = Callable[[IndexRow, int], None]  # the refused row and the ord of the product that kept its id


def _ingest(
    out: Path,
    rows: Iterable[IndexRow],
    progress: Progress | None,
    layout: IndexLayout | None = None,
    on_stored: Callable[[IndexRow], None] | None = None,
    on_duplicate: Duplicate | None = None,
) -> IngestResult:
    """Write rows into the store and the index; a repeated product id is refused (the first one wins)."""
    layout = layout or IndexLayout()
    index = open_tantivy_index(out / INDEX_DIR, create=True)
    threads = layout.writer_threads or min(2, os.cpu_count() or 1)
    writer = index.writer(heap_size=WRITER_HEAP, num_threads=threads)
    since_commit = 0
    store = ProductStoreWriter(out / STORE_DIR)
    duplicates = 0
    per_shop: Counter = Counter()
    try:
        for row in rows:
            ordinal = store.add(row.product_id, row.product_json)
            if ordinal is None:
                duplicates += 1
                if on_duplicate is not None:
                    on_duplicate(row, store.ord_of(row.product_id))
                continue
            if on_stored is not None:
                on_stored(row)
            writer.add_json(f'{{"ord":{ordinal},{row.partial_doc[1:].decode()}')
            per_shop[row.shop_id] += 1
            since_commit += 1
            if layout.commit_every and since_commit >= layout.commit_every:
                writer.commit()
                since_commit = 0
            if progress is not None:
                progress(1)
        writer.commit()
        writer.wait_merging_threads()
    except BaseException:
        with contextlib.suppress(Exception):
            writer.rollback()
        raise
    finally:
        store.close()
    return IngestResult(store.count, duplicates, per_shop)


def _write_meta(out: Path, meta: CatalogMeta) -> None:
    meta.index_bytes = _dir_bytes(out / INDEX_DIR)
    meta.store_bytes = _dir_bytes(out / STORE_DIR)
    (out / META_FILE).write_bytes(orjson.dumps(meta.model_dump(), option=orjson.OPT_INDENT_2))


# -- synthetic -------------------------------------------------------------------------------------
_worker_generator: CatalogGenerator | None = None


def _init_worker(n_products: int, seed: int) -> None:
    global _worker_generator
    _worker_generator = CatalogGenerator(n_products, seed)


def _generate_rows(chunk_index: int) -> list[IndexRow]:
    assert _worker_generator is not None
    rows = []
    for product in _worker_generator.chunk_dicts(chunk_index):
        contents = build_contents(product["title"], product["sku_options"], product["attributes"])
        rows.append(
            IndexRow(
                product["product_id"],
                product["shop_id"],
                orjson.dumps(product),
                _partial_doc(product, contents),
            )
        )
    return rows


def generated_rows(n_products: int, seed: int, workers: int = 1) -> Iterator[IndexRow]:
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
    generator = CatalogGenerator(n_products, seed)
    workers = workers if workers is not None else (os.cpu_count() or 1)
    with _staged(Path(out), overwrite) as stage:
        result = _ingest(stage, generated_rows(n_products, seed, workers), progress, layout)
        with (stage / SHOPS_FILE).open("wb") as handle:
            for shop in generator.shops:
                handle.write(orjson.dumps(shop.model_dump()) + b"\n")
        meta = CatalogMeta(
            n_products=result.stored,
            n_shops=len(generator.shops),
            n_duplicates=result.duplicates,
            source=f"synthetic:{n_products}",
            generator=GENERATOR_VERSION,
            seed=seed,
            built_at=datetime.now(UTC).isoformat(timespec="seconds"),
            build_seconds=round(time.perf_counter() - started, 3),
        )
        _write_meta(stage, meta)
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
    """Index an upstream-format catalogue file into `out`, all or nothing.

    Every line is accounted for: a product, a blank line, or a reject in rejects.jsonl with its line
    number, reason and content (bad lines, and repeated product ids: the first one is kept). In strict
    mode the first reject stops the build. An input that cannot be read as a whole (see
    `CatalogReadError`) or holds no product stops it too; either way nothing is left at `out`.
    """
    started = time.perf_counter()
    source = Path(source)
    with _staged(Path(out), overwrite) as stage, (stage / REJECTS_FILE).open("wb") as rejects:

        def write_reject(error: CatalogFormatError, raw: bytes | None) -> None:
            rejects.write(orjson.dumps(reject_record(error, raw)) + b"\n")

        report = LoadReport(source=str(source), on_reject=write_reject)
        first_lines = array("Q")  # ord -> line number, to say where a repeated id was first seen

        def stored(row: IndexRow) -> None:
            first_lines.append(row.line_no or 0)

        def duplicate(row: IndexRow, first_ord: int) -> None:
            error = CatalogFormatError(
                str(source),
                row.line_no or 0,
                f"duplicate product_id {row.product_id!r}: line {first_lines[first_ord]} has it "
                "(the first one is kept)",
            )
            if strict:
                raise error
            rejects.write(
                orjson.dumps({**reject_record(error, None), "product": orjson.Fragment(row.product_json)})
                + b"\n"
            )

        def rows() -> Iterator[IndexRow]:
            for record in iter_catalog(source, report, strict=strict):
                product = record.product.model_dump(mode="json")
                yield IndexRow(
                    record.product.product_id,
                    record.product.shop_id,
                    orjson.dumps(product),
                    _partial_doc(product, record.contents),
                    record.line_no,
                )

        result = _ingest(stage, rows(), progress, layout, on_stored=stored, on_duplicate=duplicate)
        if result.stored == 0:
            raise CatalogReadError(
                str(source),
                f"holds no usable product ({report.lines_read:,} line(s): {report.rejected:,} rejected, "
                f"{report.blank:,} blank)",
                examples=report.errors[:5],
            )
        with (stage / SHOPS_FILE).open("wb") as handle:
            for shop_id, count in sorted(result.per_shop.items()):
                shop = Shop(shop_id=shop_id, name=f"Shop {shop_id}", rating=0.0, product_count=count)
                handle.write(orjson.dumps(shop.model_dump()) + b"\n")
        meta = CatalogMeta(
            n_products=result.stored,
            n_shops=len(result.per_shop),
            n_rejected=report.rejected,
            n_duplicates=result.duplicates,
            n_lines_read=report.lines_read,
            n_blank=report.blank,
            source=str(source),
            built_at=datetime.now(UTC).isoformat(timespec="seconds"),
            build_seconds=round(time.perf_counter() - started, 3),
        )
        _write_meta(stage, meta)
    return meta, report


# -- opening -----------------------------------------------------------------------------------------
def read_meta(path: Path) -> CatalogMeta:
    meta_path = Path(path) / META_FILE
    if not meta_path.exists():
        raise CatalogDirError(
            f"{path}: not a catalogue directory (no {META_FILE}); build one with `shoparena catalog build`"
        )
    try:
        return CatalogMeta.model_validate_json(meta_path.read_bytes())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise CatalogDirError(
            f"{meta_path} is corrupt ({where + ': ' if where else ''}{first['msg']}); rebuild the catalogue "
            "with `shoparena catalog build --force`"
        ) from None
    except OSError as exc:
        raise CatalogDirError(f"{meta_path}: cannot read: {exc.strerror or exc}") from None


def _check_built(path: Path, meta: CatalogMeta, index: bool) -> None:
    """Refuse a directory whose product store (or, for the embedded engine, search index) is missing:
    opened anyway, every search would answer "no results"."""
    rebuild = "rebuild it with `shoparena catalog build --force`"
    if not (path / STORE_DIR / "data.mdb").is_file():
        raise CatalogDirError(f"{path}: the product store {STORE_DIR}/ is missing or empty; {rebuild}")
    if index and not (path / INDEX_DIR / "meta.json").is_file():
        raise CatalogDirError(f"{path}: the search index {INDEX_DIR}/ is missing or empty; {rebuild}")


def open_product_store(path: Path) -> ProductStore:
    """The product store of the catalogue directory `path`; a missing or damaged one is a
    `CatalogDirError` saying so."""
    rebuild = "rebuild it with `shoparena catalog build --force`"
    if not (path / STORE_DIR / "data.mdb").is_file():
        raise CatalogDirError(f"{path}: the product store {STORE_DIR}/ is missing or empty; {rebuild}")
    try:
        return ProductStore(path / STORE_DIR)
    except Exception as exc:  # lmdb.Error and the like: a damaged store
        raise CatalogDirError(
            f"{path}: the product store {STORE_DIR}/ is unreadable ({exc}); {rebuild}"
        ) from None


def _unreadable_index(path: Path, exc: BaseException) -> CatalogDirError:
    reason = (str(exc).splitlines() or [type(exc).__name__])[0]
    return CatalogDirError(
        f"{path}: the search index {INDEX_DIR}/ is unreadable ({reason}); rebuild it with "
        "`shoparena catalog build --force`"
    )


def _open_tantivy(path: Path, meta: CatalogMeta) -> TantivyCatalog:
    """The embedded engine over `path`, checked against meta.json: an index or store that does not hold
    the catalogue's products is an error here, not a search that finds nothing."""
    rebuild = "rebuild it with `shoparena catalog build --force`"
    store = open_product_store(path)
    try:
        catalog = TantivyCatalog(path / INDEX_DIR, store)
    except Exception as exc:  # tantivy's ValueError on a damaged index
        store.close()
        raise _unreadable_index(path, exc) from None
    except BaseException as exc:  # its Rust panic (pyo3's PanicException is a BaseException)
        store.close()
        if isinstance(exc, KeyboardInterrupt | SystemExit | GeneratorExit):
            raise
        raise _unreadable_index(path, exc) from None
    counts = {"search index": catalog.document_count, "product store": len(store)}
    wrong = [f"its {name} holds {n:,}" for name, n in counts.items() if n != meta.n_products]
    if wrong:
        catalog.close()
        raise CatalogDirError(
            f"{path}: {META_FILE} says {meta.n_products:,} products but "
            + " and ".join(wrong)
            + f"; {rebuild}"
        )
    return catalog


BACKENDS = ("tantivy", "elasticsearch")
DEFAULT_ES_INDEX = "shoparena-products"  # `catalog push-es` loads into this index unless told otherwise


def open_catalog(
    path: Path | str, backend: str = "tantivy", *, url: str | None = None, index: str | None = None
):
    """Open a built catalogue directory for search: the embedded index, or the Elasticsearch/OpenSearch
    index it was pushed to with `shoparena catalog push-es` (lookups stay on the local store).

    `url` and `index` (Elasticsearch only) override what push-es recorded in DIR/es.json, for a server
    reached under another address or a catalogue pushed from elsewhere. A server that does not answer,
    or lacks the index, is an `ElasticBackendError` here rather than on the first search.
    """
    path = Path(path)
    meta = read_meta(path)
    if backend in BACKENDS:
        _check_built(path, meta, index=backend == "tantivy")
    if backend == "elasticsearch":
        from shoparena.index.elastic_backend import ElasticCatalog

        config_path = path / ES_CONFIG_FILE
        config = orjson.loads(config_path.read_bytes()) if config_path.exists() else {}
        url = url or config.get("url")
        if not url:
            raise CatalogDirError(
                f"{path} was never pushed to Elasticsearch; run `shoparena catalog push-es`, "
                "or pass the server's URL (--url)"
            )
        index = index or config.get("index") or DEFAULT_ES_INDEX
        store = ProductStore(path / STORE_DIR)
        try:
            return ElasticCatalog.open(url, index, store=store)
        except BaseException:
            store.close()
            raise
    if backend != "tantivy":
        raise CatalogDirError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    if url is not None or index is not None:
        raise CatalogDirError("a server URL and index apply to the elasticsearch backend only")
    return _open_tantivy(path, meta)


def read_shops(path: Path | str) -> list[Shop]:
    shops_path = Path(path) / SHOPS_FILE
    with shops_path.open("rb") as handle:
        return [Shop.model_validate_json(line) for line in handle if line.strip()]
