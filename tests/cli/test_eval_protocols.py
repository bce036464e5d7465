"""`shoparena eval --protocol` over every agent kind and every spelling of every protocol.

The harness keeps one protocol registry (`openai`, `upstream` alias `tags`, `qwen3` alias `qwen`);
every agent kind reads it, so a spelling that works for one kind works for all that speak a protocol,
and the run records the protocol's own name. Agents that cannot speak a protocol say so clearly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.harness.protocols import canonical_protocol, protocol_spellings
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from tests.agents.conftest_llm import Reply, ScriptedChatServer, completion, tool_call

runner = CliRunner()
MINER = Path(__file__).resolve().parents[1] / "agents" / "miners" / "good_miner.py"
SPELLINGS = [None, *protocol_spellings()]
GIVE_UP = {
    "openai": completion(None, [tool_call("call_1", "terminate", {"status": "failure"})]),
    "upstream": completion(
        '<think>Nothing to search for.</think>\n<tool_call>[{"name": "terminate", "parameters": '
        '{"status": "failure"}}]</tool_call>'
    ),
    "qwen3": completion(
        '<think>Nothing to search for.</think>\n<tool_call>\n{"name": "terminate", "arguments": '
        '{"status": "failure"}}\n</tool_call>'
    ),
}
"""A model that ends the episode at once, in each protocol's own format."""


@pytest.fixture(scope="module")
def problems_path(small_catalog, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("protocols") / "problems.jsonl"
    write_problems(path, ProblemGenerator(small_catalog, seed=3).generate(1, buckets=("product",)))
    return path


def run(small_catalog_dir, problems_path: Path, out: Path, agent: str, protocol: str | None, *extra: str):
    args = ["eval", "--catalog", str(small_catalog_dir), "--problems", str(problems_path)]
    args += ["--agent", agent, "--out", str(out), "--executor", "inline", "--similarity", "lexical"]
    args += ["--bootstrap", "0", "--quiet", *extra]
    if protocol is not None:
        args += ["--protocol", protocol]
    return runner.invoke(app, args)


def recorded(out: Path) -> tuple[str, list[dict]]:
    """(the protocol run.json recorded, the trajectory records)."""
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    return json.loads((out / "run.json").read_text())["protocol"], records


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("variant", ["agentic", "pipeline"])
def test_reference_agents_speak_every_spelling(small_catalog_dir, problems_path, tmp_path, variant, spelling):
    result = run(small_catalog_dir, problems_path, tmp_path / "r", f"reference:{variant}", spelling)
    assert result.exit_code == 0, result.output
    protocol, records = recorded(tmp_path / "r")
    expected = canonical_protocol(spelling) if spelling else "openai"
    assert protocol == (canonical_protocol(spelling) if spelling else None)
    assert [r["harness"]["protocol"] for r in records] == [expected]
    assert records[0]["calls"] and records[0]["outcome"]["error"] is None


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_openai_agents_speak_every_spelling(small_catalog_dir, problems_path, tmp_path, spelling):
    expected = canonical_protocol(spelling) if spelling else "openai"
    with ScriptedChatServer([Reply(GIVE_UP[expected])]) as server:
        result = run(
            small_catalog_dir, problems_path, tmp_path / "r", "openai:scripted", spelling,
            "--base-url", server.base_url, "--api-key", "sk-test",
        )  # fmt: skip
        sent = server.requests[0].body
    assert result.exit_code == 0, result.output
    _, records = recorded(tmp_path / "r")
    assert records[0]["harness"]["protocol"] == expected
    # the model's answer was read in the protocol asked for: its terminate call went through
    assert [c["name"] for c in records[0]["calls"]] == ["terminate"] and not records[0]["outcome"]["error"]
    assert ("tools" in sent) == (expected == "openai")  # text protocols carry the tools in the prompt


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_hf_agents_speak_every_text_spelling(
    small_catalog_dir, problems_path, tmp_path, tiny_qwen3, spelling
):
    extra = ("--max-tokens", "4", "--option", "max_turns=1", "--option", "device=cpu")
    result = run(small_catalog_dir, problems_path, tmp_path / "r", f"hf:{tiny_qwen3}", spelling, *extra)
    if spelling is not None and canonical_protocol(spelling) == "openai":
        assert result.exit_code == 2 and "not a text protocol" in result.output
        assert "Traceback" not in result.output
        return
    assert result.exit_code == 0, result.output
    _, records = recorded(tmp_path / "r")
    assert records[0]["harness"]["protocol"] == (canonical_protocol(spelling) if spelling else "qwen3")


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_file_agents_refuse_a_protocol_clearly(small_catalog_dir, problems_path, tmp_path, spelling):
    result = run(small_catalog_dir, problems_path, tmp_path / "r", f"file:{MINER}", spelling)
    if spelling is None:
        assert result.exit_code == 0, result.output
        assert recorded(tmp_path / "r")[1][0]["harness"]["protocol"] == "direct"
        return
    assert result.exit_code == 2
    assert "--protocol does not apply to file: agents" in result.output and "Traceback" not in result.output


def test_an_unknown_protocol_names_every_spelling(small_catalog_dir, problems_path, tmp_path):
    result = run(small_catalog_dir, problems_path, tmp_path / "r", "reference:agentic", "xml")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "unknown protocol 'xml'; use one of openai, upstream (or tags), qwen3 (or qwen)" in result.output
