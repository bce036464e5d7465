"""Rule-scoring throughput on generated problems against a large catalogue, title embeddings cached.

    .venv/bin/python bench/score_bench.py                                   # 2.7M catalogue if built, else 100k
    .venv/bin/python bench/score_bench.py --catalog /tmp/shoparena-bench/cat-2700000 --problems 1500

What is timed: `RuleScorer.score_many` over every answer (one catalogue lookup batch, title
similarities, every rule, shop/budget checks), and the whole `score_episodes` (that plus the
per-bucket metrics with 1000 bootstrap resamples). Answers are a realistic mix per problem: the gold
ids (the exact-id shortcut), other catalogue products (every rule evaluated, titles compared), and
ids the catalogue does not have. Title embeddings come from the real MiniLM model; the untimed warm-up
embeds every title once into the on-disk cache, so the timed passes measure scoring, not the encoder
(the warm-up's titles/s is reported too). "disk cache" starts every pass with an empty LRU (vectors
read from SQLite); "in memory" reuses one warm similarity; "+ metrics" is the whole `score_episodes`;
"lexical ref." needs no vectors at all. Each row is the median of --repeats passes. Target: ≥ 1,000 problems/s.
Results: a table on stdout and bench/out/score_bench-<size>.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from shoparena.index.catalog_dir import build_synthetic, open_catalog, read_meta
from shoparena.problems.generator import ProblemGenerator
from shoparena.scoring.answers import Answer, Episode
from shoparena.scoring.rules import RuleScorer
from shoparena.scoring.similarity import LexicalSimilarity, minilm_similarity
from shoparena.scoring.suite import score_episodes

TARGET_PROBLEMS_PER_S = 1000.0
BENCH_ROOT = Path("/tmp/shoparena-bench")
OUT_DIR = Path(__file__).resolve().parent / "out"
console = Console()


def pick_catalog(explicit: Path | None) -> tuple[Path, str]:
    if explicit is not None:
        return explicit, "given"
    big = BENCH_ROOT / "cat-2700000"
    if (big / "meta.json").exists():
        return big, "existing 2.7M build"
    small = BENCH_ROOT / "cat-100000"
    if not (small / "meta.json").exists():
        console.print("no 2.7M catalogue found: building a 100k synthetic one (seed 1)")
        build_synthetic(small, 100_000, seed=1, overwrite=True)
    return small, "100k fallback (no 2.7M build found)"


def make_answers(problems, backend, rng: random.Random) -> list[Episode]:
    """Per problem: 30% gold ids, 55% other catalogue products (a random one per position), 15% unknown."""
    size = len(backend.store)
    episodes = []
    for index, problem in enumerate(problems):
        roll = rng.random()
        if roll < 0.30:
            ids = [spec.product_id for spec in problem.rewards]
        elif roll < 0.85:
            ids = [str(backend.store.dict_by_ord(rng.randrange(size))["product_id"]) for _ in problem.rewards]
            if rng.random() < 0.5:  # keep one gold item: a partly right basket
                ids[0] = problem.rewards[0].product_id
        else:
            ids = [f"missing-{index}-{i}" for i in range(len(problem.rewards))]
        episodes.append(Episode(index=index, answer=Answer(index=index, product_ids=ids)))
    return episodes


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--catalog", type=Path, default=None)
    parser.add_argument("--problems", type=int, default=1500, help="generated tasks (split over 3 buckets)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=5, help="timed passes per row (median reported)")
    parser.add_argument("--cache", type=Path, default=BENCH_ROOT / "title-embeddings.sqlite")
    args = parser.parse_args()

    catalog_dir, catalog_note = pick_catalog(args.catalog)
    meta = read_meta(catalog_dir)
    backend = open_catalog(catalog_dir)
    console.print(f"catalogue {catalog_dir} ({meta.n_products:,} products; {catalog_note})")

    problems, gen_s = timed(ProblemGenerator(backend, args.seed).generate, args.problems)
    episodes = make_answers(problems, backend, random.Random(args.seed))
    console.print(f"generated {len(problems):,} problems in {gen_s:.1f}s")

    # untimed warm-up: every gold and answer title through the real encoder once (disk-cached)
    warm = minilm_similarity(args.cache)
    scorer = RuleScorer(backend, warm, "strict")
    batch = [(problems[e.index], e.answer.product_ids, {"index": e.index}) for e in episodes]
    _, warm_s = timed(scorer.score_many, batch)
    console.print(f"warm-up: {warm.encoded:,} titles encoded in {warm_s:.1f}s")

    rows = []

    def measure(label: str, make_similarity, mode: str, whole: bool = False):
        """Median of `--repeats` passes; `make_similarity()` is called per pass (fresh or shared)."""
        times = []
        for _ in range(args.repeats):
            similarity = make_similarity()
            if whole:
                result, seconds = timed(score_episodes, problems, episodes, backend, similarity, mode)
                scores = result.scores
            else:
                scores, seconds = timed(RuleScorer(backend, similarity, mode).score_many, batch)
            times.append(seconds)
        seconds = statistics.median(times)
        rows.append(
            {
                "pass": label,
                "mode": mode,
                "similarity": similarity.name,
                "problems": len(scores),
                "seconds_median": round(seconds, 4),
                "seconds_all": [round(t, 4) for t in times],
                "problems_per_s": round(len(scores) / seconds, 1),
                "asr": round(sum(s.success for s in scores) / len(scores), 4),
                "encoded_during_pass": getattr(similarity, "encoded", 0),
            }
        )

    shared = minilm_similarity(args.cache)
    measure("disk cache", lambda: minilm_similarity(args.cache), "strict")
    measure("in memory", lambda: shared, "strict")
    measure("in memory", lambda: shared, "upstream")
    measure("+ metrics", lambda: shared, "strict", whole=True)
    measure("lexical ref.", LexicalSimilarity, "strict")
    backend.close()

    table = Table(title=f"rule scoring throughput · {meta.n_products:,}-product catalogue")
    for column in ("pass", "mode", "problems", "median s", "problems/s", "ASR", "encoded"):
        table.add_column(column, justify="left" if column in ("pass", "mode") else "right", no_wrap=True)
    for row in rows:
        table.add_row(
            row["pass"],
            row["mode"],
            f"{row['problems']:,}",
            f"{row['seconds_median']:.3f}",
            f"{row['problems_per_s']:,.0f}",
            f"{row['asr']:.3f}",
            str(row["encoded_during_pass"]),
        )
    console.print(table)
    minilm_rows = [r for r in rows if r["similarity"] != "lexical-jaccard"]
    slowest = min(r["problems_per_s"] for r in minilm_rows)
    verdict = "meets" if slowest >= TARGET_PROBLEMS_PER_S else "MISSES"
    console.print(
        f"slowest MiniLM pass: {slowest:,.0f} problems/s → {verdict} the {TARGET_PROBLEMS_PER_S:,.0f}/s target"
    )

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / f"score_bench-{meta.n_products}.json"
    out.write_text(
        json.dumps(
            {
                "benchmark": "score_bench",
                "when": datetime.now(UTC).isoformat(timespec="seconds"),
                "machine": {"python": platform.python_version(), "platform": platform.platform()},
                "catalog": {"dir": str(catalog_dir), "n_products": meta.n_products, "note": catalog_note},
                "problems": len(problems),
                "generation_seconds": round(gen_s, 2),
                "warmup": {"titles_encoded": warm.encoded, "seconds": round(warm_s, 2)},
                "target_problems_per_s": TARGET_PROBLEMS_PER_S,
                "slowest_minilm_problems_per_s": slowest,
                "passes": rows,
            },
            indent=2,
        )
    )
    console.print(f"wrote {out}")


if __name__ == "__main__":
    main()
