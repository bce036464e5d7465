"""`train pipeline` end to end on the tiny Qwen3 (CPU): the five stages in order on a corpus built by
`corpus build` from a real eval run, each checkpoint the next stage's model, resumed at stage
granularity, then every checkpoint evaluated on the corpus' held-out problems into Table 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.train.config import ConfigError
from shoparena.train.pipeline import STAGE_RESULT, PipelineConfig, run_pipeline
from tests.train.sampling_world import world

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "configs" / "tiny" / "pipeline.yaml"
STAGES = ["sft", "rs", "teacher", "kto", "grpo"]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def sampling(tmp_path_factory, small_catalog_dir):
    return world(tmp_path_factory, small_catalog_dir)


def tiny_config(sampling, model: Path, **changes) -> PipelineConfig:
    return PipelineConfig.from_file(
        TINY,
        corpus=str(sampling.corpus),
        catalog=str(sampling.catalog),
        problems=str(sampling.corpus_problems),
        model=str(model),
        **changes,
    )


def test_the_five_stages_chain_resume_and_report(sampling, tiny_model_dir, tmp_path):
    out = tmp_path / "pipeline"
    said: list[str] = []
    result = run_pipeline(tiny_config(sampling, tiny_model_dir), out, said.append)

    assert [run.stage for run in result.stages] == STAGES
    assert not any(run.resumed for run in result.stages)
    previous = Path(tiny_model_dir)
    for index, run in enumerate(result.stages, start=1):
        stage_dir = out / f"{index:02d}-{run.stage}"
        assert (stage_dir / STAGE_RESULT).exists()
        resolved = json.loads((stage_dir / "config.resolved.json").read_text())
        # each stage trained the previous stage's checkpoint
        assert Path(resolved["model"]) == previous, run.stage
        assert (stage_dir / "metrics.jsonl").read_text().strip(), run.stage
        assert (stage_dir / "report.md").exists()
        previous = run.result.model_path
    # KTO and GRPO got the teacher stage's trajectories
    kto = json.loads((out / "04-kto" / "config.resolved.json").read_text())
    grpo = json.loads((out / "05-grpo" / "config.resolved.json").read_text())
    teacher_file = str(out / "03-teacher" / "rollouts" / "trajectories.jsonl")
    assert teacher_file in json.dumps(kto["trajectories"])
    assert grpo["teacher_trajectories"] == teacher_file
    # KTO's early-stop probe sampled the held-out problems, and logged the recommend rate
    assert kto["probe_problems"] == str(out / "probe_problems.jsonl")
    assert "probe/recommend_rate" in (out / "04-kto" / "metrics.jsonl").read_text()

    # Table 1: the base and every stage, evaluated on the held-out problems with pass@k
    table = result.report_md.read_text()
    for name in ["base", *STAGES]:
        assert f"| {name} |" in table, name
    assert "pass@k" in table
    assert result.report_html.read_text().lower().startswith("<!doctype html>")
    assert len(result.eval_runs) == 6
    # every checkpoint's model card has its stages and its Table 1 row next to the base's
    card = (result.stages[-1].result.model_path / "README.md").read_text()
    stages, heldout = card.split("## Stages")[1].split("## Held-out")
    assert "| base |" in heldout and "| grpo |" in heldout
    assert "| 1 | sft |" in stages and "| grpo |" in stages
    # the tiny rs stage trains nothing (on_empty: skip) and hands sft's checkpoint on: its row stays out
    sft_heldout = (result.stages[0].result.model_path / "README.md").read_text().split("## Held-out")[1]
    assert "| sft |" in sft_heldout and "| rs |" not in sft_heldout

    # a re-run resumes every stage; losing one stage's result re-runs that stage only
    (out / "05-grpo" / STAGE_RESULT).unlink()
    again = run_pipeline(tiny_config(sampling, tiny_model_dir, evaluate=None), out, said.append)
    assert [run.resumed for run in again.stages] == [True, True, True, True, False]
    assert any(p.name.startswith("05-grpo.interrupted-") for p in out.iterdir())


def test_changed_stage_config_is_run_again(sampling, tiny_model_dir, tmp_path):
    out = tmp_path / "pipeline"
    one = tiny_config(
        sampling, tiny_model_dir, evaluate=None, stages=[{"stage": "sft", "values": {"max_steps": 1}}]
    )
    first = run_pipeline(one, out, lambda _: None)
    assert first.stages[0].result.steps == 1
    two = one.model_copy(update={"stages": [one.stages[0].model_copy(update={"values": {"max_steps": 2}})]})
    second = run_pipeline(two, out, lambda _: None)
    assert not second.stages[0].resumed
    assert second.stages[0].result.steps == 2


def test_bad_pipeline_config_is_named(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("stages:\n  - stage: dpo\ncorpus: c\ncatalog: k\nproblems: p\nlearning_rate: 1\n")
    with pytest.raises(ConfigError) as caught:
        PipelineConfig.from_file(bad)
    message = str(caught.value)
    assert "stages.0.stage" in message and "learning_rate" in message


def test_cli_refuses_missing_inputs_clearly(tmp_path):
    result = CliRunner().invoke(
        app, ["train", "pipeline", "--config", str(TINY), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code != 0
    assert "corpus" in result.output
