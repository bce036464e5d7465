"""`run_loop`: the closed loop, stage by stage, resumable (see `layout` for the files, `resume` for the
rules). Each stage calls the same Python API its own command does — `arena simulate`, `store export`,
`corpus build`, `train pipeline`, `shoparena eval` — so the loop is those commands joined, not a second
implementation of any of them.

1. season: a short arena season on the simulated clock (real signed API, admission, sandbox,
   validators, offline judge, store, races, weights);
2. firehose: every stored trajectory exported; the problems the arena ran, with rewards; the final
   race's pool (the held-out partition of the rotation in force when it opens) written as never-touch;
3. corpus: `corpus rewrite` of the firehose's axis-B traces (`corpus.rewrite`, into
   02-firehose/rewritten.jsonl), then `corpus build` (judge and format gates, dedup, axis split,
   leak-guarded split) of the firehose and those rows, with the final race's pool never-touch, so the
   distilled model is never trained on a problem it may race on;
4. train: `train pipeline` on the corpus (tiny model by default), each checkpoint then evaluated on the
   corpus' held-out split;
   or (`train.recipe: proof`, `learn`) the learning proof's recipe on teacher rows, evaluated on
   generated held-out problems;
5. season agents: the miner files that raced the season's last race, evaluated on the same held-out
   problems (Table 1's season rows);
6. final race (`final_race`): the distilled checkpoint served, entered as a miner, one more race;
7. report.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, Field

from shoparena.loop import resume
from shoparena.loop.config import LoopConfig
from shoparena.loop.layout import LoopLayout

Say = Callable[[str], None]
FINAL_RACE_POOL = "final_race_pool.jsonl"
STAGE_NAMES = ("season", "firehose", "corpus", "train", "season agents", "final race", "report")


class LoopError(RuntimeError):
    """A stage cannot go on; the message says which and what to change."""


class StageOutcome(BaseModel):
    stage: str
    directory: Path
    resumed: bool
    seconds: float
    summary: dict[str, Any] = Field(default_factory=dict)


class LoopResult(BaseModel):
    out: Path
    stages: list[StageOutcome]
    report_md: Path | None = None
    report_html: Path | None = None
    seconds: float = 0.0


class _Stages:
    """Runs the stages in order, chaining fingerprints and printing one header per stage."""

    def __init__(self, config: LoopConfig, layout: LoopLayout, say: Say):
        self.config = config
        self.layout = layout
        self.say = say
        self.previous = ""
        self.outcomes: list[StageOutcome] = []

    def run(
        self,
        name: str,
        directory: Path,
        settings: Any,
        work: Callable[[], dict[str, Any]],
        *,
        resumes_inside: bool = False,
    ) -> dict[str, Any]:
        index = STAGE_NAMES.index(name) + 1
        print_ = resume.fingerprint(self.previous, settings)
        self.previous = print_
        started = time.monotonic()
        if resume.is_done(directory, print_):
            summary = resume.summary_of(directory)
            self.say(f"[{index}/{len(STAGE_NAMES)}] {name}: finished before, resumed from {directory}")
            self.outcomes.append(
                StageOutcome(stage=name, directory=directory, resumed=True, seconds=0.0, summary=summary)
            )
            return summary
        self.say(f"[{index}/{len(STAGE_NAMES)}] {name} → {directory}")
        aside = resume.begin(directory, print_, resumes_inside=resumes_inside)
        if aside is not None:
            why = "unfinished" if resume.started_with(aside, print_) else "made with other settings"
            self.say(f"    kept the earlier {directory.name} ({why}) as {aside.name}; delete it when done")
        summary = work()
        resume.finish(directory, print_, summary)
        seconds = time.monotonic() - started
        self.say(f"    {name}: done in {seconds:.0f} s")
        self.outcomes.append(
            StageOutcome(stage=name, directory=directory, resumed=False, seconds=seconds, summary=summary)
        )
        return summary


# -- 1 season ---------------------------------------------------------------------------------------------
def play_season(config: LoopConfig, layout: LoopLayout, say: Say) -> dict[str, Any]:
    from shoparena.season.driver import Season

    def day(progress) -> None:
        crowned = progress.winner_name or (progress.winner and progress.winner[:10] + "…")
        winner = f", winner {crowned}" if crowned else ""
        say(
            f"    day {progress.day}/{config.season.days}: {progress.submitted} submitted "
            f"({progress.admitted} admitted, {progress.rejected} rejected), {progress.episodes} episodes, "
            f"race {progress.state}{winner} ({progress.wall_s:.0f} s)"
        )

    season = Season(layout.arena_dir, config.season, progress=day).run()
    season.write(layout.season_file)
    return {"races": len(season.races), "episodes": season.timing.episodes if season.timing else 0}


# -- 2 firehose -------------------------------------------------------------------------------------------
def export_firehose(config: LoopConfig, layout: LoopLayout, say: Say) -> dict[str, Any]:
    """The store's trajectories, the problems they were run on, and the final race's pool."""
    from shoparena.arena import open_arena
    from shoparena.arena.competition.bank import read_bank
    from shoparena.arena.competition.engine import RaceEngine
    from shoparena.arena.competition.freshness import retired_clusters
    from shoparena.arena.competition.pools import fresh_heldout, rotation_at
    from shoparena.problems.io import read_problems, write_problems
    from shoparena.season.clock import SEASON_EPOCH, SimClock
    from shoparena.season.driver import season_start
    from shoparena.train.leak_guard import problem_key

    with open_arena(layout.arena_dir) as arena:
        exported = arena.store.export(layout.firehose)
        bank = read_bank(arena.dir)
        opens_at = season_start(arena, RaceEngine(arena, clock=SimClock(SEASON_EPOCH)))
        with arena.store.engine.connect() as connection:
            retired = retired_clusters(connection)
        rotation = rotation_at(arena.dir, arena.config, opens_at, retired=retired)
    qualifying = read_problems(layout.arena_dir / "world" / "qualifying.jsonl").problems
    problems, seen = [], set()
    for problem in [*qualifying, *bank.problems]:
        if problem_key(problem) not in seen:
            seen.add(problem_key(problem))
            problems.append(problem)
    write_problems(layout.problems, problems)
    by_id = bank.by_id
    pool = [by_id[i] for i in fresh_heldout(rotation, bank, retired) if i in by_id]
    write_problems(layout.firehose_dir / FINAL_RACE_POOL, pool)
    say(
        f"    {exported} trajectories exported; {len(problems)} problems; the final race (opens "
        f"{opens_at:%Y-%m-%d %H:%M} UTC) draws from {len(pool)} held-out problems, kept out of the corpus"
    )
    return {"trajectories": exported, "problems": len(problems), "final_race_pool": len(pool)}


# -- 3 corpus ---------------------------------------------------------------------------------------------
def build_loop_corpus(config: LoopConfig, layout: LoopLayout, say: Say) -> dict[str, Any]:
    from shoparena.corpus.config import CorpusConfig
    from shoparena.corpus.pipeline import build_corpus

    part = config.corpus
    inputs = [layout.firehose]
    rewritten = rewrite_firehose(part.rewrite, layout, say) if part.rewrite else None
    if rewritten is not None:
        inputs.append(layout.rewritten)
    # `corpus build` refuses a non-empty output (and moves its finished corpus into place whole), so
    # the stage's started-marker steps out of the directory for the build and goes back in after it.
    marker = layout.corpus_dir / resume.STAGE_STARTED
    started = marker.read_bytes() if marker.is_file() else None
    marker.unlink(missing_ok=True)
    try:
        result = build_corpus(
            CorpusConfig(
                inputs=inputs,
                out=layout.corpus_dir,
                catalog=layout.catalog,
                problems=[layout.problems],
                never_touch=[layout.firehose_dir / FINAL_RACE_POOL],
                seed=config.season.seed,
                **part.build_options(),
            )
        )
    finally:
        if started is not None:
            layout.corpus_dir.mkdir(parents=True, exist_ok=True)
            marker.write_bytes(started)
    c = result.counts
    say(
        f"    inputs {c['inputs']} = train {c['train']} + eval {c['eval']} + rejected {c['rejected']} "
        f"+ axis-B {c['axis_b']} + deduplicated {c['deduplicated']}"
    )
    if c["train"] == 0 or c["eval"] == 0:
        raise LoopError(
            f"the corpus in {layout.corpus_dir} has {c['train']} training and {c['eval']} held-out rows "
            f"(rejections: {dict(result.reasons)}): play a longer season (season.days, season.miners ≥ 1 "
            "with model-driven miners) or lower corpus.min_quality"
        )
    return {**c, "rewritten": rewritten}


def rewrite_firehose(spec: str, layout: LoopLayout, say: Say) -> int:
    """`corpus rewrite` of the firehose into `layout.rewritten`; how many rows it wrote."""
    from functools import partial

    from shoparena.corpus.rewrite import rewrite_file
    from shoparena.corpus.rewriters import make_engines

    report = rewrite_file(
        [layout.firehose],
        layout.rewritten,
        partial(make_engines, spec, "offline"),
        rejects=layout.rewrite_rejects,
    )
    left = report.rejected.get("not_axis_b", 0)
    others = {k: n for k, n in report.rejected.items() if k != "not_axis_b"}
    say(
        f"    rewrote {report.rewritten} axis-B trace(s) with the {spec} rewriter "
        f"(judge quality {dict(sorted(report.qualities.items()))}); {left} already agentic"
        + (f"; not rewritten: {others}" if others else "")
    )
    return report.rewritten


# -- 4 train ----------------------------------------------------------------------------------------------
def pipeline_config(config: LoopConfig, layout: LoopLayout):
    from shoparena.train.pipeline import PipelineConfig

    return PipelineConfig.from_file(
        config.train.pipeline,
        corpus=str(layout.corpus_dir.resolve()),
        catalog=str(layout.catalog.resolve()),
        problems=str(layout.problems.resolve()),
        **config.train.values,
    )


def train(config: LoopConfig, layout: LoopLayout, say: Say) -> dict[str, Any]:
    from shoparena.train.pipeline import run_pipeline

    if config.train.recipe == "proof":
        from shoparena.loop.learn import train_by_proof

        return train_by_proof(config, layout, say)

    result = run_pipeline(pipeline_config(config, layout), layout.train_dir, lambda line: say(f"    {line}"))
    final = result.stages[-1].result.model_path if result.stages else result.base_model
    return {
        "base": str(result.base_model),
        "stages": [run.name for run in result.stages],
        "checkpoint": str(final),
    }


# -- 5 season agents --------------------------------------------------------------------------------------
def season_racers(layout: LoopLayout) -> list[tuple[str, str]]:
    """(miner name, file stem) of each miner that raced the season's last race."""
    from shoparena.season.seasonfile import read_season

    season = read_season(layout.season_file)
    if not season.races:
        return []
    raced = {result.submission_id for result in season.races[-1].results}
    return [(s.miner, s.file) for s in season.submissions if s.submission_id in raced]


