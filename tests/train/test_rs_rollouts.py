"""Sampling through the real harness (run_eval), strict scoring, and passing episodes → training rows
by the corpus normaliser, behind the leak guard."""

from __future__ import annotations

import orjson
import pytest

from shoparena.problems.io import write_problems
from shoparena.train.rollouts import Sampling, collect, eval_config, strict_pass, training_rows
from tests.train.sampling_world import World, world


@pytest.fixture(scope="module")
def w(tmp_path_factory, small_catalog_dir) -> World:
    return world(tmp_path_factory, small_catalog_dir)


def test_sampling_options_reach_model_agents_only(w, tmp_path):
    sampling = Sampling(samples=3, max_new_tokens=64)
    hf = eval_config("hf:/ckpt", w.catalog, w.fresh, tmp_path / "a", sampling)
    assert hf.mode == "strict" and hf.samples == 3
    assert hf.agent_options() == {"temperature": 0.9, "top_p": 0.95, "max_turns": 8, "max_new_tokens": 64}
    served = eval_config(
        "openai:policy", w.catalog, w.fresh, tmp_path / "b", Sampling(base_url="http://x/v1")
    )
    assert served.agent_options()["base_url"] == "http://x/v1"
    reference = eval_config("reference:agentic", w.catalog, w.fresh, tmp_path / "c", sampling)
    assert reference.agent_options() == {}
    seeded = Sampling(seed=3)
    assert eval_config("hf:/ckpt", w.catalog, w.fresh, tmp_path / "d", seeded).agent_options()["seed"] == 3
    assert (
        "seed"
        not in eval_config("reference:agentic", w.catalog, w.fresh, tmp_path / "e", seeded).agent_options()
    )


def test_collect_guards_samples_keeps_strict_passes_as_corpus_rows(w, tmp_path):
    eval_problem = next(p for p in w.problems if p.problem_id in w.pool_ids("eval"))
    problems = [eval_problem, *w.fresh]
    problems_file = tmp_path / "problems.jsonl"
    write_problems(problems_file, problems)
    said: list[str] = []
    out = tmp_path / "stage"
    collected = collect(
        "reference:agentic",
        w.catalog,
        problems_file,
        w.corpus,
        out,
        Sampling(samples=2, similarity="lexical"),
        progress=False,
        say=said.append,
    )
    counts = collected.counts()
    assert counts["guard_dropped_by_id"] == 1 and counts["guard_dropped_by_cluster"] >= 1
    assert counts["guard_kept"] == len(collected.guard.kept)
    assert said[0].startswith(f"leak guard: {len(problems)} candidates")
    guard = orjson.loads((out / "guard.json").read_bytes())
    assert guard["counts"] == collected.guard.counts()
    # every kept problem sampled twice through the harness, strictly scored; none of the refused ones
    records = [orjson.loads(x) for x in (out / "rollouts" / "trajectories.jsonl").read_bytes().splitlines()]
    assert len(records) == counts["sampled"] == 2 * counts["guard_kept"]
    assert {r["scoring_mode"] for r in records} == {"strict"}
    refused = {d.problem_id for d in collected.guard.dropped_by_id + collected.guard.dropped_by_cluster}
    assert not refused & {r["problem"]["problem_id"] for r in records}
    passed = [r for r in records if strict_pass(r)]
    assert counts["passed"] == len(passed) > 0
    # the reference agent is deterministic: its two samples of a problem are one row
    assert counts["duplicates"] == len(passed) - counts["rows"] - counts["row_rejects"] > 0
    rows = [orjson.loads(x) for x in (out / "rollout_rows.jsonl").read_bytes().splitlines()]
    assert rows == collected.rows and len(rows) == counts["rows"] > 0
    for row in rows:
        assert set(row) == {"messages", "tools", "metadata"}
        assert row["metadata"]["score_success"] is True
        calls = [c for m in row["messages"] for c in m.get("tool_calls") or []]
        assert all(isinstance(c["function"]["arguments"], dict) for c in calls)  # TRL form, as corpus export
        assert sum(c["function"]["name"] == "recommend_product" for c in calls) == 1


def test_failed_and_non_strict_records_are_not_kept(w):
    records = [orjson.loads(x) for x in (w.run / "trajectories.jsonl").read_bytes().splitlines()]
    assert not any(strict_pass(r) for r in records)  # the world's run was scored in upstream mode
    strict = [{**r, "scoring_mode": "strict"} for r in records if r["score"]["success"]]
    assert strict and all(strict_pass(r) for r in strict)
    messages = strict[0]["messages"]
    first_result = next(i for i, m in enumerate(messages) if m["role"] == "tool")
    broken = {**strict[0], "messages": messages[:first_result] + messages[first_result + 1 :]}
    converted = training_rows([strict[0], broken], "mem")
    assert len(converted.rows) == 1
    assert converted.rejects[0].reason == "unpaired_tool_call"
    assert converted.rejects[0].record_id == strict[0]["record_id"]


def test_a_bad_sampler_is_a_clear_error(w, tmp_path):
    problems_file = tmp_path / "problems.jsonl"
    write_problems(problems_file, w.fresh[:1])
    with pytest.raises(ValueError, match="unknown kind 'nosuch'"):
        collect("nosuch:x", w.catalog, problems_file, w.corpus, tmp_path / "o", Sampling(), progress=False)
