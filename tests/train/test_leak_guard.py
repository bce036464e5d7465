"""The leak guard refuses eval and never-touch problems by id and by leak cluster, and counts them."""

from __future__ import annotations

import orjson
import pytest

from shoparena.index.catalog_dir import open_catalog
from shoparena.problems.generator import ProblemGenerator
from shoparena.train.leak_guard import LeakGuardError, guard_problems
from tests.train.sampling_world import World, world


@pytest.fixture(scope="module")
def w(tmp_path_factory, small_catalog_dir) -> World:
    return world(tmp_path_factory, small_catalog_dir)


def _by_id(problems, pid):
    return next(p for p in problems if p.problem_id == pid)


def test_the_world_has_every_pool(w):
    assert w.pool_ids("eval") and w.pool_ids("train")
    never_rows = [
        orjson.loads(line)
        for line in (w.corpus / "rejects.jsonl").read_bytes().splitlines()
        if b'"never_touch"' in line[:40]
    ]
    assert never_rows  # variant 1 of the never-touch tasks was refused by the build


def test_eval_problems_are_dropped_by_id_and_their_family_by_cluster(w):
    eval_ids = w.pool_ids("eval")
    eval_problem = _by_id(w.problems, sorted(eval_ids)[0])
    sibling = next(p for p in w.fresh if p.leak_cluster_id == eval_problem.leak_cluster_id)
    train_problem = _by_id(w.problems, sorted(w.pool_ids("train"))[0])

    report = guard_problems([eval_problem, sibling, train_problem], w.corpus)

    assert [d.problem_id for d in report.dropped_by_id] == [eval_problem.problem_id]
    assert report.dropped_by_id[0].pool == "eval"
    assert [d.problem_id for d in report.dropped_by_cluster] == [sibling.problem_id]
    assert report.dropped_by_cluster[0].pool == "eval"
    assert [p.problem_id for p in report.kept] == [train_problem.problem_id]
    assert report.counts() == {"candidates": 3, "kept": 1, "dropped_by_id": 1, "dropped_by_cluster": 1}
    assert "1 kept, 1 dropped by id, 1 by leak cluster" in report.summary()


def test_never_touch_suite_by_id_fingerprint_and_near_duplicate_query(w, small_catalog_dir):
    never = w.never_problems[0]
    family = w.family(never)
    # a problem with an unrelated reward but the never-touch query, lightly reworded
    backend = open_catalog(small_catalog_dir)
    try:
        other = ProblemGenerator(backend, seed=99).generate(1, ["product"])[0]
    finally:
        backend.close()
    near_duplicate = other.model_copy(
        update={"problem_id": "near-dup", "leak_cluster_id": "lc-near-dup", "query": never.query + " please"}
    )
    report = guard_problems([never, family[1], family[2], near_duplicate, other], w.corpus)

    never_rows = {
        orjson.loads(line)["problem_id"]
        for line in (w.corpus / "rejects.jsonl").read_bytes().splitlines()
        if line.startswith(b'{"reason":"never_touch"')
    }
    # variant 1 was run into the corpus: a never-touch row by id if it passed the gates, else its cluster
    by_id = {never.problem_id} | ({family[1].problem_id} & never_rows)
    assert {d.problem_id for d in report.dropped_by_id} == by_id
    assert {d.problem_id for d in report.dropped_by_cluster} == {
        family[1].problem_id,
        family[2].problem_id,
        "near-dup",
    } - by_id
    assert {d.pool for d in report.dropped_by_id + report.dropped_by_cluster} == {"never_touch"}
    assert [p.problem_id for p in report.kept] == [other.problem_id]


def test_every_fresh_problem_is_kept_unless_its_family_is_guarded(w):
    eval_clusters = {row["metadata"]["leak_cluster_id"] for row in w.pool_rows("eval")}
    never_clusters = {p.leak_cluster_id for p in w.never_problems}
    report = guard_problems(w.fresh, w.corpus)
    expected_dropped = {p.problem_id for p in w.fresh if p.leak_cluster_id in eval_clusters | never_clusters}
    assert {d.problem_id for d in report.dropped_by_cluster} == expected_dropped
    assert report.dropped_by_id == []
    assert len(report.kept) == len(w.fresh) - len(expected_dropped) > 0
    assert report.eval_problems == len(w.pool_ids("eval"))


def test_problems_without_ids_are_known_by_their_query_hash(w):
    train_problem = _by_id(w.problems, sorted(w.pool_ids("train"))[0])
    report = guard_problems([train_problem.model_copy(update={"problem_id": None})], w.corpus)
    assert report.kept[0].problem_id.startswith("q-")


def test_a_tampered_eval_pool_is_refused(w, tmp_path):
    copy = tmp_path / "corpus"
    copy.mkdir()
    for name in ("manifest.json", "train.jsonl", "rejects.jsonl"):
        (copy / name).write_bytes((w.corpus / name).read_bytes())
    lines = (w.corpus / "eval.jsonl").read_bytes().splitlines(keepends=True)
    (copy / "eval.jsonl").write_bytes(b"".join(lines[1:]))  # one eval problem's rows gone
    with pytest.raises(LeakGuardError, match="eval pool changed"):
        guard_problems(w.fresh, copy)


def test_a_missing_never_touch_suite_or_manifest_is_an_error(w, tmp_path):
    manifest = orjson.loads((w.corpus / "manifest.json").read_bytes())
    manifest["config"]["never_touch"] = [str(tmp_path / "gone.jsonl")]
    copy = tmp_path / "corpus"
    copy.mkdir()
    for name in ("eval.jsonl", "train.jsonl", "rejects.jsonl"):
        (copy / name).write_bytes((w.corpus / name).read_bytes())
    (copy / "manifest.json").write_bytes(orjson.dumps(manifest))
    with pytest.raises(LeakGuardError, match=r"gone\.jsonl is not there"):
        guard_problems(w.fresh, copy)
    # given explicitly, the suite is read from where it is now
    assert guard_problems(w.fresh, copy, never_touch=[w.never_touch]).counts()["kept"] > 0
    with pytest.raises(LeakGuardError, match=r"no manifest\.json"):
        guard_problems(w.fresh, tmp_path)