def evaluate_season_agents(config: LoopConfig, layout: LoopLayout, say: Say) -> dict[str, Any]:
    from shoparena.eval.runner import run_eval
    from shoparena.season.driver import resolve_sandbox
    from shoparena.season.roster import miner_source
    from shoparena.train.pipeline import HELD_OUT_BOOTSTRAP, EvalSettings, held_out_problems
    from shoparena.train.rollouts import Sampling, eval_config

    pipeline = pipeline_config(config, layout)
    settings = pipeline.evaluate or EvalSettings()
    if config.train.recipe == "proof":  # the held-out problems the recipe's checkpoints ran on
        from shoparena.loop.learn import heldout_file
        from shoparena.problems.io import read_problems

        problems = read_problems(heldout_file(layout)).problems
        settings = EvalSettings(samples=1, similarity="lexical", step_cap=None)
    else:
        problems = held_out_problems(pipeline)
    sandbox = resolve_sandbox(config.season.sandbox)
    files = layout.season_agents_dir / "files"
    files.mkdir(parents=True, exist_ok=True)
    evaluated = []
    for miner, stem in season_racers(layout):
        path = files / f"{stem}.py"
        path.write_text(miner_source(stem), encoding="utf-8")
        sampling = Sampling(
            samples=settings.samples,
            max_turns=None,
            similarity=settings.similarity,
            timeout=config.season.problem_timeout_s,
        )
        run = eval_config(
            f"file:{path}", layout.catalog, problems, layout.season_agents_dir / miner, sampling
        )
        say(f"    {miner}: {len(problems)} held-out problems × {settings.samples}")
        run_eval(
            run.replace(
                name=f"season {miner}",
                step_cap=settings.step_cap,
                sandbox=sandbox,
                bootstrap=HELD_OUT_BOOTSTRAP,
            )
        )
        evaluated.append(miner)
    return {"agents": evaluated}


