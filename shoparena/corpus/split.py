"""Leak-cluster-guarded split (SPEC §8.6): problems → clusters → train / eval / never-touch pools.

Clusters are the connected components of two links between problems:
- the same leak cluster: a `leak_cluster_id` the row carries, or the reward-spec fingerprint
  (`problems.canonical.reward_fingerprint`) of a problem known from a problems file;
- near-duplicate query text: MinHash/LSH (datasketch) over the query's content words. Problems that
  carry no cluster (rows normalised from text, with ids hashed from their first user turn) are looked up
  against every query; problems with a known cluster only link through it, so template-shared wording
  between different generated tasks does not chain unrelated tasks together.

A cluster holding any never-touch problem (by id, by fingerprint or by near-duplicate query) is
never-touch as a whole. The other clusters are drawn for eval per bucket (a cluster's bucket is its
most common one), in a seeded order, until each bucket's share of `eval_size` rows is met; the rest is
train. `check_disjoint` verifies the result and raises `LeakError`.

Problems with no kept rows (those only axis-B rows have) are clustered like the others, so the
never-touch guard reaches them and their near-duplicates, but never drawn for eval.

A small corpus would get an empty eval split (10% of 9 rows is 0), and later stages evaluate on the
held-out problems; so when the draw leaves eval empty although it was not asked to be (`eval_size` 0)
and two or more clusters have rows, the smallest cluster (seeded among equals) is held out and the
plan says so (`notes`). When no cluster can be held out without emptying train, it says that
(`warnings`).

Memory is O(distinct problems), independent of the number of rows.
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable

from pydantic import BaseModel

from shoparena.problems.canonical import reward_fingerprint
from shoparena.problems.models import Problem

NUM_PERM = 64
LSH_THRESHOLD = 0.6
_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "for",
        "to",
        "in",
        "on",
        "with",
        "without",
        "that",
        "this",
        "is",
        "are",
        "be",
        "i",
        "me",
        "my",
        "we",
        "you",
        "your",
        "it",
        "its",
        "please",
        "want",
        "need",
        "looking",
        "find",
        "show",
        "get",
        "buy",
        "some",
        "any",
        "from",
        "by",
        "at",
        "as",
        "can",
        "could",
        "would",
        "like",
        "which",
        "under",
        "over",
        "than",
        "less",
        "more",
        "about",
        "one",
    ]
)


class LeakError(RuntimeError):
    """train and eval share a problem or a leak cluster: the split is invalid."""


class ProblemEntry(BaseModel):
    problem_id: str
    bucket: str | None
    query: str
    cluster_hint: str | None
    rows: int


class SplitPlan(BaseModel):
    """Where every problem goes, and the cluster it was assigned with."""

    pool: dict[str, str]
    cluster: dict[str, str]
    eval_target: int
    clusters: int
    never_touch_clusters: int
    notes: list[str] = []
    """What the split did beyond its target (the one-cluster eval floor)."""
    warnings: list[str] = []
    """Why eval is empty when it was not asked to be."""


class NeverTouch(BaseModel):
    problem_ids: set[str] = set()
    fingerprints: set[str] = set()
    queries: list[str] = []

    @classmethod
    def from_problems(cls, problems: Iterable[Problem]) -> NeverTouch:
        out = cls()
        for problem in problems:
            out.problem_ids.add(problem.problem_id)
            out.fingerprints.add(problem.leak_cluster_id or reward_fingerprint(problem))
            out.fingerprints.add(reward_fingerprint(problem))
            out.queries.append(problem.query)
        return out


def query_words(query: str) -> set[str]:
    words = {w for w in _WORD.findall(query.lower()) if w not in STOPWORDS}
    return words or set(_WORD.findall(query.lower()))


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        parent = self.parent
        root = x
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            if ra < rb:
                ra, rb = rb, ra
            self.parent[ra] = rb


def _minhashes(queries: list[str]):
    from datasketch import MinHash

    return MinHash.bulk([[w.encode() for w in sorted(query_words(q))] for q in queries], num_perm=NUM_PERM)


def _bands() -> tuple[int, int]:
    """(bands, rows per band) that datasketch's LSH picks for `LSH_THRESHOLD` at `NUM_PERM`."""
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=LSH_THRESHOLD, num_perm=NUM_PERM)
    return lsh.b, lsh.r


