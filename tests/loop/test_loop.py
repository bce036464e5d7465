"""The closed loop end to end, small: a one-day season (2 miners, 1 validator, bubblewrap, the real
signed API, admission, the offline judge, the store) → the firehose → `corpus build` → SFT on the tiny
model and its held-out evaluation → the season's racers on the same problems → the checkpoint served
over loopback, entered as a miner that reaches it through the validator's inference proxy, raced →
the report. Then resumption: an unchanged re-run redoes nothing, and a stage that did not finish is set
aside and run again, with the stages before it kept."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.loop.config import TINY_PIPELINE, CorpusPart, LoopConfig, ServePart, TrainPart
from shoparena.loop.layout import DISTILLED_MINER, DISTILLED_MODEL, STAGE_DONE, LoopLayout
from shoparena.loop.runner import STAGE_NAMES, run_loop
from shoparena.report import load_run
from shoparena.season.seasonfile import read_season
from shoparena.season.setup import SeasonSettings
from shoparena.store import open_store

SFT = TINY_PIPELINE.parent / "sft.yaml"


def small_config() -> LoopConfig:
    return LoopConfig(
        season=SeasonSettings(
            miners=2,
            validators=1,
            days=1,
            seed=3,
            race_problems=1,
            qualifying_problems=2,
            qualify_threshold=0.0,
            sandbox="bwrap",
        ),
        corpus=CorpusPart(eval_size=1),
        train=TrainPart(
            values={
                "max_steps": 1,
                "stages": [{"stage": "sft", "config": str(SFT), "values": {"max_length": 16000}}],
                "evaluate": {"samples": 1, "limit": 1, "step_cap": 3, "max_tokens": 16},
            }
        ),
        serve=ServePart(max_new_tokens=16),
    )


@pytest.fixture(scope="module")
def looped(tmp_path_factory, sandbox_ready):
    out = tmp_path_factory.mktemp("loop") / "out"
    lines: list[str] = []
    with contextlib.redirect_stdout(io.StringIO()) as console:
        result = run_loop(small_config(), out, lines.append)
    assert console.getvalue() == "", "something printed past the loop's log"  # issue 25: stage lines only
    return LoopLayout(out=out), result, lines


def test_every_stage_runs_in_order_and_says_so(looped):
    layout, result, lines = looped
    assert [s.stage for s in result.stages] == list(STAGE_NAMES[:-1])
    assert not any(s.resumed for s in result.stages)
    headers = [line for line in lines if line.startswith("[")]
    assert [h.split("]")[0] for h in headers] == [f"[{i}/{len(STAGE_NAMES)}" for i in range(1, 8)]
    for stage in result.stages:
        assert (stage.directory / STAGE_DONE).exists()
    assert result.report_html == layout.report_html and layout.report_html.stat().st_size > 0
    assert layout.report_md.exists()
    assert (
        lines[0]
        == f"libraries' own output (warnings, progress bars, server logs) → {layout.out / 'loop.log'}"
    )
    assert (layout.out / "loop.log").is_file()


def test_the_corpus_comes_from_the_seasons_firehose_and_never_holds_a_final_race_problem(looped):
    layout, _result, _lines = looped
    season = read_season(layout.season_file)
    exported = layout.firehose.read_text().splitlines()
    assert len(exported) == season.timing.episodes > 0
    manifest = json.loads((layout.corpus_dir / "manifest.json").read_text())
    counts = manifest["counts"]
    assert counts["train"] > 0 and counts["eval"] > 0
    rewritten = layout.rewritten.read_text().splitlines()
    assert rewritten, "the demo's pipeline miners leave axis-B traces for the rewrite"
    assert counts["inputs"] == len(exported) + len(rewritten)
    assert all(json.loads(line)["metadata"]["rewrite"]["rewriter"] == "reference" for line in rewritten)
    final = read_season(layout.final_season_file)
    raced = {pid for race in final.races for pid in race.problem_ids}
    pool = {json.loads(line)["problem_id"] for line in
            (layout.firehose_dir / "final_race_pool.jsonl").read_text().splitlines()}  # fmt: skip
    rows = [json.loads(line) for name in ("train.jsonl", "eval.jsonl")
            for line in (layout.corpus_dir / name).read_text().splitlines()]  # fmt: skip
    trained_on = {row["metadata"]["problem_id"] for row in rows}
    assert raced and not trained_on & raced, "the distilled model trained on a problem it raced"
    assert pool and not trained_on & pool


def test_the_distilled_model_raced_through_the_inference_proxy(looped):
    layout, result, _lines = looped
    final = read_season(layout.final_season_file)
    distilled = next(p for p in final.participants if p.get("miner") == DISTILLED_MINER)
    submission = next(s for s in final.submissions if s.hotkey == distilled["hotkey"])
    assert submission.status != "rejected", submission.violations
    assert DISTILLED_MODEL in layout.distilled_miner.read_text()
    race = final.races[-1]
    racers = {r.hotkey for r in race.results}
    assert distilled["hotkey"] in racers, "the distilled agent did not race"
    season = read_season(layout.season_file)
    assert racers - {distilled["hotkey"]} <= {p["hotkey"] for p in season.participants}
    # the validator's proxy served the distilled model's requests from the loop's model server
    store = open_store(layout.final_dir / "arena" / "arena.db")
    try:
        records = [r for r in store.records() if r.agent.miner_hotkey == distilled["hotkey"]]
    finally:
        store.close()
    assert records
    served = [e for r in records for e in (r.inference.entries if r.inference else []) if e.status == 200]
    assert served and all(e.model == DISTILLED_MODEL for e in served)
    assert all(e.upstream and e.upstream.startswith("http://127.0.0.1:") for e in served)
    assert sum(e.completion_tokens for e in served) > 0
    placed = result.stages[-1].summary
    assert placed["status"] == "raced" and 1 <= placed["rank"] <= placed["of"] == len(racers)


def test_the_report_shows_each_part_of_the_loop(looped):
    layout, _result, _lines = looped
    md = layout.report_md.read_text()
    html = layout.report_html.read_text()
    for needle in ("pass@1", DISTILLED_MINER, "sft"):
        assert needle in md
    assert "<svg" in html and "<script" not in html.lower()
    assert (layout.train_dir / "eval" / "sft").is_dir()
    assert any((layout.season_agents_dir).iterdir())
    # the held-out evaluations draw the 95% intervals Table 1 shows (the training rollouts need none)
    held_out = [layout.train_dir / "eval" / "sft"]
    held_out += [p for p in layout.season_agents_dir.iterdir() if (p / "metrics.json").is_file()]
    for run in map(load_run, held_out):
        assert run.overall("asr").low is not None and run.overall("asr").high is not None, run.path
    assert re.search(r"\| sft \| \d+ \| \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\] \|", md)


def test_an_unchanged_rerun_redoes_nothing_and_an_unfinished_stage_runs_again(looped):
    layout, _first, _lines = looped
    lines: list[str] = []
    again = run_loop(small_config(), layout.out, lines.append)
    assert all(s.resumed for s in again.stages), [(s.stage, s.resumed) for s in again.stages]
    before = read_season(layout.final_season_file).comparable()
    # the final race was interrupted: no finished marker
    (layout.final_dir / STAGE_DONE).unlink()
    lines.clear()
    third = run_loop(small_config(), layout.out, lines.append)
    assert [s.stage for s in third.stages if not s.resumed] == ["final race"]
    assert list(layout.out.glob("06-final-race.interrupted-*")), "the unfinished stage was not set aside"
    assert any("kept the earlier 06-final-race (unfinished) as 06-final-race.interrupted-" in line
               for line in lines), lines  # fmt: skip
    assert read_season(layout.final_season_file).comparable() == before  # same arena state, same race


def test_the_command_line_refuses_an_unknown_config_key_by_name(tmp_path):
    bad = tmp_path / "loop.yaml"
    bad.write_text("season: {miners: 2}\nserve: {backend: hf, port: 9}\n")
    result = CliRunner().invoke(app, ["loop", "--config", str(bad), "--out", str(tmp_path / "out")])
    assert result.exit_code != 0
    assert "serve.port" in result.output and "unknown key" in result.output


def test_the_demo_config_file_is_the_embedded_default():
    assert (
        LoopConfig.from_file(Path(__file__).resolve().parents[2] / "configs" / "loop" / "demo.yaml")
        == LoopConfig()
    )


def test_the_gpu_config_file_resolves_to_the_papers_pipeline_scored_like_a_real_arena(tmp_path):
    from shoparena.loop.runner import pipeline_config

    config = LoopConfig.from_file(Path(__file__).resolve().parents[2] / "configs" / "loop" / "gpu.yaml")
    pipeline = pipeline_config(config, LoopLayout(out=tmp_path))
    assert [stage.stage for stage in pipeline.stages] == ["sft", "rs", "teacher", "kto", "grpo"]
    assert config.serve.backend == "vllm" and str(pipeline.model) == "/models/Qwen3-4B"
    # the season's races and the held-out Table 1 score titles the same way: the sentence embedder
    assert config.season.similarity == pipeline.evaluate.similarity == "minilm"


def test_a_loop_interrupted_inside_a_stage_resumes_at_that_stage(looped, monkeypatch):
    import shoparena.loop.runner as runner

    layout, _result, _lines = looped
    (layout.season_agents_dir / STAGE_DONE).unlink()  # as if the stage had never finished

    def interrupted(config, layout_, say):
        (layout_.season_agents_dir / "half-written").write_text("partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "evaluate_season_agents", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_loop(small_config(), layout.out, lambda _line: None)
    assert not (layout.season_agents_dir / STAGE_DONE).exists()
    monkeypatch.undo()
    said: list[str] = []
    resumed = run_loop(small_config(), layout.out, said.append)
    assert any("kept the earlier 05-season-agents (unfinished)" in line for line in said), said
    ran = [s.stage for s in resumed.stages if not s.resumed]
    assert ran == ["season agents"], ran  # the stages before it and the one after (same inputs) resumed
    assert not (layout.season_agents_dir / "half-written").exists()
    assert any(p.joinpath("half-written").exists() for p in layout.out.glob("05-season-agents.interrupted-*"))


def test_the_loops_serve_part_is_model_serves_settings_with_the_loops_cap():
    from shoparena.inference.serve_settings import ServeSettings

    assert list(ServePart.model_fields) == list(ServeSettings.model_fields)
    for name, field in ServePart.model_fields.items():
        assert field.annotation == ServeSettings.model_fields[name].annotation
    assert ServePart().max_new_tokens == 64 and ServeSettings().max_new_tokens == 2048
    with pytest.raises(ValueError, match="max_new_tokens"):
        ServePart(max_new_tokens=0)


def test_the_report_says_plainly_that_its_random_base_cannot_shop(looped):
    """The demo's model is made on the spot; the report names its exact size and what it cannot do."""
    from transformers import AutoModelForCausalLM

    layout, _result, _lines = looped
    model = AutoModelForCausalLM.from_pretrained(layout.train_dir / "00-base")
    parameters = sum(p.numel() for p in model.parameters())
    md = layout.report_md.read_text()
    assert f"random-weight Qwen3 of {parameters:,} parameters" in md
    assert "shoparena train proof" in md
    assert "random-weight Qwen3" in layout.report_html.read_text()


def test_view_shows_every_eval_run_the_loop_wrote(looped):
    """`shoparena view` on the demo's runs: the held-out evaluations of the checkpoints and of the
    season's racers (each an eval run directory under the loop's output)."""
    layout, _, _ = looped
    runs = sorted(path.parent for path in layout.out.rglob("trajectories.jsonl"))
    assert any("05-season-agents" in str(run) for run in runs) and any("04-train" in str(run) for run in runs)
    for run in runs:
        table = CliRunner().invoke(app, ["view", str(run), "--json"])
        assert table.exit_code == 0, table.output
        rows = json.loads(table.stdout)["episodes"]
        lines = (run / "trajectories.jsonl").read_text().splitlines()
        assert rows and len(rows) <= len(lines)
        episode = CliRunner().invoke(app, ["view", str(run), rows[0]["problem_id"]])
        assert episode.exit_code == 0, episode.output
        assert f"episode {rows[0]['problem_id']}" in episode.output and "constraints" in episode.output
        assert "judge: " in episode.output
