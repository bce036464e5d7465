"""`shoparena catalog …`, `shoparena search`, `shoparena product`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from shoparena.catalog.loader import CatalogFormatError, CatalogReadError, check_source
from shoparena.catalog.models import ProductInformation
from shoparena.cli.common import console, err_console, fail, print_json, progress_bar
from shoparena.index.catalog_dir import (
    BACKENDS,
    DEFAULT_ES_INDEX,
    CatalogDirError,
    build_from_file,
    build_synthetic,
    check_build_target,
    open_catalog,
    read_meta,
)
from shoparena.index.catalog_files import REJECTS_FILE
from shoparena.index.request import SearchRequestError

catalog_app = typer.Typer(
    help="Build and inspect product catalogues (generated or upstream-format).", no_args_is_help=True
)


@catalog_app.command("build")
def build(
    out: Annotated[
        Path, typer.Option("--out", help="Directory to write the catalogue (index + store) into.")
    ],
    products: Annotated[
        int | None, typer.Option("--products", "-n", help="Generate this many synthetic products.")
    ] = None,
    seed: Annotated[
        int, typer.Option(help="Generator seed: the same seed gives a byte-identical catalogue.")
    ] = 0,
    from_file: Annotated[
        Path | None, typer.Option("--from", help="Index an upstream catalogue (.jsonl or .jsonl.gz) instead.")
    ] = None,
    strict: Annotated[
        bool, typer.Option(help="With --from: stop at the first bad line instead of skipping it.")
    ] = False,
    workers: Annotated[int | None, typer.Option(help="Generator processes (default: one per core).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing catalogue in --out.")] = False,
) -> None:
    """Generate + index a synthetic catalogue (--products N), or index an upstream file (--from FILE).

    Examples:
      shoparena catalog build --products 20000 --seed 1 --out cat/
      shoparena catalog build --from products.jsonl.gz --out cat/
    """
    if (products is None) == (from_file is None):
        raise fail("give exactly one of --products N or --from FILE")
    if products is not None and products < 1:
        raise fail("--products must be at least 1")
    try:
        check_build_target(out, overwrite=force)  # before the progress bar, not after an empty one
        if from_file is not None:
            check_source(from_file)
        if products is not None:
            with progress_bar(f"generating + indexing {products:,} products", products) as advance:
                meta = build_synthetic(
                    out, products, seed=seed, workers=workers, overwrite=force, progress=advance
                )
        else:
            with progress_bar(f"indexing {from_file}", None) as advance:
                meta, report = build_from_file(
                    out, from_file, strict=strict, overwrite=force, progress=advance
                )
            _print_rejects(out, meta, report.errors)
    except CatalogReadError as exc:
        for example in exc.examples:
            err_console.print(f"[yellow]rejected[/] line {example.line_no}: {example.reason}", soft_wrap=True)
        raise fail(f"{exc}; nothing was built") from None
    except CatalogFormatError as exc:
        raise fail(f"{exc} (strict mode: nothing was built)") from None
    except CatalogDirError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:  # a full disk, a vanished directory: the build was removed, say why
        raise fail(
            f"build failed: {exc.strerror or exc} ({exc.filename or out}); nothing was built"
        ) from None
    console.print(
        f"[green]built[/] {out}: {meta.n_products:,} products, {meta.n_shops:,} shops, "
        f"{meta.n_rejected:,} rejected, {meta.n_duplicates:,} duplicate ids, "
        f"index {meta.index_bytes / 1e6:.1f} MB, store {meta.store_bytes / 1e6:.1f} MB in {meta.build_seconds:.1f}s"
    )


def _print_rejects(out: Path, meta, errors: list[CatalogFormatError]) -> None:
    """The first reasons, and the account of every line, so nothing is dropped without a word."""
    for error in errors[:10]:
        err_console.print(f"[yellow]skipped[/] line {error.line_no}: {error.reason}", soft_wrap=True)
    skipped = meta.n_rejected + meta.n_duplicates
    if skipped:
        err_console.print(
            f"[yellow]{meta.n_lines_read:,} lines read: {meta.n_products:,} products, "
            f"{meta.n_rejected:,} bad line(s) and {meta.n_duplicates:,} duplicate id(s) skipped, "
            f"{meta.n_blank:,} blank; each skipped line is in {out / REJECTS_FILE}[/]",
            soft_wrap=True,
        )


@catalog_app.command("stats")
def stats(
    catalog: Annotated[Path, typer.Argument(help="A catalogue directory built by `catalog build`.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the statistics as JSON.")] = False,
) -> None:
    """Size, provenance and shape of a built catalogue (categories, prices, services).

    Examples:
      shoparena catalog stats cat/
      shoparena catalog stats cat/ --json
    """
    from shoparena.index.stats import catalog_stats

    try:
        meta = read_meta(catalog)
        data = catalog_stats(catalog, meta)
    except CatalogDirError as exc:
        raise fail(str(exc)) from None
    if json_out:
        print_json(data)
        return
    table = Table(title=f"catalogue {catalog}", show_header=False)
    for key in (
        "n_products",
        "n_shops",
        "source",
        "generator",
        "seed",
        "built_at",
        "index_bytes",
        "store_bytes",
    ):
        if data[key] is None:  # generator and seed: a generated catalogue's only
            continue
        table.add_row(key, f"{data[key]:,}" if isinstance(data[key], int) else str(data[key]))
    table.add_row("price p10 / p50 / p90", " / ".join(f"{p:,.2f}" for p in data["price_percentiles"]))
    table.add_row("services", ", ".join(f"{k} {v:.0%}" for k, v in data["service_share"].items()))
    table.add_row("top categories", "\n".join(f"{c} ({n:,})" for c, n in data["top_categories"][:8]))
    console.print(table)


@catalog_app.command("push-es")
def push_es(
    catalog: Annotated[Path, typer.Argument(help="A catalogue directory built by `catalog build`.")],
    url: Annotated[str, typer.Option(envvar="SHOPARENA_ES_URL", help="Elasticsearch URL.")],
    index: Annotated[str, typer.Option(help="Index name (replaced if it exists).")] = DEFAULT_ES_INDEX,
) -> None:
    """Load a built catalogue into Elasticsearch; then search it with `--backend elasticsearch`.

    The server and index are remembered in DIR/es.json, so `search` and `product` find them.

    Examples:
      shoparena catalog push-es cat/ --url http://127.0.0.1:9200
      shoparena search cat/ "wireless earbuds" --backend elasticsearch
    """
    from shoparena.index.elastic_backend import ElasticBackendError, connect, push_catalog

    try:
        meta = read_meta(catalog)
    except CatalogDirError as exc:
        raise fail(str(exc)) from None
    try:
        es = connect(url)  # before the progress bar: a wrong URL is one line, not an empty bar
    except ElasticBackendError as exc:
        raise fail(str(exc)) from None
    try:
        with progress_bar(
            f"pushing {meta.n_products:,} products to {url}/{index}", meta.n_products
        ) as advance:
            count = push_catalog(catalog, url, index, client=es, progress=advance)
    except ElasticBackendError as exc:
        raise fail(f"{exc}; index {index!r} is incomplete, push again") from None
    finally:
        es.close()
    console.print(f"[green]pushed[/] {count:,} products to {url} index {index!r}")


BackendOption = Annotated[
    str,
    typer.Option(
        "--backend", help="Search engine: tantivy (embedded) or elasticsearch (after `catalog push-es`)."
    ),
]
UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="With --backend elasticsearch: the server \\[default: the one push-es recorded in DIR/es.json].",
        show_default=False,
    ),
]
IndexOption = Annotated[
    str | None,
    typer.Option(
        "--index",
        help="With --backend elasticsearch: the index \\[default: the one push-es recorded, else "
        f"{DEFAULT_ES_INDEX}].",
        show_default=False,
    ),
]


def _open(catalog: Path, backend: str = "tantivy", url: str | None = None, index: str | None = None):
    """The catalogue through the chosen engine; a wrong directory, backend or server is one line."""
    from shoparena.index.elastic_backend import ElasticBackendError

    if backend not in BACKENDS:
        raise fail(f"--backend {backend!r}: use one of {', '.join(BACKENDS)}")
    if backend != "elasticsearch" and (url is not None or index is not None):
        raise fail("--url and --index choose an Elasticsearch server: add --backend elasticsearch")
    try:
        return open_catalog(catalog, backend=backend, url=url, index=index)
    except (CatalogDirError, ElasticBackendError) as exc:
        raise fail(str(exc)) from None


def search(
    catalog: Annotated[Path, typer.Argument(help="A catalogue directory.")],
    query: Annotated[
        str, typer.Argument(help="Free-text query (BM25; query syntax is treated as plain text).")
    ],
    page: Annotated[int, typer.Option(help="Result page 1-5 (10 hits each); others give an empty list.")] = 1,
    shop_id: Annotated[str | None, typer.Option("--shop-id", help="Only this shop's products.")] = None,
    price: Annotated[str | None, typer.Option(help="Price range 'low-high' or 'low-' (inclusive).")] = None,
    service: Annotated[
        list[str] | None,
        typer.Option(
            help="Required service (repeatable or comma-separated): official, freeShipping, COD, flashsale."
        ),
    ] = None,
    sort: Annotated[
        str | None, typer.Option(help="Re-sort the top 50: order (most sold), priceasc, pricedesc.")
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print exactly the find_product list as JSON.")
    ] = False,
    engine: BackendOption = "tantivy",
    url: UrlOption = None,
    index: IndexOption = None,
) -> None:
    """Search a catalogue exactly as the harness's find_product tool does.

    Examples:
      shoparena search cat/ "wireless earbuds"
      shoparena search cat/ "yoga mat" --price 100-500 --service COD,freeShipping --sort priceasc
      shoparena search cat/ backpack --page 2 --json
      shoparena search cat/ backpack --backend elasticsearch
    """
    from shoparena.index.elastic_backend import ElasticBackendError

    backend = _open(catalog, engine, url, index)
    services = [s for item in (service or []) for s in item.split(",") if s.strip()]
    try:
        hits = backend.find_product(
            query, page=page, shop_id=shop_id, price=price, sort=sort, service=services
        )
    except (SearchRequestError, ElasticBackendError) as exc:
        raise fail(str(exc)) from None
    finally:
        backend.close()
    if json_out:
        print_json(hits)
        return
    console.print(hits_table(hits, f"find_product({query!r}, page={page})"))
    if not hits:
        console.print("[dim]no results[/]")


def hits_table(hits: list[dict], title: str) -> Table:
    """A find_product page as a readable table (the CLI's and the demo's)."""
    table = Table(title=title, title_justify="left")
    for column in ("product_id", "shop_id", "title", "price", "service", "sold_count"):
        table.add_column(
            column, overflow="fold", justify="right" if column in ("price", "sold_count") else "left"
        )
    for hit in hits:
        table.add_row(
            hit["product_id"],
            hit["shop_id"],
            hit["title"],
            f"{hit['price']:,.2f}",
            ", ".join(hit["service"]),
            f"{hit['sold_count']:,}",
        )
    return table


def product(
    catalog: Annotated[Path, typer.Argument(help="A catalogue directory.")],
    product_ids: Annotated[list[str], typer.Argument(help="One or more product ids (commas allowed).")],
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the view_product_information list as JSON.")
    ] = False,
    engine: BackendOption = "tantivy",
    url: UrlOption = None,
    index: IndexOption = None,
) -> None:
    """Show products as the view_product_information tool does (no title or price, as upstream).

    Examples:
      shoparena product cat/ 1234567890
      shoparena product cat/ 1234567890,2345678901 --json
      shoparena product cat/ 1234567890 --backend elasticsearch
    """
    backend = _open(catalog, engine, url, index)
    ids = [p.strip() for item in product_ids for p in item.split(",") if p.strip()]
    try:
        found = backend.get_products(ids)
    finally:
        backend.close()
    infos = [ProductInformation.of(found[p]).model_dump() for p in ids if p in found]
    missing = [p for p in ids if p not in found]
    if json_out:
        print_json(infos)
    else:
        for info in infos:
            table = Table(title=f"product {info['product_id']}", show_header=False)
            table.add_row("short_description", info["short_description"])
            table.add_row("description", info["description"])
            table.add_row(
                "sku_options", "\n".join(f"{k}: {v}" for k, v in info["sku_options"].items()) or "-"
            )
            table.add_row(
                "attributes", "\n".join(f"{k}: {', '.join(v)}" for k, v in info["attributes"].items()) or "-"
            )
            console.print(table)
    if missing:
        err_console.print(f"[yellow]not in the catalogue:[/] {', '.join(missing)}")
        if not infos:
            raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(catalog_app, name="catalog")
    app.command("search")(search)
    app.command("product")(product)