def leak_clusters(
    problems: list[ProblemEntry], known_fingerprints: dict[str, str], never_touch: NeverTouch
) -> tuple[dict[str, str], set[str]]:
    """(problem id → cluster id, never-touch cluster ids)."""
    uf = _UnionFind()
    nodes = [f"p:{p.problem_id}" for p in problems]
    for node, entry in zip(nodes, problems, strict=True):
        uf.find(node)
        hint = entry.cluster_hint or known_fingerprints.get(entry.problem_id)
        if hint:
            uf.union(node, f"c:{hint}")
        if entry.problem_id in never_touch.problem_ids:
            uf.union(node, "never")
    for fingerprint in never_touch.fingerprints:
        if uf.parent.get(f"c:{fingerprint}") is not None:
            uf.union(f"c:{fingerprint}", "never")

    # LSH by its band buckets: two queries are candidates when one of their bands matches. Unioning
    # each bucket's members once is linear in the number of problems; asking the index for every
    # problem's candidates instead returned each near-duplicate family once per member (quadratic: a
    # 10k-problem family took minutes). The edges are the same as "every unhinted problem and every
    # never-touch query joins its candidates": a bucket with at least one such member joins all of
    # its members; a bucket of hinted problems alone joins nothing, since none of them would have asked.
    bands, rows = _bands()
    buckets: list[dict[bytes, list[tuple[str, bool]]]] = [{} for _ in range(bands)]
    members: list[tuple[str, bool]] = [
        (node, not (entry.cluster_hint or entry.problem_id in known_fingerprints))
        for node, entry in zip(nodes, problems, strict=True)
    ]
    hashes = list(_minhashes([p.query for p in problems]))
    for i, minhash in enumerate(_minhashes(never_touch.queries)):
        members.append((f"n:{i}", True))
        hashes.append(minhash)
        uf.union(f"n:{i}", "never")
    for member, minhash in zip(members, hashes, strict=True):
        values = minhash.hashvalues
        for band, table in enumerate(buckets):
            table.setdefault(values[band * rows : (band + 1) * rows].tobytes(), []).append(member)
    for table in buckets:
        for bucket in table.values():
            if len(bucket) < 2:
                continue
            active = [node for node, asks in bucket if asks]
            if not active:
                continue
            for node, _ in bucket:
                if node != active[0]:
                    uf.union(active[0], node)

    never_root = uf.find("never")
    cluster_of: dict[str, str] = {}
    names: dict[str, str] = {}
    for node, entry in zip(nodes, problems, strict=True):
        root = uf.find(node)
        if root not in names:
            hint_root = root[2:] if root.startswith("c:") else None
            names[root] = hint_root or f"lsh-{root[2:][:32]}"
            if root == never_root:
                names[root] = "never-touch"
        cluster_of[entry.problem_id] = names[root]
    return cluster_of, {"never-touch"} if never_root in names else set()


def plan_split(
    problems: list[ProblemEntry],
    known_fingerprints: dict[str, str],
    never_touch: NeverTouch,
    eval_size: int | None,
    seed: int,
) -> SplitPlan:
    cluster_of, never = leak_clusters(problems, known_fingerprints, never_touch)
    members: dict[str, list[ProblemEntry]] = defaultdict(list)
    for entry in problems:
        members[cluster_of[entry.problem_id]].append(entry)
    # clusters of problems with no kept rows (axis B only) hold nothing to draw
    candidates = {c: m for c, m in members.items() if c not in never and any(e.rows for e in m)}
    total_rows = sum(e.rows for m in candidates.values() for e in m)
    target = default_eval_size(total_rows) if eval_size is None else max(0, min(eval_size, total_rows))

    by_bucket: dict[str, list[str]] = defaultdict(list)
    bucket_rows: Counter[str] = Counter()
    for cluster, entries in candidates.items():
        counts: Counter[str] = Counter()
        for e in entries:
            counts[e.bucket or "unknown"] += e.rows
        bucket = min(counts, key=lambda b: (-counts[b], b))
        by_bucket[bucket].append(cluster)
        bucket_rows[bucket] += sum(e.rows for e in entries)
    quotas = _quotas(bucket_rows, target)
    rng = random.Random(seed)
    eval_clusters: set[str] = set()
    for bucket in sorted(by_bucket):
        order = sorted(by_bucket[bucket])
        rng.shuffle(order)
        taken = 0
        for cluster in order:
            size = sum(e.rows for e in candidates[cluster])
            shortfall = quotas[bucket] - taken
            if shortfall <= 0:
                break
            if size - shortfall <= shortfall:  # overshoot by at most what is still missing
                eval_clusters.add(cluster)
                taken += size
    notes: list[str] = []
    warnings: list[str] = []
    if not eval_clusters and eval_size != 0:
        _eval_floor(candidates, target, rng, eval_clusters, notes, warnings)
    pool = {}
    for cluster, entries in members.items():
        name = "never_touch" if cluster in never else "eval" if cluster in eval_clusters else "train"
        for e in entries:
            pool[e.problem_id] = name
    return SplitPlan(
        pool=pool,
        cluster=cluster_of,
        eval_target=target,
        clusters=len(members),
        never_touch_clusters=len(never & set(members)),
        notes=notes,
        warnings=warnings,
    )


