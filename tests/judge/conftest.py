"""Real trajectories for the judge: a generated catalogue, episodes driven through the harness with
crafted reasoning, and records built from what the episode logged (never hand-written call logs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shoparena.harness.episode import Episode
from shoparena.index.catalog_dir import build_synthetic, open_catalog
from shoparena.records.trajectory import (
    AgentInfo,
    HarnessInfo,
    Outcome,
    ProblemInfo,
    Timings,
    TokenUsage,
    TrajectoryRecord,
)

QUERY = "wireless earbuds for my commute"
SEARCH = {"q": "wireless earbuds"}


@pytest.fixture(scope="session")
def judge_catalog(tmp_path_factory):
    out: Path = tmp_path_factory.mktemp("judge_cat") / "c"
    build_synthetic(out, 2000, seed=7, workers=1)
    catalog = open_catalog(out)
    yield catalog
    catalog.close()


class Scenario:
    """One episode driven turn by turn: the model's text goes in through `run_turn` like a real model's."""

    def __init__(self, backend, query: str = QUERY):
        self.episode = Episode(backend, query, problem_id="p-judge")
        self.query = query
        self._n = 0

    def turn(self, text: str | None, name: str | None = None, arguments: dict | None = None):
        """One model turn: reasoning text, optionally one tool call; returns the observation (or None)."""
        self._n += 1
        message: dict = {"role": "assistant", "content": None}
        if text is not None:
            message["reasoning_content"] = text
        if name:
            message["tool_calls"] = [
                {
                    "id": f"t{self._n}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments or {})},
                }
            ]
        observations = self.episode.run_turn("openai", message)
        return observations[0] if observations else None

    def code_call(self, name: str, arguments: dict):
        return self.episode.call(name, arguments, origin="code")

    def search(
        self, text: str = "I will search the catalogue for earbuds that match the commute use."
    ) -> list:
        observation = self.turn(text, "find_product", SEARCH)
        assert observation.ok and observation.result, observation.text
        return observation.result

    def finish(self, text: str, product_id: str) -> None:
        self.turn(text, "recommend_product", {"product_ids": product_id})
        self.turn("The recommendation is made, so the task is complete.", "terminate", {"status": "success"})

    def record(self, usage: TokenUsage | None = None, success: bool = True) -> TrajectoryRecord:
        episode = self.episode
        return TrajectoryRecord(
            record_id=TrajectoryRecord.make_id("run-judge", "p-judge", 0),
            run_id="run-judge",
            agent=AgentInfo(agent_id="test:crafted", kind="test", version="1", spec="test:crafted"),
            problem=ProblemInfo(problem_id="p-judge", bucket="product", query=self.query),
            harness=HarnessInfo(profile=episode.profile, protocol="openai", step_cap=episode.step_cap),
            messages=episode.messages,
            tools=episode.tools,
            calls=episode.calls,
            outcome=Outcome(
                recommended_product_ids=episode.recommended_product_ids,
                terminated=episode.terminated,
                steps_used=episode.steps_used,
                end_reason=episode.end_reason,
            ),
            score={"success": success},
            scoring_mode="strict",
            usage=usage
            if usage is not None
            else TokenUsage(prompt_tokens=4000, completion_tokens=900, model_calls=4),
            timings=Timings(started_at="2025-01-01T00:00:00Z", wall_s=1.0),
            shoparena_version="test",
        )


def fresh_words(results: list[dict], query: str, n: int = 2) -> list[str]:
    """Title words of the results that the query and the search did not contain (what the model learnt)."""
    taken = set(query.lower().split()) | set(SEARCH["q"].split())
    out: list[str] = []
    for hit in results:
        for word in hit["title"].lower().split():
            if word.isalpha() and len(word) >= 4 and word not in taken and word not in out:
                out.append(word)
    assert len(out) >= n, results
    return out[:n]


@pytest.fixture
def scenario(judge_catalog):
    return Scenario(judge_catalog)


def build_trace(backend, quality: float) -> TrajectoryRecord:
    """A trajectory crafted to land on `quality` under the gates."""
    sc = Scenario(backend)
    if quality == 0.1:  # a pipeline: code emits every call, the model writes a line
        results = sc.code_call("find_product", SEARCH).result
        sc.code_call("recommend_product", {"product_ids": results[0]["product_id"]})
        sc.code_call("terminate", {"status": "success"})
        return sc.record(usage=TokenUsage())
    results = sc.search()
    first, second = results[0], results[1]
    w1, w2 = fresh_words(results, sc.query)
    if quality == 0.3:
        text = (
            "I have looked at everything that came back and I think one of these will do nicely for "
            "the commute, so I will go ahead and recommend the first one now without more checks."
        )
    elif quality == 0.5:
        text = (
            f"Several of these are {w1} models and some mention {w2}, which tells me the catalogue "
            "has relevant options for a commute, so the first listing seems a reasonable pick."
        )
    elif quality == 0.7:
        text = (
            f"The first listing, {first['product_id']}, is one of the {w1} models and it is priced at "
            f"{first['price']}; it mentions {w2} too, so it seems a reasonable pick for the commute."
        )
    else:
        cheaper, dearer = sorted((first, second), key=lambda hit: hit["price"])
        text = (
            f"Comparing two {w1} options: {cheaper['product_id']} costs {cheaper['price']} while "
            f"{dearer['product_id']} costs {dearer['price']}. {cheaper['product_id']} is cheaper and "
            f"still mentions {w2}, so I prefer it over {dearer['product_id']}."
        )
    sc.finish(text, first["product_id"])
    return sc.record()
