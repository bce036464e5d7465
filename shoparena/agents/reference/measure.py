"""Measure the reference agents' ASR per bucket on generated problems (the figures in
docs/reference_agents.md come from here).

    python -m shoparena.agents.reference.measure --catalog-dir /tmp/cat20k --size 20000 \
        --per-bucket 60 --similarity lexical

Builds the synthetic catalogue when the directory does not exist, generates `3 × per_bucket`
problems with `ProblemGenerator`, runs each agent through a harness episode and scores the
recommendation with `RuleScorer`.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path
from typing import get_args

from shoparena.agents.base import ProblemView
from shoparena.agents.reference.agent import make_reference_agent
from shoparena.harness.episode import Episode, load_shops
from shoparena.index.catalog_dir import build_synthetic, open_catalog
from shoparena.problems.generator import ProblemGenerator
from shoparena.records.options import SimilarityName
from shoparena.scoring.rules import RuleScorer
from shoparena.scoring.similarity import make_similarity


def measure(
    catalog_dir: Path,
    size: int,
    catalog_seed: int,
    problem_seed: int,
    per_bucket: int,
    agents: list[str],
    profiles: list[str],
    similarity: str,
    mode: str,
) -> list[dict]:
    if not catalog_dir.exists():
        build_synthetic(catalog_dir, size, seed=catalog_seed, workers=1)
    backend = open_catalog(catalog_dir)
    shops = load_shops(catalog_dir)
    problems = ProblemGenerator(backend, seed=problem_seed).generate(3 * per_bucket)
    scorer = RuleScorer(backend, make_similarity(similarity), mode=mode)
    rows = []
    for agent_name in agents:
        for profile in profiles:
            agent = make_reference_agent(agent_name)
            started = time.perf_counter()
            episodes = []
            steps = []
            for problem in problems:
                episode = Episode.for_problem(problem, backend, profile=profile, shops=shops)
                agent.run(episode, ProblemView.of(problem))
                steps.append(episode.steps_used)
                meta = {"steps": episode.steps_used, "terminated": episode.terminated == "success"}
                episodes.append((problem, episode.recommended_product_ids or [], meta))
            elapsed = time.perf_counter() - started
            wins: dict[str, list[bool]] = defaultdict(list)
            for problem, score in zip(problems, scorer.score_many(episodes), strict=True):
                wins[problem.bucket or "product"].append(score.success)
            row = {"agent": agent_name, "profile": profile, "similarity": similarity, "mode": mode}
            for bucket, values in wins.items():
                row[bucket] = (sum(values), len(values))
            row["mean_steps"] = sum(steps) / len(steps)
            row["seconds"] = elapsed
            rows.append(row)
    backend.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog-dir", type=Path, required=True)
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--catalog-seed", type=int, default=7)
    parser.add_argument("--problem-seed", type=int, default=3)
    parser.add_argument("--per-bucket", type=int, default=60)
    parser.add_argument("--agents", default="agentic,pipeline")
    parser.add_argument("--profiles", default="oro7")
    parser.add_argument("--similarity", default="lexical", choices=get_args(SimilarityName))
    parser.add_argument("--mode", default="upstream", choices=("upstream", "strict"))
    args = parser.parse_args()
    rows = measure(
        args.catalog_dir,
        args.size,
        args.catalog_seed,
        args.problem_seed,
        args.per_bucket,
        args.agents.split(","),
        args.profiles.split(","),
        args.similarity,
        args.mode,
    )
    print("| agent | profile | similarity | mode | product | shop | voucher | mean steps | seconds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        cells = []
        for bucket in ("product", "shop", "voucher"):
            won, total = row.get(bucket, (0, 0))
            cells.append(f"{won}/{total} = {won / total:.0%}" if total else "-")
        print(
            f"| {row['agent']} | {row['profile']} | {row['similarity']} | {row['mode']} | "
            + " | ".join(cells)
            + f" | {row['mean_steps']:.1f} | {row['seconds']:.1f} |"
        )


if __name__ == "__main__":
    main()
