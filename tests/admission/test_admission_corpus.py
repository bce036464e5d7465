"""Admission against its corpora: every evasion is rejected with the rule it names, every realistic agent
(the season's pipeline and reference miners included) is admitted — and really runs as a miner."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from shoparena.admission import RULES, analyse
from shoparena.agents.base import ProblemView
from shoparena.agents.miner.file_agent import make_file_agent
from shoparena.harness import Episode
from shoparena.problems.generator import ProblemGenerator
from tests.admission.corpus import ADVERSARIAL, BENIGN, MINERS, SEASON_BENIGN, evasion, expected_rules

MIN_ADVERSARIAL = 40
MIN_BENIGN = 10


def test_the_corpora_are_large_enough_and_every_evasion_is_documented():
    assert len(ADVERSARIAL) >= MIN_ADVERSARIAL
    assert len(BENIGN) >= MIN_BENIGN
    for path in ADVERSARIAL:
        rules = expected_rules(path)
        assert rules, f"{path.name}: no '# expect: RULE' header"
        assert rules <= set(RULES), f"{path.name}: unknown rule in {rules}"
        assert evasion(path), f"{path.name}: no '# evasion:' line saying what it tries"


def test_the_adversarial_corpus_covers_every_kind_and_most_rules():
    covered = set().union(*(expected_rules(p) for p in ADVERSARIAL))
    assert {RULES[rule].kind for rule in covered} == {"security", "integrity", "format"}
    untested = set(RULES) - covered - {"format.size", "format.unanalysable"}
    assert untested == set(), f"rules no corpus file exercises: {sorted(untested)}"


@pytest.mark.parametrize("path", ADVERSARIAL, ids=lambda p: p.stem)
def test_every_evasion_is_rejected_with_its_rule(path):
    violations = analyse(path.read_bytes())
    reported = {v.rule for v in violations}
    assert expected_rules(path) <= reported, (
        f"{path.name} ({evasion(path)}): expected {sorted(expected_rules(path))}, got "
        + "; ".join(f"{v.rule}@{v.line}: {v.message}" for v in violations)
    )
    for item in violations:
        assert item.kind == RULES[item.rule].kind


@pytest.mark.parametrize("name", sorted(BENIGN))
def test_every_realistic_agent_is_admitted(name):
    violations = analyse(BENIGN[name].encode())
    assert violations == [], "\n".join(f"{v.rule}@{v.line}:{v.col}: {v.message}" for v in violations)


WELL_BEHAVED_MINERS = [
    "good_miner",
    "claiming_miner",
    "contradicting_miner",
    "crashing_miner",
    "malformed_miner",
    "noisy_miner",
]
HOSTILE_MINERS = {
    "sleeping_miner": "security.banned_import",
    "snooping_miner": "security.banned_member",
    "vanishing_miner": "security.banned_member",
    "no_main_miner": "format.agent_main",
    # `while True: count += 1` is constant computation without end: nothing to follow it to
    "spinning_miner": "integrity.unanalysable",
    # 64 MiB built from constants, far past anything a file's own data needs
    "memory_hog_miner": "integrity.unanalysable",
}


@pytest.mark.parametrize("name", WELL_BEHAVED_MINERS)
def test_the_repos_ordinary_miner_files_are_admitted(name):
    # they misbehave at run time (crash, loop, hoard memory), which is the sandbox's business, not admission's
    assert analyse((MINERS / f"{name}.py").read_bytes()) == []


@pytest.mark.parametrize(("name", "rule"), sorted(HOSTILE_MINERS.items()))
def test_the_repos_hostile_miner_files_are_rejected(name, rule):
    assert rule in {v.rule for v in analyse((MINERS / f"{name}.py").read_bytes())}


OFFLINE_MODELS = {
    "Qwen/Qwen3-4B-Instruct-2507": "offline:reference-agentic",
    "reference-agentic": "offline:reference-agentic",
}
"""The model the benign LLM agents ask for, served by the proxy's offline reference model."""


@pytest.fixture(scope="module")
def one_problem_per_bucket(small_catalog):
    return ProblemGenerator(small_catalog, seed=3).generate(3, buckets=("product", "shop", "voucher"))


def benign_file(name: str, directory: Path) -> Path:
    path = directory / f"{name}.py"
    path.write_text(BENIGN[name], encoding="utf-8")
    return path


def test_every_benign_agent_runs_as_a_miner_and_ends_its_episode(
    small_catalog, one_problem_per_bucket, tmp_path
):
    """The benign corpus is real agents, not admissible-looking text: each one runs through the
    file agent against a real tool server and catalogue and ends its episode without an error."""
    problem = one_problem_per_bucket[0]
    for name in BENIGN:
        path = benign_file(name, tmp_path)
        # sandboxed, on its own Unix-socket tool server; the LLM agents' model is the offline reference one
        agent = make_file_agent(str(path), inference_models=OFFLINE_MODELS)
        try:
            episode = Episode.for_problem(problem, small_catalog, profile="oro7")
            run = agent.run(episode, ProblemView.of(problem))
        finally:
            agent.close()
        assert run.error is None, f"{path.name}: {run.error}"
        assert episode.terminated is not None, f"{path.name} did not terminate"


@pytest.mark.parametrize("name", SEASON_BENIGN)
def test_the_season_pipeline_and_reference_miners_recommend_on_every_bucket(
    name, small_catalog, one_problem_per_bucket, tmp_path
):
    agent = make_file_agent(str(benign_file(name, tmp_path)), inference_models=OFFLINE_MODELS)
    with contextlib.closing(agent):
        for problem in one_problem_per_bucket:
            episode = Episode.for_problem(problem, small_catalog, profile="oro7")
            run = agent.run(episode, ProblemView.of(problem))
            assert run.error is None, run.error
            assert episode.recommended_product_ids, f"{name} recommended nothing on a {problem.bucket} task"
