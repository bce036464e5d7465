"""Summary of a problem set: what a suite or bank is made of, before anyone spends agent time on it."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel

from shoparena.problems.models import Problem


class ProblemStats(BaseModel):
    n_problems: int
    buckets: dict[str, int]
    difficulty: dict[str, int]
    bucket_difficulty: dict[str, dict[str, int]]
    constraints: dict[str, int]
    items_per_problem: dict[str, int]
    vouchers: dict[str, int]
    leak_clusters: int


def _sorted(counter: Counter) -> dict[str, int]:
    return {str(k): v for k, v in sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0])))}


def problem_stats(problems: list[Problem]) -> ProblemStats:
    """Counts per bucket and difficulty, and how often each constraint type appears across gold items."""
    buckets: Counter = Counter()
    difficulty: Counter = Counter()
    per_bucket: dict[str, Counter] = {}
    constraints: Counter = Counter()
    items: Counter = Counter()
    vouchers: Counter = Counter()
    clusters = set()
    for problem in problems:
        bucket = problem.bucket or "?"
        level = problem.difficulty or "unset"
        buckets[bucket] += 1
        difficulty[level] += 1
        per_bucket.setdefault(bucket, Counter())[level] += 1
        items[str(len(problem.rewards))] += 1
        if problem.leak_cluster_id:
            clusters.add(problem.leak_cluster_id)
        if problem.knowledge_attribute is not None:
            constraints["knowledge"] += 1
        for spec in problem.rewards:
            constraints["title"] += 1
            if spec.sku_options:
                constraints["sku_options"] += 1
            constraints["attribute"] += bool(spec.attributes)  # items that ask one or more
            for flag in spec.service or []:
                constraints[f"service:{flag}"] += 1
            for entry in spec.price or []:
                for mode in entry:
                    constraints[f"price:{mode}"] += 1
        if problem.voucher is not None:
            vouchers[f"{problem.voucher.voucher_type}/{problem.voucher.discount_type}"] += 1
    return ProblemStats(
        n_problems=len(problems),
        buckets=_sorted(buckets),
        difficulty=_sorted(difficulty),
        bucket_difficulty={b: _sorted(c) for b, c in sorted(per_bucket.items())},
        constraints=_sorted(constraints),
        items_per_problem=dict(sorted(items.items())),
        vouchers=_sorted(vouchers),
        leak_clusters=len(clusters),
    )
