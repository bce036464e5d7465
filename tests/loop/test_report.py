"""The loop's report on a small loop directory built from the real records: a season file and a final
race constructed as `SeasonFile`s, a corpus and eval runs made the real way (reference agents on the
small catalogue, `build_corpus`), metrics.jsonl lines with each stage's real keys."""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from shoparena.arena.competition.models import Race, RaceResult
from shoparena.arena.config import CompetitionConfig
from shoparena.eval.config import EvalConfig
from shoparena.eval.runner import run_eval
from shoparena.loop.layout import DISTILLED_MINER, LoopLayout
from shoparena.loop.report import LoopReportError, write_loop_report
from shoparena.loop.report_data import distilled_placement, read_loop
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from shoparena.report import load_run
from shoparena.season.seasonfile import SeasonFile, SeasonSubmission, SeasonWeights
from shoparena.train.config import StageResult
from tests.train.reference_corpus import reference_corpus

START = datetime(2026, 3, 2, 16, tzinfo=UTC)
HOSTILE = "<script>alert(1)</script>"
COMMITMENT = "0" * 64


def _hotkey(uid: int) -> str:
    return f"5Hot{uid:02d}" + "x" * 40


def _submission(name: str, uid: int, day: int = 1, **fields) -> SeasonSubmission:
    values = dict(status="scored", intended="admitted", qualifying_score=0.5, qualified=True) | fields
    return SeasonSubmission(
        submission_id=f"sub-{name}-{day}", hotkey=_hotkey(uid), uid=uid, miner=name, file=name, day=day,
        submitted_at=START + timedelta(days=day - 1, minutes=uid), **values,
    )  # fmt: skip


def _race(number: int, scores: list[tuple[str, int, float]], promoted: bool) -> Race:
    results = [
        RaceResult(
            hotkey=_hotkey(uid),
            uid=uid,
            submission_id=f"sub-{name}-1",
            score=score,
            success_rate=score,
            submitted_at=START,
        )
        for name, uid, score in sorted(scores, key=lambda item: -item[2])
    ]
    return Race(
        race_id=f"race-{number:05d}", state="RACE_COMPLETE", opened_at=START + timedelta(days=number - 1),
        rotation_period=0, rotation_sha256=COMMITMENT, seed_commitment=COMMITMENT, open_clusters=[],
        results=results, winner=results[0].hotkey, winner_submission_id=results[0].submission_id,
        promoted=promoted,
    )  # fmt: skip


def _season(
    miners: list[tuple[str, int]], races: list[Race], submissions: list[SeasonSubmission]
) -> SeasonFile:
    participants = [
        {"role": "miner", "hotkey": _hotkey(uid), "uid": uid, "stake": 0.0, "miner": name, "kind": "honest"}
        for name, uid in miners
    ] + [{"role": "validator", "hotkey": _hotkey(99), "uid": 101, "stake": 100.0, "honest": True}]
    weights = [
        SeasonWeights(
            race_id=race.race_id, uids=[0, 1, 2], weights=[0.5, *((0.3, 0.2) if i % 2 else (0.2, 0.3))]
        )
        for i, race in enumerate(races, 1)
    ]
    return SeasonFile(
        seed=1, miners=len(miners), validators=1, days=len(races), sandbox="none", season_start=START,
        config=CompetitionConfig(), evaluation={}, participants=participants, submissions=submissions,
        races=races, weights=weights, progress=[],
    )  # fmt: skip


SEASON_MINERS = [("01-agentic", 1), ("02-pipeline", 2), (HOSTILE, 3)]


def season_file() -> SeasonFile:
    races = [
        _race(1, [("01-agentic", 1, 0.6), ("02-pipeline", 2, 0.4), (HOSTILE, 3, 0.2)], promoted=True),
        _race(2, [("01-agentic", 1, 0.5), ("02-pipeline", 2, 0.7), (HOSTILE, 3, 0.1)], promoted=True),
    ]
    submissions = [_submission(name, uid) for name, uid in SEASON_MINERS]
    return _season(SEASON_MINERS, races, submissions)


