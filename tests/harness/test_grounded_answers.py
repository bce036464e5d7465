"""Grounded answers (issue 22, item 2): a product id an agent recommends, views or checks must have come
from a search result of the same episode. The attack is a miner file that has memorised the answers
(published with earlier races' trajectories) and recommends them without searching, run through
`run_eval` (`file:`, the sandbox, strict scoring: the arena's mode) and through the judge."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from shoparena.corpus.pipeline import CorpusConfig, build_corpus
from shoparena.eval.config import EvalConfig
from shoparena.eval.run_dir import TRAJECTORIES_FILE, read_trajectories
from shoparena.eval.runner import run_eval
from shoparena.harness import Episode
from shoparena.judge import OfflineJudge
from shoparena.records.calls import UNGROUNDED_REASON

MEMORISED = '''"""Recommends the answers it remembers for a query; searches only for show, and for something else."""

import miner_sdk

ANSWERS = {answers!r}


def agent_main(problem_data):
    ids = ANSWERS.get(problem_data["query"])
    if {search_first!r}:
        miner_sdk.call_tool("find_product", q="something else entirely", page=1)
    miner_sdk.call_tool("view_product_information", product_ids=ids)
    miner_sdk.call_tool("recommend_product", product_ids=ids)
    miner_sdk.call_tool("terminate", status="success")
    return []
'''


def memorising_miner(tmp_path: Path, problems, search_first: bool) -> Path:
    answers = {p.query: ",".join(spec.product_id for spec in p.rewards) for p in problems}
    path = tmp_path / "memorised.py"
    path.write_text(MEMORISED.format(answers=answers, search_first=search_first), encoding="utf-8")
    return path


def run(path: Path, catalog_dir, problems, out: Path, mode: str):
    run_eval(
        EvalConfig(
            catalog=catalog_dir,
            problems=list(problems),
            agent=f"file:{path}",
            out=out,
            timeout=60,
            executor="inline",
            similarity="lexical",
            mode=mode,
            bootstrap=10,
        ),
        judge=OfflineJudge(),
    )
    return read_trajectories(out / TRAJECTORIES_FILE).records


@pytest.mark.parametrize("search_first", [False, True])
def test_a_memorised_answer_recommended_without_searching_scores_nothing_in_strict_mode(
    search_first, agent_catalog_dir, agent_problems, tmp_path, sandbox_ready
):
    problems = agent_problems[:1]  # a product problem: its answer is the gold id itself
    path = memorising_miner(tmp_path, problems, search_first)
    (strict,) = run(path, agent_catalog_dir, problems, tmp_path / "strict", "strict")
    recommend = next(c for c in strict.calls if c.name == "recommend_product")
    view = next(c for c in strict.calls if c.name == "view_product_information")
    gold = problems[0].rewards[0].product_id
    assert strict.outcome.recommended_product_ids == [gold]  # the memorised answer is the right one
    assert recommend.ungrounded == view.ungrounded == f"{UNGROUNDED_REASON}: {gold}"
    assert strict.score.grounded is False and strict.score.success is False and strict.score.rule == 0.0
    assert strict.judge.quality == 0.1 and "no search of the episode returned" in strict.judge.explanation
    # the corpus's format gate reads the flag: even with every quality let through, the row is rejected
    corpus = tmp_path / "corpus"
    build_corpus(
        CorpusConfig(
            inputs=[tmp_path / "strict" / TRAJECTORIES_FILE], out=corpus, parquet=False, report=False,
            min_quality=0.0,
        )
    )  # fmt: skip
    (reject,) = [orjson.loads(line) for line in (corpus / "rejects.jsonl").read_bytes().splitlines()]
    assert reject["reason"] == "recommend_ungrounded" and gold in reject["detail"]
    # upstream mode keeps ShoppingBench's semantics: the same answer scores there
    (upstream,) = run(path, agent_catalog_dir, problems, tmp_path / "upstream", "upstream")
    assert upstream.score.success is True and upstream.score.grounded is False


def test_an_id_from_a_search_result_is_grounded_in_any_later_call(agent_catalog):
    episode = Episode(agent_catalog, "a cotton shirt", profile="oro7")
    hits = episode.call("find_product", {"q": "cotton shirt"}).result
    first, last = hits[0]["product_id"], hits[-1]["product_id"]
    shop = episode.call(
        "find_products_in_same_shop", {"product_queries": [{"q": "cotton shirt"}, {"q": "trousers"}]}
    ).result
    from_shop = [p["product_id"] for p in shop["products"]]
    episode.call("view_product_information", {"product_ids": f"{first},{last}"})
    episode.call("check_product_match", {"product_id": last, "requirements": {}})
    searched = {h["product_id"] for h in hits} | set(from_shop)
    unseen = next(
        pid
        for pid in (agent_catalog.store.dict_by_ord(i)["product_id"] for i in range(100))
        if pid not in searched
    )
    episode.call("view_product_information", {"product_ids": f"{first},{unseen}"})
    episode.call("recommend_product", {"product_ids": ",".join([first, *from_shop])})
    flags = [(c.name, c.ungrounded) for c in episode.calls]
    assert flags == [
        ("find_product", None),
        ("find_products_in_same_shop", None),
        ("view_product_information", None),
        ("check_product_match", None),
        ("view_product_information", f"{UNGROUNDED_REASON}: {unseen}"),
        ("recommend_product", None),
    ]
    assert episode.recommendation_ungrounded is None
    assert "ungrounded" not in episode.calls[0].model_dump()  # a grounded call keeps its old bytes
