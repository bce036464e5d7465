"""`shoparena train proof` end to end on the tiny preset (the plumbing: data, concise teacher, corpus,
model from scratch, full fine-tuning, held-out `hf:` evaluation, proof.json), and the concise teacher."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

pytest.importorskip("transformers")

from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.train.model_card import LINEAGE_FILE, Lineage, StageEntry, read_lineage, write_card
from shoparena.train.proof import leak_guard, wilson
from shoparena.train.proof_card import write_cards


def card(directory: Path) -> tuple[dict, str, str]:
    """A checkpoint's model card: its YAML header, its stages table and its held-out section."""
    _, header, body = (directory / "README.md").read_text(encoding="utf-8").split("---\n", 2)
    stages, heldout = body.split("## Stages")[1].split("## Held-out")
    return yaml.safe_load(header), stages, heldout


def test_wilson_interval_is_above_zero_only_with_successes():
    assert wilson(0, 60)[0] == 0.0 and wilson(0, 60)[1] > 0.0
    low, high = wilson(12, 60)
    assert 0.1 < low < 0.2 < high < 0.33


def test_leak_guard_drops_training_problems_sharing_gold_cluster_or_query():
    held = [{"query": "q1", "leak_cluster_id": "c1", "reward": {"product_id": "7"}}]
    train = [
        {"query": "q2", "leak_cluster_id": "c1", "reward": {"product_id": "1"}},
        {"query": "q3", "leak_cluster_id": "c3", "reward": {"product_id": "7"}},
        {"query": "q1", "leak_cluster_id": "c4", "reward": {"product_id": "2"}},
        {"query": "q5", "leak_cluster_id": "c5", "reward": {"product_id": "3"}},
    ]
    kept, dropped = leak_guard(train, held)
    assert [p["query"] for p in kept] == ["q5"] and dropped == 3