def _eval_floor(
    candidates: dict[str, list[ProblemEntry]],
    target: int,
    rng: random.Random,
    eval_clusters: set[str],
    notes: list[str],
    warnings: list[str],
) -> None:
    """The draw left eval empty: hold out the smallest cluster (seeded among equals) if another one
    stays for train, else say why eval is empty."""
    rows = {c: sum(e.rows for e in entries) for c, entries in candidates.items()}
    problems = sum(len(entries) for entries in candidates.values())
    if len(candidates) >= 2:
        order = sorted(candidates)
        rng.shuffle(order)
        cluster = min(order, key=rows.__getitem__)
        eval_clusters.add(cluster)
        n = len(candidates[cluster])
        notes.append(
            f"eval holds 1 leak cluster ({n} problem{'s' * (n != 1)}, {rows[cluster]} rows) although "
            f"its target of {target} rows left it empty: later stages evaluate on held-out problems"
        )
    elif problems >= 2:
        warnings.append(
            f"the eval split is empty: all {problems} problems with kept rows are in one leak cluster, "
            "so none can be held out without leaking into train"
        )
    elif problems == 1:
        warnings.append(
            "the eval split is empty: only one problem has kept rows, and holding it out would leave "
            "train empty"
        )
    else:
        warnings.append("the eval split is empty: no rows were kept")


def default_eval_size(rows: int) -> int:
    """10% of the rows, at most 1000 (and none for fewer than 10 rows)."""
    return 0 if rows < 10 else min(1000, rows // 10)


def _quotas(bucket_rows: Counter[str], target: int) -> dict[str, int]:
    """Largest-remainder shares of `target` in proportion to each bucket's rows."""
    total = sum(bucket_rows.values())
    if total == 0 or target == 0:
        return dict.fromkeys(bucket_rows, 0)
    exact = {b: target * n / total for b, n in bucket_rows.items()}
    quotas = {b: int(v) for b, v in exact.items()}
    for b in sorted(exact, key=lambda b: (-(exact[b] - quotas[b]), b))[: target - sum(quotas.values())]:
        quotas[b] += 1
    return quotas


def check_disjoint(train: Iterable[tuple[str, str]], eval_: Iterable[tuple[str, str]]) -> None:
    """Raise `LeakError` when train and eval share a problem id or a leak cluster; both are (problem id,
    cluster id) pairs as written to the files."""
    train_ids, train_clusters = set(), set()
    for problem_id, cluster in train:
        train_ids.add(problem_id)
        train_clusters.add(cluster)
    pairs = list(eval_)
    shared_ids = sorted({p for p, _ in pairs} & train_ids)
    shared_clusters = sorted({c for _, c in pairs} & train_clusters)
    if shared_ids or shared_clusters:
        raise LeakError(
            f"train ∩ eval is not empty: {len(shared_ids)} problem ids (e.g. {shared_ids[:3]}) and "
            f"{len(shared_clusters)} leak clusters (e.g. {shared_clusters[:3]}) are in both"
        )
