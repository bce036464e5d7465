"""Shared fixtures: a real catalogue, generated problems and real reference-agent runs (judged offline)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from shoparena.eval.config import EvalConfig
from shoparena.eval.runner import run_eval
from shoparena.index.catalog_dir import build_synthetic, open_catalog
from shoparena.judge.offline import OfflineJudge
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems

DISTINCT_QUERIES = [
    "red ceramic coffee mug with lid dishwasher safe 350ml",
    "bamboo cutting board large with juice groove organic",
    "stainless steel water bottle insulated 1 litre blue",
    "wireless gaming mouse rgb 16000 dpi ergonomic black",
    "cotton bath towel set of 4 grey quick dry",
    "leather wallet men slim rfid blocking brown",
]
"""Six shopping queries that share no content word: each is its own leak cluster."""


class Runs:
    def __init__(self, root: Path, catalog: Path, problems: Path):
        self.root = root
        self.catalog = catalog
        self.problems = problems
        self.agentic = root / "run_agentic"
        self.pipeline = root / "run_pipeline"

    def records(self, run: Path) -> list[dict]:
        return [orjson.loads(line) for line in (run / "trajectories.jsonl").read_bytes().splitlines() if line]


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> Runs:
    root = tmp_path_factory.mktemp("corpus")
    catalog = root / "cat"
    build_synthetic(catalog, 3000, seed=7, workers=1)
    backend = open_catalog(catalog)
    problems = ProblemGenerator(backend, seed=3).generate(9, ["product", "shop", "voucher"], variants=2)
    problems_path = root / "problems.jsonl"
    write_problems(problems_path, problems)
    judge = OfflineJudge()
    for kind in ("agentic", "pipeline"):
        run_eval(
            EvalConfig(
                catalog=catalog,
                problems=problems_path,
                agent=f"reference:{kind}",
                out=root / f"run_{kind}",
                executor="inline",
                similarity="lexical",
                bootstrap=10,
            ),
            judge=lambda record, problem: judge(record, problem),
        )
    return Runs(root, catalog, problems_path)


def openai_row(
    query: str = "wireless earbuds under 500 pesos",
    *,
    recommend: str | None = '{"product_ids": "P1"}',
    quality: float | None = 0.9,
    problem_id: str | None = "prob-1",
    bucket: str = "product",
    extra_calls: int = 1,
    origin: str | None = None,
    end: str = "terminate",
) -> dict:
    """A well-formed OpenAI-messages row: search (reasoned), optional more searches, recommend, terminate."""
    messages: list[dict] = [{"role": "user", "content": query}]
    n = 0
    for i in range(extra_calls):
        n += 1
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": f"search attempt {i}",
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {
                            "name": "find_product",
                            "arguments": orjson.dumps({"q": f"{query} {i}"}).decode(),
                        },
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": '[{"product_id": "P1"}]'})
    if recommend is not None:
        n += 1
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": "P1 fits",
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "recommend_product", "arguments": recommend},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "ok"})
    if end == "terminate":
        n += 1
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "terminate", "arguments": '{"status": "success"}'},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "done"})
    elif end == "think":
        messages.append(
            {"role": "assistant", "content": None, "reasoning_content": "maybe I should look more"}
        )
    metadata: dict = {"bucket": bucket, "judge_quality": quality}
    if problem_id is not None:
        metadata["problem_id"] = problem_id
    if origin is not None:
        metadata["tool_call_origin"] = origin
    return {"messages": messages, "metadata": metadata}


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path