# -- the loop ---------------------------------------------------------------------------------------------
def _settings(model: BaseModel, **extra: Any) -> Any:
    return {**model.model_dump(mode="json"), **extra}


def run_loop(config: LoopConfig, out: Path, say: Say = print) -> LoopResult:
    """Every stage in order, resuming finished ones; the report at the end. `say` gets the stage lines;
    everything else printed meanwhile (libraries, child processes) goes to OUT/loop.log."""
    from shoparena.loop.console_log import LOG_FILE, library_output_to

    log = Path(out) / LOG_FILE
    with library_output_to(log, say) as to_console:
        to_console(f"libraries' own output (warnings, progress bars, server logs) → {log}")
        return _run_stages(config, out, to_console)


def _run_stages(config: LoopConfig, out: Path, say: Say) -> LoopResult:
    from shoparena.loop.final_race import run_final_race
    from shoparena.loop.report import write_loop_report

    started = time.monotonic()
    layout = LoopLayout(out=Path(out))
    layout.out.mkdir(parents=True, exist_ok=True)
    layout.resolved.write_bytes(orjson.dumps(config.model_dump(mode="json"), option=orjson.OPT_INDENT_2))
    stages = _Stages(config, layout, say)
    stages.run(
        "season", layout.season_dir, _settings(config.season), lambda: play_season(config, layout, say)
    )
    stages.run("firehose", layout.firehose_dir, {}, lambda: export_firehose(config, layout, say))
    stages.run(
        "corpus", layout.corpus_dir, _settings(config.corpus), lambda: build_loop_corpus(config, layout, say)
    )
    trained = stages.run(
        "train",
        layout.train_dir,
        _settings(config.train)
        if config.train.recipe == "proof"
        else pipeline_config(config, layout).model_dump(mode="json"),
        lambda: train(config, layout, say),
        resumes_inside=True,
    )
    stages.run(
        "season agents",
        layout.season_agents_dir,
        {"enabled": config.season_agents},
        (lambda: evaluate_season_agents(config, layout, say))
        if config.season_agents
        else (lambda: {"agents": []}),
    )
    stages.run(
        "final race",
        layout.final_dir,
        _settings(config.serve, race_untrained=config.race_untrained),
        lambda: run_final_race(
            config,
            layout,
            Path(trained["checkpoint"]),
            say,
            Path(trained["base"]) if config.race_untrained else None,
        ),
    )
    say(f"[{len(STAGE_NAMES)}/{len(STAGE_NAMES)}] report")
    report_md, report_html = write_loop_report(layout)
    return LoopResult(
        out=layout.out,
        stages=stages.outcomes,
        report_md=report_md,
        report_html=report_html,
        seconds=time.monotonic() - started,
    )
