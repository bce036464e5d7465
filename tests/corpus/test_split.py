"""Leak clusters from reward hints and near-duplicate queries (MinHash LSH band buckets), and the
split plan's eval floor."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.corpus.split import NeverTouch, ProblemEntry, SplitPlan, leak_clusters, plan_split

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


# -- the eval floor: a small corpus still gets a held-out problem -------------------------------------
WORDS = [
    "kettle",
    "lamp",
    "sofa",
    "drill",
    "tent",
    "scarf",
    "piano",
    "kayak",
    "wok",
    "globe",
    "easel",
    "harp",
]


def _pools(plan: SplitPlan, entries: list[ProblemEntry]) -> dict[str, set[str]]:
    """pool → clusters with kept rows in it."""
    pools: dict[str, set[str]] = {}
    for e in entries:
        if e.rows:
            pools.setdefault(plan.pool[e.problem_id], set()).add(plan.cluster[e.problem_id])
    return pools


def _cluster_has_rows(plan: SplitPlan, entry: ProblemEntry, entries: list[ProblemEntry]) -> bool:
    cluster = plan.cluster[entry.problem_id]
    return any(e.rows for e in entries if plan.cluster[e.problem_id] == cluster)


def test_nine_rows_in_nine_problems_hold_one_out():
    """10% of 9 rows rounds to 0; the smallest cluster is held out anyway, and the plan says so."""
    entries = [_entry(f"p{i}", f"{WORDS[i]} with a {WORDS[i + 1]} shaped handle") for i in range(9)]
    plan = plan_split(entries, {}, NeverTouch(), None, seed=0)
    assert plan.eval_target == 0
    assert list(plan.pool.values()).count("eval") == 1
    assert len(plan.notes) == 1 and "later stages evaluate on held-out problems" in plan.notes[0]
    assert plan.warnings == []
    asked_none = plan_split(entries, {}, NeverTouch(), 0, seed=0)
    assert "eval" not in asked_none.pool.values() and asked_none.notes == asked_none.warnings == []


def test_when_no_problem_can_be_held_out_the_plan_says_why():
    one_cluster = [_entry("a", QUERY, "same"), _entry("b", OTHER, "same")]
    plan = plan_split(one_cluster, {}, NeverTouch(), None, seed=0)
    assert set(plan.pool.values()) == {"train"} and plan.notes == []
    assert "one leak cluster" in plan.warnings[0]
    lone = plan_split([_entry("a", QUERY)], {}, NeverTouch(), None, seed=0)
    assert set(lone.pool.values()) == {"train"} and "only one problem" in lone.warnings[0]


entry_specs = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from([None, "h1", "h2"]), st.sampled_from(["product", "shop"])),
    min_size=0,
    max_size=12,
)


@settings(max_examples=80, deadline=None)
@given(specs=entry_specs, eval_size=st.sampled_from([None, None, 0, 1, 3]), seed=st.integers(0, 5))
def test_eval_is_empty_only_when_asked_or_impossible(specs, eval_size, seed):
    """Whatever the problems (some with no kept rows, i.e. axis B only; some sharing a cluster hint):
    eval is empty only when asked (no warning then) or when fewer than two clusters hold rows (a
    warning says why); at the default size train keeps a cluster too. A cluster of problems with no
    kept rows is never drawn."""
    entries = [
        ProblemEntry(
            problem_id=f"p{i}",
            bucket=bucket,
            query=f"{WORDS[i]} {WORDS[-1 - i]} number {i}",
            cluster_hint=hint,
            rows=rows,
        )
        for i, (rows, hint, bucket) in enumerate(specs)
    ]
    plan = plan_split(entries, {}, NeverTouch(), eval_size, seed)
    pools = _pools(plan, entries)
    drawable = set().union(*pools.values()) if pools else set()
    assert all(plan.pool[e.problem_id] != "eval" for e in entries if not _cluster_has_rows(plan, e, entries))
    if eval_size == 0:
        assert "eval" not in pools and plan.notes == plan.warnings == []
    elif "eval" not in pools:
        assert len(drawable) < 2 and len(plan.warnings) == 1
    else:
        assert plan.warnings == []
    if eval_size is None and len(drawable) >= 2:
        assert pools.get("eval") and pools.get("train")
