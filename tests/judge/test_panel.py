"""A panel of annotators (`judge.panel`): the offline rules and LLM judges on real scripted endpoints on
127.0.0.1, each verified on its own; the lower median decides, the explanation shows every vote, and a
panel below its quorum fails rather than judge by a minority."""

from __future__ import annotations

import pytest

from shoparena.judge import JudgeError, LLMJudge, OfflineJudge, judge_file, make_judge
from shoparena.judge.api import JudgeSpecError
from shoparena.judge.panel import PanelJudge
from tests.judge.conftest import build_trace
from tests.judge.loopback import ScriptedServer, verdict_text


def llm(server: ScriptedServer, model: str = "judge-a", **options) -> LLMJudge:
    options.setdefault("backoff_s", 0.0)
    options.setdefault("timeout_s", 5.0)
    options.setdefault("max_retries", 0)
    return LLMJudge([model], base_url=server.base_url, api_key="k", **options)


def test_the_lower_median_decides_and_every_vote_is_in_the_explanation(judge_catalog):
    record = build_trace(judge_catalog, 0.9)  # the offline rules pass it
    assert OfflineJudge()(record).quality == 0.9
    with ScriptedServer(lambda body, i: verdict_text(0.3, "analyses_results", [])) as server:
        harsh = PanelJudge([OfflineJudge(), llm(server, "a"), llm(server, "b")])
        verdict = harsh(record)
        assert verdict.quality == 0.3 and verdict.gate == "analyses_results"
        assert "median 0.3, 2 of 3 agree" in verdict.explanation and "offline" in verdict.explanation
        assert verdict.judge_model.startswith("panel(")
        lenient_minority = PanelJudge([OfflineJudge(), OfflineJudge(), llm(server)])
        assert lenient_minority(record).quality == 0.9
        two = PanelJudge([OfflineJudge(), llm(server)])  # an even panel takes the stricter middle
        assert two(record).quality == 0.3


def test_verification_applies_to_each_annotator_before_the_vote(judge_catalog):
    """An LLM annotator claiming 0.9 with a fabricated citation is lowered by its own verification."""
    record = build_trace(judge_catalog, 0.3)
    fabricated = [{"gate": "analyses_results", "span": "compared battery life across all listings"}]
    with ScriptedServer(lambda body, i: verdict_text(0.9, "passed", fabricated)) as server:
        panel = PanelJudge([llm(server, "a"), llm(server, "b"), OfflineJudge()])
        verdict = panel(record)
        assert verdict.quality <= 0.3


def test_a_failing_annotator_is_left_out_until_the_quorum_is_lost(judge_catalog):
    record = build_trace(judge_catalog, 0.9)
    with ScriptedServer(lambda body, i: (500, '{"error": "down"}')) as server:
        panel = PanelJudge([OfflineJudge(), OfflineJudge(), llm(server)])
        verdict = panel(record)
        assert verdict.quality == 0.9 and "not answering" in verdict.explanation
        strict = PanelJudge([OfflineJudge(), llm(server, "a"), llm(server, "b")])
        with pytest.raises(JudgeError, match="1 of 3 annotators answered"):
            strict(record)


def test_a_panel_spec_and_a_file_judged_by_it(judge_catalog, tmp_path):
    import orjson

    records = [build_trace(judge_catalog, q) for q in (0.1, 0.9)]
    source = tmp_path / "t.jsonl"
    source.write_bytes(b"".join(orjson.dumps(r.model_dump(mode="json")) + b"\n" for r in records))
    with ScriptedServer(lambda body, i: verdict_text(0.3, "analyses_results", [])) as server:
        panel = make_judge("panel:offline,openai:m1,openai:m2", base_url=server.base_url, backoff_s=0.0)
        report = judge_file(source, tmp_path / "out.jsonl", panel)
        panel.close()
        assert {request["body"]["model"] for request in server.requests} == {"m1", "m2"}
    judged = [orjson.loads(line) for line in (tmp_path / "out.jsonl").read_bytes().splitlines()]
    assert [j["judge"]["quality"] for j in judged] == [0.1, 0.3]
    assert report.records == 2 and report.judge_failures == 0
    with pytest.raises(JudgeSpecError, match="panel"):
        make_judge("panel:offline,bogus")
    with pytest.raises(JudgeSpecError, match="quorum"):
        make_judge("panel:offline", quorum=3)
