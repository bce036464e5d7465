"""The process-reward head (`train.prm`, `train.prm_labels`): step labels from real reference-agent runs
scored by the rule scorer, a head trained on the tiny Qwen3's frozen features that beats the train-mean
baseline on held-out problems, and a saved head that predicts the same from its directory."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.eval.config import EvalConfig
from shoparena.eval.runner import run_eval
from shoparena.judge.offline import OfflineJudge
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import read_problems, write_problems
from shoparena.records.trajectory import TrajectoryRecord
from shoparena.scoring.rules import parse_product_ids
from shoparena.scoring.similarity import make_similarity
from shoparena.train.prm import PRMStageConfig, ProcessRewardModel, auc, run_prm
from shoparena.train.prm_labels import OUTPUTS, step_labels
from tests.train.events import scalars


@pytest.fixture(scope="module")
def prm_world(tmp_path_factory, small_catalog_dir, small_catalog):
    """Reference agentic and pipeline runs on generated product, shop and voucher problems."""
    root = tmp_path_factory.mktemp("prm")
    problems = root / "problems.jsonl"
    write_problems(
        problems, ProblemGenerator(small_catalog, seed=21).generate(15, ["product", "shop", "voucher"])
    )
    judge = OfflineJudge()
    runs = []
    for kind in ("agentic", "pipeline"):
        run = root / kind
        run_eval(
            EvalConfig(
                catalog=small_catalog_dir,
                problems=problems,
                agent=f"reference:{kind}",
                out=run,
                executor="inline",
                similarity="lexical",
                mode="strict",
                bootstrap=0,
            ),
            judge=lambda record, problem: judge(record, problem),
        )
        runs.append(run)
    return root, problems, runs


def records_of(run: Path) -> list[TrajectoryRecord]:
    return [TrajectoryRecord.model_validate_json(line) for line in (run / "trajectories.jsonl").open("rb")]


def test_labels_start_at_nothing_and_bound_what_the_agent_recommended(prm_world, small_catalog):
    _, problems_path, runs = prm_world
    problems = {p.problem_id: p for p in read_problems(problems_path).problems}
    similarity = make_similarity("lexical")
    checked = 0
    for run in runs:
        for record in records_of(run):
            problem = problems[record.problem.problem_id]
            labels = step_labels(record, problem, small_catalog, similarity, 0.7)
            assert labels and labels[0].seen_products == 0 and labels[0].values[0] == 0.0
            assert [label.seen_products for label in labels] == sorted(
                label.seen_products for label in labels
            )
            recommend = next(
                (c for c in record.calls if c.name == "recommend_product" and c.error is None), None
            )
            if recommend is None:
                continue
            at = next(label for label in labels if label.message_index >= _turn_of(record, recommend.call_id))
            ids = parse_product_ids(recommend.arguments.get("product_ids"))
            if len(problem.rewards) == 1 and ids:
                # best-so-far can only be at least what the agent then picked, when it had seen it
                assert at.values[0] >= record.score.rule - 1e-9 or at.seen_products == 0
                checked += 1
    assert checked >= 5


def _turn_of(record: TrajectoryRecord, call_id: str) -> int:
    return next(
        i
        for i, m in enumerate(record.messages)
        if m.get("role") == "assistant" and any(c.get("id") == call_id for c in m.get("tool_calls") or [])
    )


def test_the_head_learns_more_than_the_mean_and_reloads(
    prm_world,
    small_catalog_dir,
    tiny_model_dir,
    tmp_path,
):
    pytest.importorskip("tensorboard")
    _, problems, runs = prm_world
    config = PRMStageConfig(
        model=tiny_model_dir,
        trajectories=runs,
        problems=[problems],
        catalog=small_catalog_dir,
        out=tmp_path / "prm",
        eval_fraction=0.3,
        epochs=200,
        progress=False,
        report_to="tensorboard",
    )
    result = run_prm(config)
    details = result.details
    assert details["train_steps"] > 0 and details["eval_steps"] > 0
    assert details["eval_mae"]["rule"] < details["baseline_mae"]["rule"]
    lines = [orjson.loads(line) for line in result.metrics.read_bytes().splitlines()]
    assert lines[-1]["loss"] < lines[0]["loss"]
    assert "eval MAE" in result.report.read_text()
    # --report-to: the head's own loop writes the metrics.jsonl lines as TensorBoard scalars
    logged = scalars(tmp_path / "prm" / "tensorboard")
    assert [v for _, v in logged["train/loss"]] == pytest.approx([line["loss"] for line in lines])

    loaded = ProcessRewardModel(result.checkpoint)
    record = records_of(runs[0])[0]
    predictions = loaded.predict(record.messages, record.tools)
    decisions = [
        i for i, m in enumerate(record.messages) if m.get("role") == "assistant" and m.get("tool_calls")
    ]
    assert [p.message_index for p in predictions] == decisions
    assert all(
        set(p.values) == set(OUTPUTS) and all(0 <= v <= 1 for v in p.values.values()) for p in predictions
    )
    again = ProcessRewardModel(result.checkpoint).predict(record.messages, record.tools)
    assert again == predictions

    out = tmp_path / "steps.jsonl"
    scored = CliRunner().invoke(
        app, ["train", "prm-score", "--head", str(result.checkpoint), "-i", str(runs[0]), "-o", str(out)]
    )
    assert scored.exit_code == 0, scored.output
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert [line["record_id"] for line in lines] == [r.record_id for r in records_of(runs[0])]
    first = next(line for line in lines if line["record_id"] == record.record_id)
    assert [step["values"] for step in first["steps"]] == [p.values for p in predictions]


def test_bad_inputs_are_refused_by_name(
    prm_world,
    small_catalog,
    small_catalog_dir,
    tiny_model_dir,
    tmp_path,
):
    _, _, runs = prm_world
    other = tmp_path / "other.jsonl"  # problems none of the runs played
    write_problems(other, ProblemGenerator(small_catalog, seed=99).generate(2, ["product"]))
    config = PRMStageConfig(
        model=tiny_model_dir,
        trajectories=runs,
        problems=[other],
        catalog=small_catalog_dir,
        out=tmp_path / "p",
    )
    with pytest.raises(ValueError, match="no decision point"):
        run_prm(config)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"record_id": 1}\n')
    config = config.model_copy(update={"trajectories": [broken]})
    with pytest.raises(ValueError, match=r"broken\.jsonl:1"):
        run_prm(config)
    result = CliRunner().invoke(app, ["train", "prm", "--out", str(tmp_path / "q"), "--eval-fraction", "2"])
    assert result.exit_code == 2 and "eval" in result.output


def test_auc_counts_ties_half_and_needs_both_classes():
    assert auc([0.9, 0.1], [True, False]) == 1.0
    assert auc([0.5, 0.5], [True, False]) == 0.5
    assert auc([0.2, 0.8], [True, True]) is None