def final_file(raced: bool = True) -> SeasonFile:
    miners = [*SEASON_MINERS, (DISTILLED_MINER, 4)]
    scores = [("02-pipeline", 2, 0.8), ("01-agentic", 1, 0.5), (HOSTILE, 3, 0.3)]
    submissions = [_submission(name, uid) for name, uid in SEASON_MINERS]
    if raced:
        scores.append((DISTILLED_MINER, 4, 0.45))
        submissions.append(_submission(DISTILLED_MINER, 4))
    else:
        submissions.append(_submission(DISTILLED_MINER, 4, qualifying_score=0.05, qualified=False))
    return _season(miners, [_race(3, scores, promoted=True)], submissions)


STAGES = {
    "sft": [
        {"stage": "sft", "step": 1, "loss": 2.5, "learning_rate": 1e-4},
        {"stage": "sft", "step": 2, "loss": 2.1, "eval_loss": 2.3},
        {"stage": "sft", "step": 2, "eval_loss": 2.3, "final": True},
    ],
    "kto": [
        {"stage": "kto", "step": 1, "loss": 0.5, "kl": 0.0, "rewards/chosen": 0.1, "rewards/rejected": -0.1},
        {"stage": "kto", "step": 1, "probe/recommend_rate": 1.0, "probe/episodes": 2, "probe/stop": False},
        {
            "stage": "kto",
            "step": 2,
            "loss": 0.45,
            "kl": 0.02,
            "rewards/chosen": 0.2,
            "rewards/rejected": -0.2,
        },
    ],
    "grpo": [
        {"stage": "grpo", "step": 1, "loss": 0.0, "kl": 0.0, "reward_mean": 0.3, "recommend_rate": 0.5},
        {"stage": "grpo", "step": 2, "loss": 0.01, "kl": 0.003, "reward_mean": 0.4, "recommend_rate": 0.75},
    ],
}


