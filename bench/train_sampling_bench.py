"""Throughput of the sampling stages on the tiny model, on this machine's CPU (issue 14, "Measured").

One generated catalogue and problem set; a corpus built the real way (reference-agent runs through
`build_corpus`) for the leak guard. Measured:
- sampling (`rollouts.collect`: guard + harness episodes + strict scoring + rows): episodes/s of the
  tiny model (`hf:`, the rs stage's sampler: T 0.9, top_p 0.95, `--max-new-tokens` a turn) and of the
  reference agent (the tiny configs' teacher);
- the leak guard alone (problems/s against the corpus);
- KTO (`run_kto`, no probe): trained tokens/s over `--steps` steps, and one recommend-rate probe's
  seconds for `--probe` greedy episodes (`kto_probe.Probe.run` on the live model).

    .venv/bin/python bench/train_sampling_bench.py --steps 4
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from shoparena.corpus.pipeline import CorpusConfig, build_corpus
from shoparena.eval.config import EvalConfig
from shoparena.eval.runner import run_eval
from shoparena.index.catalog_dir import build_synthetic, open_catalog
from shoparena.judge.offline import OfflineJudge
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from shoparena.scoring.suite import load_problem_file
from shoparena.train.kto import KTOStageConfig, run_kto
from shoparena.train.kto_probe import Probe
from shoparena.train.leak_guard import guard_problems
from shoparena.train.rollouts import Sampling, collect
from shoparena.train.tiny_model import TinyModelConfig, make_tiny_model

OUT = Path(__file__).parent / "out" / "train_sampling_bench.json"


def world(root: Path, problems: int) -> tuple[Path, Path, Path, Path]:
    """(catalogue, corpus, candidate problems, teacher trajectories scored strictly)."""
    catalog = root / "cat"
    build_synthetic(catalog, 3000, seed=7, workers=1)
    backend = open_catalog(catalog)
    generated = ProblemGenerator(backend, seed=11).generate(
        problems, ["product", "shop", "voucher"], variants=2
    )
    backend.close()
    in_corpus, candidates = generated[0::2], generated[1::2]
    corpus_problems, candidate_file = root / "corpus_problems.jsonl", root / "candidates.jsonl"
    write_problems(corpus_problems, in_corpus)
    write_problems(candidate_file, candidates)
    run = root / "run"
    config = EvalConfig(
        catalog=catalog,
        problems=corpus_problems,
        agent="reference:agentic",
        out=run,
        executor="inline",
        similarity="lexical",
        mode="strict",
        bootstrap=0,
    )
    judge = OfflineJudge()  # an unjudged row never passes the corpus' quality gate
    run_eval(config, judge=lambda record, problem: judge(record, problem))
    corpus = root / "corpus"
    built = build_corpus(
        CorpusConfig(inputs=[run], out=corpus, catalog=catalog, min_quality=0.0, per_problem=1, eval_size=4)
    )
    if not built.counts["eval"]:
        raise RuntimeError(
            f"the bench corpus has no eval rows ({built.counts}): the guard would guard nothing"
        )
    return catalog, corpus, candidate_file, run / "trajectories.jsonl"


def bench_sampling(
    agent: str, catalog: Path, corpus: Path, problems: Path, out: Path, sampling: Sampling
) -> dict:
    started = time.perf_counter()
    collected = collect(agent, catalog, problems, corpus, out, sampling, progress=False, say=lambda _: None)
    wall = time.perf_counter() - started
    return {
        "agent": agent.split("/")[-1] if agent.startswith("hf:") else agent,
        "samples": sampling.samples,
        "episodes": collected.rollouts.sampled,
        "episodes_per_s": round(collected.rollouts.sampled / wall, 3),
        "strict_pass_rate": collected.rollouts.asr,
        "training_rows": len(collected.rows),
        "wall_s": round(wall, 2),
    }


def bench_guard(problems: Path, corpus: Path) -> dict:
    loaded = load_problem_file(problems)
    started = time.perf_counter()
    report = guard_problems(loaded, corpus)
    wall = time.perf_counter() - started
    return {**report.counts(), "problems_per_s": round(len(loaded) / wall, 1), "wall_s": round(wall, 3)}


def bench_kto(model: Path, trajectories: Path, out: Path, steps: int) -> dict:
    config = KTOStageConfig(
        model=model,
        trajectories=[trajectories],
        out=out,
        max_steps=steps,
        max_length=16384,
        gradient_checkpointing=False,
        progress=False,
    )
    started = time.perf_counter()
    result = run_kto(config)
    return {
        "steps": result.steps,
        "examples": result.details["labels"]["examples"],
        "tokens": result.tokens,
        "tokens_per_s": result.details["tokens_per_s"],
        "stage_wall_s": round(time.perf_counter() - started, 2),
    }


def bench_probe(model: Path, catalog: Path, problems: Path, out: Path, episodes: int) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    probe = Probe(
        catalog,
        load_problem_file(problems)[:episodes],
        out,
        Sampling(samples=1, temperature=0.0, top_p=1.0, max_turns=8, max_new_tokens=64, similarity="lexical"),
    )
    tokenizer = AutoTokenizer.from_pretrained(model)
    policy = AutoModelForCausalLM.from_pretrained(model)
    started = time.perf_counter()
    result = probe.run(policy, tokenizer, 0)
    wall = time.perf_counter() - started
    return {"episodes": result.episodes, "rate": result.rate, "wall_s": round(wall, 2), "max_new_tokens": 64}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problems", type=int, default=9, help="tasks (each in two variants)")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--probe", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="train-sampling-bench-") as tmp:
        root = Path(tmp)
        catalog, corpus, candidates, trajectories = world(root, args.problems)
        tiny = make_tiny_model(TinyModelConfig(out=root / "tiny"))
        model_sampling = Sampling(
            samples=2, max_turns=2, max_new_tokens=args.max_new_tokens, similarity="lexical"
        )
        results = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "load_average": os.getloadavg(),
            "model_parameters": tiny.parameters,
            "leak_guard": bench_guard(candidates, corpus),
            "sampling": [
                bench_sampling(f"hf:{tiny.path}", catalog, corpus, candidates, root / "rs", model_sampling),
                bench_sampling(
                    "reference:agentic",
                    catalog,
                    corpus,
                    candidates,
                    root / "teacher",
                    Sampling(samples=1, similarity="lexical"),
                ),
            ],
            "kto": bench_kto(tiny.path, trajectories, root / "kto", args.steps),
            "probe": bench_probe(tiny.path, catalog, candidates, root / "probe", args.probe),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
