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


def test_the_learn_recipe_trains_a_scratch_model_on_teacher_rows_and_races_it_on_its_training_rendering(
    looped, tmp_path, monkeypatch
):
    """`train.recipe: proof` (configs/loop/learn.yaml at toy size), on the season above: the model is
    made from scratch with a tokenizer trained on the concise teacher's rows (played with the arena's
    tools), trained on them and evaluated held-out; in the final race every prompt the distilled miner
    has the served model answer is the training rendering of its episode so far: system prompt and
    tool schemas as in the teacher's rows, and each turn the previous prompt, the model's own output
    and the real tool results (verified by the proxy), byte for byte."""
    import shutil

    from transformers import AutoTokenizer

    from shoparena.agents.hf_agent import Generation
    from shoparena.inference.model_server import ChatModel
    from shoparena.loop.config import ProofRecipe
    from shoparena.loop.report_data import read_training
    from shoparena.train.chat_render import ASSISTANT_HEADER, IM_END, render_row

    layout, _result, _lines = looped
    out = tmp_path / "learn"
    for stage in (layout.season_dir, layout.firehose_dir, layout.corpus_dir):
        shutil.copytree(stage, out / stage.name)
    recipe = ProofRecipe(
        preset="tiny", minutes=0.05, train_problems=30, heldout_product=2, heldout_other=0, base_problems=1
    )
    config = small_config().model_copy(
        update={
            "train": TrainPart(recipe="proof", proof=recipe),
            "season_agents": False,
            "race_untrained": True,
        }
    )
    learn = LoopLayout(out=out)
    rows_file = learn.train_dir / "work" / "corpus" / "train.jsonl"
    seen: list[tuple[str, str]] = []

    def scripted(self, prompt, request):
        """The teacher's own turns, in order, as the served model's output (the tiny model's are noise)."""
        tokenizer = self.agent.tokenizer
        row = json.loads(rows_file.read_text().splitlines()[0])
        spans = render_row(tokenizer, row).spans
        turn = prompt.count(ASSISTANT_HEADER) - 1
        text = spans[min(turn, len(spans) - 1)].text.removesuffix(IM_END)
        seen.append((prompt, text))
        return Generation(text=text, prompt_tokens=len(prompt) // 4, completion_tokens=len(text) // 4,
                          finish_reason="stop")  # fmt: skip

    monkeypatch.setattr(ChatModel, "_generate", scripted)
    lines: list[str] = []
    result = run_loop(config, out, lines.append)
    ran = [s.stage for s in result.stages if not s.resumed]
    assert ran == ["train", "season agents", "final race"], ran

    # trained from scratch on the teacher's rows, with the arena's tools
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert rows and all(r["system_prompt"] and r["tools"] for r in rows)
    assert {t["function"]["name"] for t in rows[0]["tools"]} >= {"check_product_match", "calculate_voucher"}
    tokenizer = AutoTokenizer.from_pretrained(learn.train_dir / "00-base")
    assert len(tokenizer) <= recipe.sizes().vocab_size + 16  # its own vocabulary, trained on the rows
    checkpoint = learn.train_dir / "01-full-sft" / "model"
    assert (checkpoint / "config.json").is_file()
    assert result.stages[[s.stage for s in result.stages].index("train")].summary["checkpoint"] == str(
        checkpoint
    )
    training = read_training(learn)
    assert training.learn["teacher"]["rows"] == len(rows) and training.learn["profile"] == "oro7"
    assert training.learn["training"]["steps"] >= 1
    assert {"base", "full-sft"} <= {p.name for p in (learn.train_dir / "eval").iterdir()}
    card = (checkpoint / "README.md").read_text()  # a model card: its stage, data and held-out row
    assert "| full-sft |" in card and "| base |" in card and str(rows_file) in card, card

    # the final race: each prompt is the training rendering of the episode so far
    assert seen, "the distilled model was never asked"
    teacher_head = render_row(tokenizer, rows[0]).text.split("<|im_start|>user\n")[0]
    firsts = [p for p, _ in seen if p.count(ASSISTANT_HEADER) == 1]
    assert firsts and all(p.startswith(teacher_head + "<|im_start|>user\n") for p in firsts)
    later = [(p, o) for p, o in seen if p.count(ASSISTANT_HEADER) > 1]
    assert later, "no episode went past its first turn"
    for prompt, _ in later:
        assert any(
            prompt.startswith(p + o + IM_END + "\n<|im_start|>user\n<tool_response>\n") for p, o in seen
        ), prompt[-400:]
    store = open_store(learn.final_dir / "arena" / "arena.db")
    try:
        final = read_season(learn.final_season_file)
        distilled = next(p for p in final.participants if p.get("miner") == DISTILLED_MINER)
        records = [r for r in store.records() if r.agent.miner_hotkey == distilled["hotkey"]]
    finally:
        store.close()
    entries = [e for r in records for e in (r.inference.entries if r.inference else []) if e.status == 200]
    assert entries and sum(e.tool_messages for e in entries) > 0
    assert all(e.unverified_tool_messages == 0 for e in entries)
    placed = result.stages[-1].summary
    assert (
        placed["status"] == "raced" and placed["untrained"]["status"] == "raced"
    )  # beside its random baseline
    assert {DISTILLED_MINER, "untrained"} <= {p.get("miner") for p in final.participants}
    md = learn.report_md.read_text()
    assert "the random baseline" in md
    assert "made from scratch here" in md and "What it cannot do: shop and voucher tasks" in md
    assert "made from scratch here" in learn.report_html.read_text()