def test_concise_teacher_plays_search_recommend_terminate(agent_catalog_dir, agent_problems, tmp_path):
    from shoparena.agents.reference.agent import CONCISE_PICK, CONCISE_SEARCH
    from shoparena.problems.io import write_problems

    problems = tmp_path / "p.jsonl"
    write_problems(problems, agent_problems)
    run = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["eval", "--catalog", str(agent_catalog_dir), "--problems", str(problems), "--agent",
         "reference:agentic", "--option", "style=concise", "--option", "protocol=qwen3", "--profile",
         "upstream4", "--executor", "inline", "--similarity", "lexical", "--out", str(run), "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]
    product = [r for r in records if r["problem"]["bucket"] == "product"]
    assert product
    for record in product:
        turns = [m for m in record["messages"] if m["role"] == "assistant"]
        names = [c["function"]["name"] for m in turns for c in m.get("tool_calls") or []]
        assert names[:2] == ["find_product", "recommend_product"] and len(turns) <= 3
        assert turns[0]["reasoning_content"] == CONCISE_SEARCH
        assert turns[1]["reasoning_content"] == CONCISE_PICK
        query = json.loads(turns[0]["tool_calls"][0]["function"]["arguments"])["q"]
        assert query == record["problem"]["query"]
    others = [r for r in records if r["problem"]["bucket"] != "product"]
    assert all(len([m for m in r["messages"] if m["role"] == "assistant"]) > 1 for r in others)


def test_concise_is_refused_with_an_unknown_style(agent_catalog_dir, agent_problems, tmp_path):
    from shoparena.problems.io import write_problems

    problems = tmp_path / "p.jsonl"
    write_problems(problems, agent_problems[:1])
    result = CliRunner().invoke(
        app,
        ["eval", "--catalog", str(agent_catalog_dir), "--problems", str(problems), "--agent",
         "reference:agentic", "--option", "style=chatty", "--out", str(tmp_path / "r"), "--quiet"],
    )  # fmt: skip
    assert result.exit_code != 0 and "style 'chatty'" in result.output


def test_train_proof_tiny_preset_writes_proof_and_checkpoint(tmp_path):
    out = tmp_path / "proof"
    result = CliRunner().invoke(app, ["train", "proof", "--out", str(out), "--preset", "tiny"])
    assert result.exit_code == 0, result.output
    proof = json.loads((out / "proof.json").read_text())
    assert proof["schema_version"] == "shoparena.train-proof/1"
    assert set(proof["heldout"]) == {"base", "sft"}
    product = proof["heldout"]["sft"]["product"]
    assert product["n"] == 4 and len(product["ci95"]) == 2
    assert proof["teacher"]["rows"] >= 1 and proof["model"]["parameters"] > 0
    assert proof["loss_curve"] and proof["training"]["tokens_per_s"] > 0
    assert (out / "checkpoint" / "config.json").is_file()
    # the checkpoint is a Hub-shaped model: its card has the stage, its data and its held-out rows
    header, stages, heldout = card(out / "checkpoint")
    assert header["library_name"] == "transformers" and header["base_model"] == str(out / "base")
    assert f"| 1 | sft | `{out / 'base'}` |" in stages and "train.jsonl" in stages
    assert f"| {proof['training']['steps']} |" in stages
    sft, base = proof["heldout"]["sft"]["product"], proof["heldout"]["base"]["product"]
    assert f"| base | {base['success']}/{base['n']} " in heldout
    assert f"| sft | {sft['success']}/{sft['n']} " in heldout
    assert read_lineage(out / "checkpoint").heldout is not None
    again = CliRunner().invoke(app, ["train", "proof", "--out", str(out), "--preset", "tiny"])
    assert again.exit_code != 0 and "not empty" in again.output


def _bucket(success: int, n: int) -> dict:
    return {"success": success, "n": n, "rate": round(success / n, 4), "ci95": list(wilson(success, n))}


def test_rs_and_grpo_checkpoints_on_top_carry_the_whole_history(tmp_path):
    """`--on-top`: RS's card lists SFT then RS; GRPO's (first written by `train grpo`, which chained the
    RS card it found) gets its Table 1 row; each card's row is its own checkpoint's beside the base's."""
    out = tmp_path / "proof"
    for directory in ("checkpoint", "rs/checkpoint", "grpo/merged"):
        (out / directory).mkdir(parents=True)
        (out / directory / "config.json").write_text("{}")
    proof = {
        "settings": {"learning_rate": 0.002},
        "teacher": {"rows": 7},
        "training": {"steps": 5, "final_loss": 0.5, "eval_loss": None, "tokens": 100, "epochs": 2.0},
        "heldout": {"base": {"product": _bucket(0, 2)}, "sft": {"product": _bucket(1, 4)},
                    "rs": {"product": _bucket(2, 4), "shop": _bucket(0, 1)}},
        "on_top": {"rs": {"kept": 3, "rows": 6, "steps": 4, "final_loss": 0.25}},
    }  # fmt: skip
    write_cards(out, proof)
    rs = read_lineage(out / "rs" / "checkpoint")
    assert [s.stage for s in rs.stages] == ["sft", "rs"] and rs.stages[1].model == str(out / "checkpoint")
    assert rs.stages[1].steps == 4 and rs.stages[1].train_loss == 0.25
    _, _, heldout = card(out / "rs" / "checkpoint")
    assert "| rs | 2/4 " in heldout and "| base | 0/2 " in heldout and "| sft |" not in heldout

    # `train grpo` wrote its own card from the RS card, then the proof evaluates it
    grpo = StageEntry(stage="grpo", model=str(out / "rs" / "checkpoint"), out=str(out / "grpo"), steps=2)
    write_card(Lineage(base_model=rs.base_model, stages=[*rs.stages, grpo]), out / "grpo" / "merged")
    proof["heldout"]["grpo"] = {"product": _bucket(3, 4)}
    proof["on_top"]["grpo"] = {"steps": 2, "reward_per_step": [0.1, 0.2]}
    write_cards(out, proof)
    lineage = json.loads((out / "grpo" / "merged" / LINEAGE_FILE).read_text())
    assert [s["stage"] for s in lineage["stages"]] == ["sft", "rs", "grpo"]
    _, stages, heldout = card(out / "grpo" / "merged")
    assert "| 3 | grpo |" in stages and "| grpo | 3/4 " in heldout
