"""The component tour (`python -m shoparena.tour`): each stage below the arena on its own, in about a
minute — what `make demo` showed before the closed loop (`shoparena.demo`) took its place.

1. catalogue: build a 20k-product synthetic catalogue (generate + BM25 index + product store) and run
   a few find_product searches with the filters agents use;
2. environment: generate a problem set from it (product, shop and voucher buckets), play one episode
   per bucket through the harness with a scripted call sequence (search the query, inspect the top
   hits, recommend, terminate: a naive baseline, not a solver) and score each with the rule scorer.
3. agents and eval: both reference agents (agentic = axis-A shape, pipeline = axis-B shape) are
   evaluated on those problems with the offline reasoning judge; the Table-1-style comparison and
   the judge's quality/gate distribution are printed, and each run's report.md/report.html written.
4. store: the judged trajectories go into the append-only trajectory store (SQLite here; the same
   code runs on PostgreSQL), twice to show ingest is idempotent, and are exported as JSONL + Parquet;
5. corpus: the export becomes a leak-guarded, TRL-ready training corpus (normalise → judge and format
   gates → per-problem ranking → axis split → train/eval split) with its report and funnel plot.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.rule import Rule
from rich.table import Table

from shoparena.cli.catalog_cmd import hits_table
from shoparena.index.catalog_dir import CatalogDirError, build_synthetic, open_catalog, read_meta

DEMO_DIR = Path(os.environ.get("SHOPARENA_TOUR_DIR", "tour-out"))
DEMO_PRODUCTS = 20_000
DEMO_SEED = 42
DEMO_PROBLEMS = 30

console = Console(width=max(120, Console().width))

DEMO_SEARCHES = [
    ("wireless earbuds", {}),
    ("waterproof backpack laptop", {"price": "500-1500", "service": ["COD"]}),
    ("non-stick frying pan", {"sort": "priceasc"}),
    ("yoga mat", {"price": "300-", "sort": "order"}),
]


def build_or_reuse_catalog() -> Path:
    catalog_dir = DEMO_DIR / "catalog"
    try:
        meta = read_meta(catalog_dir)
        if meta.n_products == DEMO_PRODUCTS and meta.seed == DEMO_SEED:
            console.print(f"reusing the demo catalogue in {catalog_dir} ({meta.n_products:,} products)")
            return catalog_dir
    except CatalogDirError:
        pass
    started = time.perf_counter()
    meta = build_synthetic(catalog_dir, DEMO_PRODUCTS, seed=DEMO_SEED, overwrite=True)
    console.print(
        f"built {catalog_dir}: {meta.n_products:,} products from {meta.n_shops:,} shops in "
        f"{time.perf_counter() - started:.1f}s (index {meta.index_bytes / 1e6:.1f} MB, store {meta.store_bytes / 1e6:.1f} MB)"
    )
    return catalog_dir


def show_searches(catalog_dir: Path) -> None:
    catalog = open_catalog(catalog_dir)
    try:
        for query, filters in DEMO_SEARCHES:
            started = time.perf_counter()
            hits = catalog.find_product(query, **filters)
            elapsed = (time.perf_counter() - started) * 1000
            shown = ", ".join(f"{k}={v}" for k, v in filters.items()) or "no filters"
            console.print(hits_table(hits[:5], f"find_product({query!r}) — {shown} — {elapsed:.2f} ms"))
    finally:
        catalog.close()


def generate_problems(catalog_dir: Path) -> Path:
    from shoparena.problems.generator import ProblemGenerator
    from shoparena.problems.io import write_problems

    catalog = open_catalog(catalog_dir)
    try:
        problems = ProblemGenerator(catalog, seed=DEMO_SEED).generate(
            DEMO_PROBLEMS, buckets=("product", "shop", "voucher")
        )
    finally:
        catalog.close()
    path = DEMO_DIR / "problems.jsonl"
    write_problems(path, problems)
    counts = {b: sum(1 for p in problems if p.bucket == b) for b in ("product", "shop", "voucher")}
    console.print(
        f"generated {len(problems)} problems → {path} ({', '.join(f'{b} {n}' for b, n in counts.items())})"
    )
    return path


def _short(text: str, limit: int = 150) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def play_scripted_episodes(catalog_dir: Path, problems_path: Path) -> None:
    """One episode per bucket: search the query, look at the hits, recommend, terminate — then score."""
    from shoparena.harness.episode import Episode, load_shops
    from shoparena.problems.io import read_problems
    from shoparena.scoring import RuleScorer, make_similarity

    problems = read_problems(problems_path, strict=True).problems
    catalog = open_catalog(catalog_dir)
    scorer = RuleScorer(catalog, make_similarity("lexical"), mode="upstream")
    shops = load_shops(catalog_dir)
    try:
        for bucket in ("product", "shop", "voucher"):
            problem = next(p for p in problems if p.bucket == bucket)
            episode = Episode.for_problem(problem, catalog, profile="oro7", shops=shops)
            wanted = len(problem.rewards)
            first_line = problem.query.split("\n")[0]
            hits = episode.call("find_product", {"q": first_line[:120]}, origin="code")
            ids = [h["product_id"] for h in (hits.result or [])][:wanted]
            if ids:
                episode.call("view_product_information", {"product_ids": ",".join(ids)}, origin="code")
            episode.call("recommend_product", {"product_ids": ",".join(ids)}, origin="code")
            episode.call("terminate", {"status": "success" if ids else "failure"}, origin="code")
            table = Table(title=f"{bucket} episode — {_short(problem.query, 110)}", title_justify="left")
            table.add_column("step", justify="right")
            table.add_column("call")
            table.add_column("observation", max_width=80)
            for record in episode.calls:
                args = ", ".join(f"{k}={_short(v, 40)!s}" for k, v in (record.arguments or {}).items())
                table.add_row(
                    str(record.step), f"{record.name}({args})", _short(record.error or record.result)
                )
            console.print(table)
            score = scorer.score(
                problem,
                episode.recommended_product_ids,
                steps=episode.steps_used,
                terminated=episode.terminated is not None,
            )
            axes = ", ".join(
                f"{axis} {tally.hits}/{tally.checks}" for axis, tally in score.axes.items() if tally.checks
            )
            extra = "".join(
                f", {k} {'✓' if v else '✗'}"
                for k, v in (("shop", score.shop), ("budget", score.budget))
                if v is not None
            )
            verdict = "[green]success[/]" if score.success else "[red]failure[/]"
            console.print(f"  score: {verdict}, rule {score.rule:.2f} ({axes}{extra})\n")
    finally:
        catalog.close()


def evaluate_reference_agents(catalog_dir: Path, problems_path: Path) -> list[Path]:
    from shoparena.eval.config import EvalConfig
    from shoparena.eval.runner import run_eval
    from shoparena.judge import make_judge
    from shoparena.report import comparison_rows, load_run, write_comparison, write_run_reports

    run_dirs = []
    for variant in ("agentic", "pipeline"):
        out = DEMO_DIR / "runs" / variant
        judge = make_judge("offline")
        started = time.perf_counter()
        try:
            result = run_eval(
                EvalConfig(
                    catalog=catalog_dir,
                    problems=problems_path,
                    agent=f"reference:{variant}",
                    out=out,
                    workers=2,
                    executor="process",
                    profile="oro7",
                    mode="upstream",
                    similarity="minilm",
                    name=f"reference {variant}",
                ),
                judge=judge,
            )
        finally:
            judge.close()
        write_run_reports(out)
        console.print(
            f"reference:{variant}: {result.episodes_run} episode(s) run, {result.episodes_resumed} resumed "
            f"in {time.perf_counter() - started:.1f}s → {out}/report.html"
        )
        run_dirs.append(out)
    runs = [load_run(path) for path in run_dirs]
    console.print(comparison_rows(runs, ci=False).rich(title="Reference agents (Table 1 shape)"))
    judge_table = Table(title="Offline judge: episodes per quality level", title_justify="left")
    judge_table.add_column("variant")
    for level in ("0.1", "0.3", "0.5", "0.7", "0.9"):
        judge_table.add_column(level, justify="right")
    judge_table.add_column("q → coeff", justify="right")
    for run in runs:
        judge = run.judge or {}
        levels = judge.get("quality_distribution") or {}
        judge_table.add_row(
            run.name,
            *(str(levels.get(level, 0)) for level in ("0.1", "0.3", "0.5", "0.7", "0.9")),
            f"{judge.get('q', 0):.2f} → {judge.get('coeff', 0):.2f}",
        )
    console.print(judge_table)
    write_comparison(runs, DEMO_DIR / "runs" / "comparison.md", DEMO_DIR / "runs" / "comparison.html")
    return run_dirs


def build_demo_corpus(catalog_dir: Path, problems_path: Path, export: Path) -> None:
    from shoparena.corpus.pipeline import CorpusConfig, build_corpus

    out = DEMO_DIR / "corpus"
    result = build_corpus(
        CorpusConfig(
            inputs=[export],
            out=out,
            catalog=catalog_dir,
            problems=[problems_path],
            eval_size=6,
            seed=DEMO_SEED,
            force=True,  # the tour rebuilds its own output directory on every run
        )
    )
    c = result.counts
    console.print(
        f"inputs {c['inputs']:,} = kept {c['train'] + c['eval']:,} (train {c['train']:,}, eval {c['eval']:,})"
        f" + rejected {c['rejected']:,} + axis-B {c['axis_b']:,} + deduplicated {c['deduplicated']:,}"
        "  [green]✓ nothing lost[/]"
    )
    table = Table(title="Why rows left the corpus", title_justify="left")
    table.add_column("reason")
    table.add_column("rows", justify="right")
    for reason, n in sorted(result.reasons.items(), key=lambda kv: -kv[1]):
        table.add_row(reason, f"{n:,}")
    console.print(table)
    console.print(
        f"corpus → {out}/ (train/eval .jsonl + .parquet for TRL, report.md, funnel.png, manifest.json)"
    )


def main() -> None:
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__)
        return
    console.print(Rule("shoparena tour · 1 · catalogue and search"))
    catalog_dir = build_or_reuse_catalog()
    show_searches(catalog_dir)
    console.print(Rule("shoparena tour · 2 · problems, harness and scoring"))
    problems_path = generate_problems(catalog_dir)
    play_scripted_episodes(catalog_dir, problems_path)
    console.print(Rule("shoparena tour · 3 · reference agents, eval and the judge"))
    run_dirs = evaluate_reference_agents(catalog_dir, problems_path)
    console.print(Rule("shoparena tour · 4 · the append-only trajectory store"))
    from shoparena.store.demo import store_runs

    stored = store_runs(run_dirs, DEMO_DIR / "store", console)
    console.print(Rule("shoparena tour · 5 · from trajectories to a training corpus"))
    build_demo_corpus(catalog_dir, problems_path, stored.jsonl)
    console.print(
        f'\nTry it yourself: [bold].venv/bin/shoparena search {catalog_dir} "red dress" --service COD[/]'
    )


if __name__ == "__main__":
    main()