def _stage(train: Path, index: int, name: str, lines: list[dict], finished: bool = True) -> None:
    out = train / f"{index:02d}-{name}"
    out.mkdir(parents=True)
    (out / "metrics.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    if finished:
        losses = [line["loss"] for line in lines if "loss" in line]
        result = StageResult(
            stage=name, out=out, checkpoint=out / "adapter", metrics=out / "metrics.jsonl", report=out / "report.md",
            config=out / "config.resolved.json", steps=len(losses), train_loss=losses[-1], tokens=1000, seconds=2.5,
        )  # fmt: skip
        body = {"config_sha256": "f" * 64, "result": result.model_dump(mode="json")}
        (out / "stage_result.json").write_bytes(orjson.dumps(body))


@pytest.fixture(scope="module")
def runs(small_catalog, small_catalog_dir, tmp_path_factory):
    """Real eval runs (reference agents, 2 samples) and a real corpus manifest."""
    root = tmp_path_factory.mktemp("loop-inputs")
    problems = root / "problems.jsonl"
    generated = ProblemGenerator(small_catalog, seed=5).generate(4, buckets=("product", "shop"))
    write_problems(problems, generated)
    agentic, corpus = reference_corpus(root, small_catalog_dir, problems, parquet=False, eval_size=1)
    pipeline = root / "run_pipeline"
    run_eval(EvalConfig(catalog=small_catalog_dir, problems=problems, agent="reference:pipeline", out=pipeline,
                        executor="inline", similarity="lexical", samples=2, bootstrap=200))  # fmt: skip
    return {"agentic": agentic, "pipeline": pipeline, "corpus": corpus}


def _loop(
    root: Path,
    runs: dict,
    *,
    final: SeasonFile | None = None,
    stages: tuple[str, ...] = ("sft", "kto", "grpo"),
):
    layout = LoopLayout(out=root)
    season_file().write(layout.season_file)
    layout.firehose.parent.mkdir(parents=True)
    manifest = orjson.loads((runs["corpus"] / "manifest.json").read_bytes())
    inputs = manifest["counts"]["inputs"]
    layout.firehose.write_bytes(b"".join(b'{"trajectory": %d}\n' % i for i in range(inputs)))
    shutil.copytree(runs["corpus"], layout.corpus_dir)
    train = layout.train_dir
    train.mkdir(parents=True)
    planned = [{"stage": name} for name in ("sft", "rs", "kto", "grpo")]
    (train / "pipeline.resolved.json").write_bytes(orjson.dumps({"stages": planned}))
    for index, name in enumerate(("sft", "rs", "kto", "grpo"), 1):
        if name in stages:
            _stage(train, index, name, STAGES[name])
    for name, run in (("base", "pipeline"), ("sft", "agentic"), ("grpo", "agentic")):
        if name == "base" or name in stages:
            shutil.copytree(runs[run], train / "eval" / name)
    shutil.copytree(runs["agentic"], layout.season_agents_dir / "01-agentic")
    shutil.copytree(runs["pipeline"], layout.season_agents_dir / HOSTILE.replace("/", "_"))
    (layout.season_agents_dir / "files").mkdir()  # the runner keeps the miner files here: not a run
    unfinished = layout.season_agents_dir / "03-unfinished"
    shutil.copytree(runs["pipeline"], unfinished)
    (unfinished / "metrics.json").unlink()
    (final or final_file()).write(layout.final_season_file)
    return layout


def test_every_section_holds_the_right_numbers(runs, tmp_path):
    layout = _loop(tmp_path / "loop", runs)
    md_path, html_path = write_loop_report(layout, title="Loop test", notes=["a note"])
    assert (md_path, html_path) == (layout.report_md, layout.report_html)
    md = md_path.read_text()
    for heading in ("## 1. The season", "## 2. The firehose funnel", "## 3. Training",
                    "## 4. Held-out comparison", "## 5. The final race"):  # fmt: skip
        assert heading in md
    assert md.startswith("# Loop test") and "- a note" in md
    # the season: two races, both promoted, the crown after each; weights per uid after each race
    assert "| race-00001 | RACE_COMPLETE | 3 | 01-agentic | 0.600 | yes |" in md
    assert "| race-00002 | RACE_COMPLETE | 3 | 02-pipeline | 0.700 | yes |" in md
    assert "| 01-agentic | 0.600 ★ | 0.500 |" in md and "| 02-pipeline | 0.400 | 0.700 ★ |" in md
    assert "| race-00001 | 0.500 | 0.300 | 0.200 |" in md and "| race-00002 | 0.500 | 0.200 | 0.300 |" in md
    # the funnel: the manifest's counts, conservation stated
    counts = orjson.loads((layout.corpus_dir / "manifest.json").read_bytes())["counts"]
    assert f"| inputs | {counts['inputs']:,} |" in md and f"| kept: train | {counts['train']:,} |" in md
    assert f"| rejected | {counts['rejected']:,} |" in md and f"| axis-B | {counts['axis_b']:,} |" in md
    assert f"= {counts['inputs']:,} = inputs." in md
    assert f"The firehose export holds {counts['inputs']:,} trajectories." in md
    # training: every planned stage, rs not run
    assert "| sft | finished | 2 | 2.100 |" in md and "| kto | finished | 2 | 0.450 |" in md
    assert "| rs | not run |" in md and "Stage rs did not start." in md
    # Table 1: base, the stages, the season agents; pass@1 and pass@k
    base, agentic = load_run(layout.train_dir / "eval" / "base"), load_run(runs["agentic"])
    passes = dict(base.pass_at_k())
    assert (
        f"| base | base | {base.counts['problems']} | 2 | {passes[1].text()} | {passes[2].text()} | 2 |" in md
    )
    assert (
        f"| sft | stage | {agentic.counts['problems']} | 1 | {agentic.overall('asr').text()} | – | 1 |" in md
    )
    assert "| 01-agentic | season agent |" in md
    assert "- 03-unfinished: its evaluation did not finish (no metrics.json)" in md and "- files:" not in md
    assert "| Variant | n | ASR |" in md and "\n| base | 8 | " in md and "\n| 01-agentic | 4 | " in md
    # the final race: the distilled agent third of four
    assert "The distilled agent (distilled) placed 3 of 4 (race score 0.450)." in md
    assert "| 3 | distilled ★ | 4 | 0.450 |" in md


def test_the_html_is_self_contained_with_plots_and_escaped(runs, tmp_path):
    layout = _loop(tmp_path / "loop", runs)
    _, html_path = write_loop_report(layout)
    page = html_path.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") == 6  # weights, race scores, funnel, curves, Table 1 bars, standings
    assert "<script" not in page.lower()
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", page))
    assert urls <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert '<tr class=\'highlight\'><td class="num">3</td><td class="">distilled ★</td>' in page


def test_a_distilled_agent_that_did_not_qualify_says_so():
    placement = distilled_placement(final_file(raced=False))
    assert placement.status == "did not qualify"
    assert "qualifying score 0.050" in placement.text() and "threshold is 0.2" in placement.text()
    raced = distilled_placement(final_file())
    assert (raced.status, raced.rank, raced.of) == ("raced", 3, 4)
    season = final_file(raced=False)
    season.submissions[-1] = season.submissions[-1].model_copy(
        update={
            "status": "rejected",
            "qualified": None,
            "violations": [{"message": "import socket is banned"}],
        }
    )
    assert (
        distilled_placement(season).text() == "did not race: admission rejected it (import socket is banned)"
    )
    assert distilled_placement(season_file()).status == "did not race"  # no distilled participant


def test_a_tie_on_score_is_said_with_the_rule_that_broke_it():
    scores = [("02-pipeline", 2, 0.0), ("01-agentic", 1, 0.5), (HOSTILE, 3, 0.0), (DISTILLED_MINER, 4, 0.0)]
    miners = [*SEASON_MINERS, (DISTILLED_MINER, 4)]
    submissions = [_submission(name, uid) for name, uid in miners]
    placement = distilled_placement(_season(miners, [_race(3, scores, promoted=False)], submissions))
    assert (placement.rank, placement.of, placement.tied) == (4, 4, 2)
    assert placement.text() == (
        "placed 4 of 4 (race score 0.000; tied with 2 racers on that score, "
        "ties go to the earlier submission)"
    )
    assert distilled_placement(final_file()).tied == 0  # 0.45 is its own


def test_a_partial_loop_reports_what_did_not_run(runs, tmp_path):
    final = final_file(raced=False)
    cancelled = {"state": "CANCELLED", "results": [], "winner": None, "promoted": False,
                 "cancel_reason": "nobody qualified for the race"}  # fmt: skip
    final.races[-1] = final.races[-1].model_copy(update=cancelled)
    layout = _loop(tmp_path / "loop", runs, stages=("sft",), final=final)
    shutil.rmtree(layout.season_agents_dir)
    md = write_loop_report(layout)[0].read_text()
    assert "| kto | not run |" in md and "| grpo | not run |" in md
    assert "the season's agents were not evaluated on the held-out split" in md
    assert "The distilled agent (distilled) did not qualify: qualifying score 0.050" in md
    assert "No standings: race race-00003 has no results (CANCELLED: nobody qualified for the race)." in md

    bare = LoopLayout(out=tmp_path / "bare")
    season_file().write(bare.season_file)
    bare.final_dir.mkdir(parents=True)
    (bare.final_dir / "stage_started.json").write_text("{}")  # the runner's mark: begun, never done
    md_path, html_path = write_loop_report(bare)
    md = md_path.read_text()
    assert f"Did not run: {bare.firehose} is missing" in md
    assert f"Did not run: {bare.train_dir} is missing" in md
    assert "Nothing was evaluated on the held-out split." in md
    assert f"Started but did not finish: {bare.final_season_file} is missing." in md
    assert "Distilled agent: the final race did not run" in md
    assert html_path.read_text().count("<svg") == 2  # the season's two figures


def test_a_malformed_file_is_named_in_the_error(runs, tmp_path):
    layout = LoopLayout(out=tmp_path / "loop")
    layout.season_dir.mkdir(parents=True)
    layout.season_file.write_text('{"schema": "shoparena.arena-season/1", "seed": "x"}')
    with pytest.raises(LoopReportError, match=re.escape(str(layout.season_file)) + ".*not a season file"):
        write_loop_report(layout)
    layout.season_file.write_text("{not json")
    with pytest.raises(
        LoopReportError, match=r"season\.json: not a season file .*: \(top level\): Invalid JSON"
    ):
        read_loop(layout)
    layout.season_file.unlink()
    manifest = layout.corpus_dir / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text('{"counts": {"inputs": 3}}')
    with pytest.raises(LoopReportError, match=re.escape(str(manifest)) + ": not a corpus manifest"):
        write_loop_report(layout)
    manifest.unlink()
    metrics = layout.train_dir / "01-sft" / "metrics.jsonl"
    metrics.parent.mkdir(parents=True)
    metrics.write_text('{"step": 1, "loss": 1.0}\n{oops\n')
    with pytest.raises(LoopReportError, match=re.escape(str(metrics)) + ": line 2 is not JSON"):
        write_loop_report(layout)


def test_the_loop_report_reads_well_in_chromium(runs, chromium, shots, tmp_path):
    """In a real browser: every legend beside its plot (not on it) and legible, one colour per agent in
    every figure, Table 1 with the intervals its text promises, the tiny model said plainly."""
    from tests.browser import (
        assert_one_colour_per_name,
        assert_readable_figures,
        bar_fills,
        figures,
        screenshot,
        svg_layout,
    )

    layout = _loop(tmp_path / "loop", runs)
    base = layout.train_dir / "00-base"  # a random base the pipeline made: the report must say so
    base.mkdir()
    header = orjson.dumps({"w": {"dtype": "F32", "shape": [271, 1000], "data_offsets": [0, 4]}})
    (base / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 4)
    md_path, html_path = write_loop_report(layout)
    screenshot(chromium, html_path.as_uri(), tmp_path / "profile", shots / "loop-report.png", height=5200)
    assert_readable_figures(svg_layout(chromium, html_path, tmp_path / "profile"), "loop report")

    page = html_path.read_text()
    svgs = figures(page)
    assert len(svgs) == 6
    colours = assert_one_colour_per_name(page, ["01-agentic", "02-pipeline", HOSTILE])
    standings = svgs[-1]  # the final race: 02-pipeline, 01-agentic, the distilled agent, the hostile one
    fills = bar_fills(standings)
    assert fills[:2] == [colours["02-pipeline"], colours["01-agentic"]] and fills[3] == colours[HOSTILE]
    assert fills[2] not in colours.values()  # the distilled agent has a colour of its own
    table1 = svgs[-2]  # base, sft, grpo, then the season agents 01-agentic and the hostile one
    assert colours["01-agentic"] in bar_fills(table1)

    md = md_path.read_text()
    base_run = load_run(layout.train_dir / "eval" / "base")
    passes = dict(base_run.pass_at_k())
    assert (
        f"| base | base | {base_run.counts['problems']} | 2 | {passes[1].text()} | {passes[2].text()} | 2 |"
        in md
    )
    assert passes[1].low is not None  # the bracket is there to show
    assert "- Model: a random-weight Qwen3 of 271,000 parameters" in md and "expect it to solve nothing" in md
