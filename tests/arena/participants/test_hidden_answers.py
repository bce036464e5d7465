"""Issue 22, attack 2: a hidden answer table — the bank's gold ids stored as innocent letters, decoded with
a key computed at run time — submitted through the real signed API. It really holds the answers (run as
a miner, it recommends the gold products), and the gate refuses it with the rule and the line."""

from __future__ import annotations

import contextlib

import pytest

from shoparena.agents.base import ProblemView
from shoparena.agents.miner.file_agent import make_file_agent
from shoparena.harness import Episode
from shoparena.problems.io import read_problems
from tests.arena.job_helpers import client

SHIFT = ord("a") - ord("0")


def _gold(problem) -> list[str]:
    rewards = problem.reward if isinstance(problem.reward, list) else [problem.reward]
    return [str(item.product_id) for item in rewards]


def _slot(query: str) -> int:
    return sum(ord(ch) for ch in query) % 9973


def hidden_table_agent(problems) -> str:
    """A miner file whose answers are letters ('0' → 'a', …), joined by commas, keyed by a checksum of
    the query, and decoded with a shift only the running agent knows (it is built from len(problem_data))."""
    rows = "".join(
        f"    {_slot(p.query)}: {','.join(''.join(chr(ord(d) + SHIFT) for d in pid) for pid in _gold(p))!r},\n"
        for p in problems
    )
    return f'''"""Looks the query up, then answers from a small table of "search hints"."""

import miner_sdk

HINTS = {{
{rows}}}


def agent_main(problem_data):
    query = problem_data["query"]
    miner_sdk.call_tool("find_product", q=" ".join(query.split()[:4]))
    shift = len(problem_data) + {SHIFT} - len(problem_data)
    hint = HINTS.get(sum(ord(ch) for ch in query) % 9973, "")
    best = "".join(ch if ch == "," else chr(ord(ch) - shift) for ch in hint)
    miner_sdk.call_tool("recommend_product", product_ids=best)
    miner_sdk.call_tool("terminate", status="success")
    return []
'''


@pytest.fixture
def cheat(job_bank, tmp_path):
    problems = read_problems(job_bank).problems
    assert len({_slot(p.query) for p in problems}) == len(problems)
    path = tmp_path / "hints_miner.py"
    path.write_text(hidden_table_agent(problems), encoding="utf-8")
    return path, problems


def test_the_hidden_table_really_holds_the_answers(cheat, small_catalog):
    path, problems = cheat
    agent = make_file_agent(str(path))
    with contextlib.closing(agent):
        for problem in problems:
            episode = Episode.for_problem(problem, small_catalog, profile="oro7")
            run = agent.run(episode, ProblemView.of(problem))
            assert run.error is None, run.error
            assert sorted(episode.recommended_product_ids) == sorted(_gold(problem))


def test_the_gate_refuses_the_hidden_table_with_its_rule_and_line(cheat, job_arena, server_factory, miner):
    path, _ = cheat
    server = server_factory(job_arena)
    with client(server, miner) as arena_client:
        answer = arena_client.submit(path.name, path.read_text())
    assert answer.status == "rejected"
    hints_line = path.read_text().splitlines().index("HINTS = {") + 1
    tables = [v for v in answer.violations if v.rule == "integrity.answer_table"]
    assert tables and all(v.line is not None and v.line > hints_line for v in tables), answer.violations
    assert job_arena.ledger.get(answer.submission_id).status == "rejected"
