"""Leak clusters from reward hints and near-duplicate queries (MinHash LSH band buckets)."""

from __future__ import annotations

from shoparena.corpus.split import NeverTouch, ProblemEntry, leak_clusters

QUERY = "waterproof trail running shoes for women size 38 under 900"
OTHER = "stainless steel vacuum flask one litre keeps drinks hot"


def _entry(pid: str, query: str, hint: str | None = None) -> ProblemEntry:
    return ProblemEntry(problem_id=pid, bucket="product", query=query, cluster_hint=hint, rows=1)


def test_hinted_problems_are_joined_only_through_an_unhinted_near_duplicate():
    hinted = [_entry("a", QUERY, "reward-1"), _entry("b", QUERY, "reward-2"), _entry("c", OTHER)]
    clusters, _ = leak_clusters(hinted, {}, NeverTouch())
    assert clusters == {"a": "reward-1", "b": "reward-2", "c": "lsh-c"}

    joined, _ = leak_clusters([*hinted, _entry("d", QUERY + " please")], {}, NeverTouch())
    assert joined["a"] == joined["b"] == joined["d"] != joined["c"]


def test_a_large_family_of_near_duplicates_is_one_cluster():
    family = [_entry(f"p{i:05d}", f"{QUERY} #{i % 3}") for i in range(3000)]
    clusters, _ = leak_clusters([*family, _entry("x", OTHER)], {}, NeverTouch())
    assert {clusters[e.problem_id] for e in family} == {"lsh-p00000"}
    assert clusters["x"] == "lsh-x"


def test_never_touch_queries_pull_their_near_duplicates_in():
    problems = [_entry("a", QUERY), _entry("b", OTHER), _entry("c", OTHER + " today", "reward-9")]
    never = NeverTouch(queries=[QUERY + " now"], fingerprints={"reward-9"})
    clusters, never_clusters = leak_clusters(problems, {}, never)
    assert never_clusters == {"never-touch"}
    assert clusters["a"] == "never-touch"
    assert clusters["b"] == clusters["c"] == "never-touch"  # b joins c through LSH, c is a never fingerprint
