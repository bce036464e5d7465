"""Corpus pipeline throughput: N synthetic canonical trajectories through normalise → gates → rank →
split → export, with the default fast tokenizer (Rust WordPiece) and with the regex counter.

The rows are real: template episodes are played by the reference agentic and pipeline agents on a
generated catalogue (real harness, real observations, judged by the offline judge), then varied per
synthetic row (problem id and query words, reasoning text, judge quality, record id), so each row is
a canonical record with distinct text. N/10 problems, 10 rows each.

Two row sizes (`--profile`):
- `full`: the records exactly as the runner writes them, every search page of 10 products in the
  messages and again in the call log (66 KB a record on average, 32 KB of it messages);
- `compact`: the same episodes with every list observation cut to its first 3 results, in the
  messages and in the call log alike (the size of agents that read shorter pages; what makes a
  1M-row input fit on a disk here).

    .venv/bin/python bench/corpus_bench.py --n 100000 --profile full
    .venv/bin/python bench/corpus_bench.py --n 1000000 --profile compact --tokenizers default
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path

import orjson
import psutil

from shoparena.corpus.pipeline import CorpusConfig, build_corpus
from shoparena.eval.config import EvalConfig
from shoparena.eval.runner import run_eval
from shoparena.index.catalog_dir import build_synthetic, open_catalog
from shoparena.judge.offline import OfflineJudge
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems

WORDS = [
    "blue",
    "red",
    "compact",
    "premium",
    "lightweight",
    "durable",
    "classic",
    "modern",
    "portable",
    "deluxe",
]


def templates(root: Path) -> list[dict]:
    catalog = root / "cat"
    build_synthetic(catalog, 3000, seed=7, workers=1)
    problems = ProblemGenerator(open_catalog(catalog), seed=3).generate(6, ["product", "shop", "voucher"])
    write_problems(root / "problems.jsonl", problems)
    judge = OfflineJudge()
    records = []
    for kind in ("agentic", "pipeline"):
        run_eval(
            EvalConfig(
                catalog=catalog,
                problems=root / "problems.jsonl",
                agent=f"reference:{kind}",
                out=root / kind,
                executor="inline",
                similarity="lexical",
                bootstrap=10,
            ),
            judge=lambda r, p: judge(r, p),
        )
        records += [orjson.loads(x) for x in (root / kind / "trajectories.jsonl").read_bytes().splitlines()]
    return records


COMPACT_RESULTS = 3


def compact(record: dict) -> dict:
    """The record with every list observation cut to its first `COMPACT_RESULTS` items, in the tool
    messages and in the call log's results alike."""
    messages = []
    for message in record["messages"]:
        if message["role"] == "tool" and message.get("content", "").startswith("["):
            items = orjson.loads(message["content"])
            message = {**message, "content": orjson.dumps(items[:COMPACT_RESULTS]).decode()}
        messages.append(message)
    calls = [
        {**c, "result": c["result"][:COMPACT_RESULTS]} if isinstance(c.get("result"), list) else c
        for c in record["calls"]
    ]
    return {**record, "messages": messages, "calls": calls}


def synthesise(path: Path, bases: list[dict], n: int, seed: int = 0) -> int:
    rng = random.Random(seed)
    size = 0
    with path.open("wb") as out:
        for i in range(n):
            record = bases[i % len(bases)]
            problem = i // 10
            extra = " ".join(rng.sample(WORDS, 2))
            query = f"{record['problem']['query']} ({extra} #{problem})"
            messages = list(record["messages"])
            first_user = next(k for k, m in enumerate(messages) if m["role"] == "user")
            messages[first_user] = {**messages[first_user], "content": query}
            for k, m in enumerate(messages):
                if m.get("reasoning_content"):
                    messages[k] = {**m, "reasoning_content": f"{m['reasoning_content']} [{i}:{k} {extra}]"}
                    break
            varied = {
                **record,
                "record_id": f"{i:024x}",
                "messages": messages,
                "problem": {
                    **record["problem"],
                    "problem_id": f"bench-{problem}",
                    "query": query,
                    "leak_cluster_id": None,
                },
                "judge": {**record["judge"], "quality": rng.choice([0.1, 0.5, 0.7, 0.9])}
                if record.get("judge")
                else None,
            }
            line = orjson.dumps(varied) + b"\n"
            size += len(line)
            out.write(line)
    return size


def synthetic_trajectories(root: Path, n: int, say) -> tuple[Path, int]:
    """`n` varied records of the template episodes in `root/trajectories.jsonl`: (path, bytes). What the
    judge and rewrite benchmarks read."""
    say("playing the template episodes (reference agents, offline judge) ...")
    source = root / "trajectories.jsonl"
    return source, synthesise(source, templates(root), n)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--n", type=int, default=100_000, help="rows (1M full-size rows need ~110 GB of disk)"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tokenizers", default="default,regex")
    parser.add_argument("--profile", choices=("full", "compact"), default="full")
    parser.add_argument("--out", default="bench/out")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="corpus-bench-") as scratch:
        root = Path(scratch)
        bases = templates(root)
        if args.profile == "compact":
            bases = [compact(b) for b in bases]
        source = root / "synthetic.jsonl"
        started = time.perf_counter()
        size = synthesise(source, bases, args.n)
        results = {
            "n": args.n,
            "profile": args.profile,
            "workers": args.workers,
            "cpu_count": os.cpu_count(),
            "input_bytes": size,
            "mean_record_bytes": size / args.n,
            "synthesise_s": time.perf_counter() - started,
            "runs": [],
        }
        for tokenizer in args.tokenizers.split(","):
            process = psutil.Process()
            peak = [process.memory_info().rss]
            started = time.perf_counter()

            def sample(_n: int, process=process, peak=peak) -> None:
                rss = process.memory_info().rss + sum(c.memory_info().rss for c in process.children())
                peak[0] = max(peak[0], rss)

            result = build_corpus(
                CorpusConfig(
                    inputs=[source],
                    out=root / f"out-{tokenizer}",
                    tokenizer=tokenizer,
                    min_quality=0.5,
                    workers=args.workers,
                ),
                progress=sample,
            )
            seconds = time.perf_counter() - started
            run = {
                "tokenizer": tokenizer,
                "seconds": seconds,
                "rows_per_s": args.n / seconds,
                "input_mb_per_s": size / seconds / 1e6,
                "stage_seconds": result.stage_seconds,
                "peak_rss_mb_main_plus_workers": peak[0] / 2**20,
                "max_child_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                "counts": result.counts,
                "reasons": result.reasons,
            }
            results["runs"].append(run)
            shutil.rmtree(root / f"out-{tokenizer}")  # at 1M rows each run writes ~20 GB
            print(json.dumps({k: v for k, v in run.items() if k not in ("counts", "reasons")}))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"corpus_bench-{args.profile}-{args.n}.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
