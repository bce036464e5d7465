"""`shoparena train pipeline`: the five stages in order (SPEC §9), each stage's checkpoint the next
one's model, resumable at stage granularity, then every checkpoint evaluated on the corpus' held-out
split and put side by side in the paper's Table 1 shape.

Why a separate runner rather than a shell loop: a stage's inputs come from earlier stages (the model
from the previous checkpoint, KTO's and GRPO's teacher trajectories from the teacher stage), and an
interrupted run must pick up where it stopped without retraining what finished. Each finished stage
leaves `stage_result.json` (its `StageResult`) beside `config.resolved.json`; on a re-run a stage whose
resolved config is unchanged and whose result is there is skipped, anything else is run again from the
start of that stage (a half-written stage directory is moved aside, not trusted).

Layout of `--out DIR`:

```
DIR/pipeline.resolved.json   the pipeline config as run
DIR/00-base/                 the tiny model when `model` is not given
DIR/01-sft/ 02-rs/ …         one directory per stage (its checkpoint, metrics.jsonl, report.md …)
DIR/eval/<name>/             `shoparena eval` run directories, one per checkpoint (and the base)
DIR/report.md, report.html   Table 1: base and every stage on the corpus' eval split, pass@1 and pass@k
```
"""

from __future__ import annotations

import hashlib
import importlib
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shoparena.records.options import ConfigError, SimilarityName, config_errors, read_config_file
from shoparena.train.config import StageResult
from shoparena.train.model_card import add_heldout, write_model_card
from shoparena.train.reporting import ReportTo

StageName = Literal["sft", "rs", "teacher", "kto", "grpo"]
STAGE_RESULT = "stage_result.json"
RESOLVED_PIPELINE = "pipeline.resolved.json"
BASE_DIR = "00-base"
TEACHER_TRAJECTORIES = Path("rollouts") / "trajectories.jsonl"
"""Where the teacher stage keeps every teacher episode (KTO labels them, GRPO matches tools against them)."""
PROBE_PROBLEMS = "probe_problems.jsonl"
PATH_KEYS = ("corpus", "catalog", "problems", "model")
REPORT_TITLE = "Post-training stages on the corpus' held-out problems (Table 1 shape)"


class StageSpec(BaseModel):
    """Where a stage's config class and runner live (imported on use: torch and TRL load lazily)."""

    module: str
    config: str
    runner: str

    def load(self) -> tuple[type, Callable[[Any], StageResult]]:
        module = importlib.import_module(self.module)
        return getattr(module, self.config), getattr(module, self.runner)


STAGES: dict[str, StageSpec] = {
    "sft": StageSpec(module="shoparena.train.sft", config="SFTStageConfig", runner="run_sft"),
    "rs": StageSpec(module="shoparena.train.rs", config="RSStageConfig", runner="run_rs"),
    "teacher": StageSpec(module="shoparena.train.teacher", config="TeacherStageConfig", runner="run_teacher"),
    "kto": StageSpec(module="shoparena.train.kto", config="KTOStageConfig", runner="run_kto"),
    "grpo": StageSpec(module="shoparena.train.grpo", config="GRPOStageConfig", runner="run_grpo"),
}


class PipelineStage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stage: StageName
    name: str | None = None
    """Directory and report name (default: the stage's)."""
    config: Path | None = None
    """A stage config file (e.g. configs/paper/sft.yaml); `values` go on top of it."""
    values: dict[str, Any] = Field(default_factory=dict)


class EvalSettings(BaseModel):
    """How each checkpoint is evaluated on the corpus' held-out problems (`shoparena eval`)."""

    model_config = ConfigDict(extra="forbid")

    samples: int = Field(2, ge=1, description="Samples per problem (pass@k for k ≤ samples).")
    limit: int | None = Field(None, ge=1, description="Only the first N held-out problems.")
    step_cap: int | None = Field(8, ge=1)
    temperature: float = Field(0.7, ge=0)
    max_tokens: int = Field(256, ge=1)
    similarity: SimilarityName = "lexical"
    workers: int = Field(1, ge=1)


class PipelineConfig(BaseModel):
    """One pipeline run. Shared inputs are handed to every stage whose config has a field of that name."""

    model_config = ConfigDict(extra="forbid")

    corpus: Path
    catalog: Path
    problems: Path
    """Problems with rewards: the training problems of rs/teacher/grpo (the leak guard drops the
    corpus' eval and never-touch ones) and the source of the held-out problems evaluated at the end."""
    model: Path | None = None
    """A local HF checkpoint; None builds the tiny random Qwen3 (offline, CPU-sized)."""
    teacher: str | None = None
    """Teacher agent spec for the teacher stage (openai:MODEL, hf:PATH or an offline reference model)."""
    stages: list[PipelineStage] = Field(min_length=1)
    max_steps: int | None = Field(None, ge=1)
    """Applied to every stage that does not set its own (smoke runs)."""
    seed: int = 0
    report_to: ReportTo = "none"
    """Handed to every stage that does not set its own (`--report-to`; not part of a stage's resume
    fingerprint: changing where a run reports does not retrain finished stages)."""
    evaluate: EvalSettings | None = Field(default_factory=EvalSettings)
    """None skips the evaluation and the report."""

    @classmethod
    def from_file(cls, path: Path, **overrides: Any) -> PipelineConfig:
        """The config in `path` with `overrides` (command-line values, relative to the working
        directory) on top. Paths written in the file are relative to the file, like a Makefile's."""
        data = read_config_file(path)
        base = Path(path).resolve().parent

        def here(value: Any) -> Any:
            return value if value is None or Path(value).is_absolute() else str((base / value).resolve())

        for key in PATH_KEYS:
            if key in data:
                data[key] = here(data[key])
        for stage in data.get("stages") or []:
            if isinstance(stage, dict) and stage.get("config") is not None:
                stage["config"] = here(stage["config"])
        data.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"pipeline config {path}: {config_errors(exc)}") from None


class StageRun(BaseModel):
    stage: str
    name: str
    result: StageResult
    resumed: bool
    """True when a finished result was found and the stage was not run again."""


class PipelineResult(BaseModel):
    out: Path
    base_model: Path
    stages: list[StageRun]
    eval_runs: list[Path] = Field(default_factory=list)
    report_md: Path | None = None
    report_html: Path | None = None
    seconds: float = 0.0


def _stage_dirname(index: int, stage: PipelineStage) -> str:
    return f"{index:02d}-{stage.name or stage.stage}"


def probe_file(config: PipelineConfig, out: Path) -> Path:
    """The corpus' held-out problems as a file: KTO's early-stop probe samples them (a probe never
    trains, so the eval pool is safe to probe with)."""
    from shoparena.problems.io import write_problems

    path = out / PROBE_PROBLEMS
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        write_problems(tmp, held_out_problems(config))
        tmp.replace(path)
    return path


def _shared_inputs(config: PipelineConfig, out: Path, previous: list[StageRun]) -> dict[str, Any]:
    """What earlier stages and the pipeline offer a stage, by field name."""
    values: dict[str, Any] = {
        "corpus": config.corpus,
        "catalog": config.catalog,
        "problems": config.problems,
        "seed": config.seed,
        "report_to": config.report_to,
        "probe_problems": probe_file(config, out),
    }
    if config.teacher is not None:
        values["teacher"] = config.teacher
    for run in previous:
        if run.stage != "teacher":
            continue
        found = run.result.details.get("trajectories") or run.result.out / TEACHER_TRAJECTORIES
        if Path(found).exists():
            values["trajectories"] = Path(found)
            values["teacher_trajectories"] = Path(found)
    return values


def _fit(config_cls: type, key: str, value: Any) -> Any:
    """A single path handed to a field that takes a list of them becomes a one-item list."""
    annotation = config_cls.model_fields[key].annotation
    wants_list = get_origin(annotation) is list or any(
        get_origin(arg) is list for arg in get_args(annotation)
    )
    return [value] if wants_list and not isinstance(value, list) else value


def stage_config(
    config: PipelineConfig, stage: PipelineStage, model: Path, out: Path, previous: list[StageRun]
) -> Any:
    """The stage's config: its file, then the shared inputs its class declares, then its own values."""
    config_cls, _ = STAGES[stage.stage].load()
    fields = config_cls.model_fields
    shared = {
        k: _fit(config_cls, k, v)
        for k, v in _shared_inputs(config, out.parent, previous).items()
        if k in fields
    }
    given: dict[str, Any] = {**shared, "model": model, "out": out, **stage.values}
    if config.max_steps is not None and "max_steps" in fields and "max_steps" not in stage.values:
        given["max_steps"] = config.max_steps
    given = {k: v for k, v in given.items() if k in fields}
    if stage.config is not None:
        return config_cls.from_file(stage.config, **given)
    return config_cls.from_values(given, source=f"pipeline stage {stage.name or stage.stage}")


def _fingerprint(stage_config_obj: Any) -> str:
    body = orjson.dumps(
        stage_config_obj.model_dump(mode="json", exclude={"progress", "report_to"}),
        option=orjson.OPT_SORT_KEYS,
    )
    return hashlib.sha256(body).hexdigest()


def _finished(out: Path, fingerprint: str) -> StageResult | None:
    path = out / STAGE_RESULT
    if not path.exists():
        return None
    try:
        saved = orjson.loads(path.read_bytes())
        if saved.get("config_sha256") != fingerprint:
            return None
        return StageResult.model_validate(saved["result"])
    except (ValueError, KeyError, TypeError):
        return None


def set_aside(directory: Path) -> Path | None:
    """A stage directory without a matching finished result is not trusted: keep it, renamed
    `NAME.interrupted-TIMESTAMP[-N]` (never deleted); returns the new name."""
    if not directory.exists():
        return None
    stamp = int(time.time())
    aside = directory.with_name(f"{directory.name}.interrupted-{stamp}")
    n = 1
    while aside.exists():  # two set-asides in one second must not nest one inside the other
        n += 1
        aside = directory.with_name(f"{directory.name}.interrupted-{stamp}-{n}")
    shutil.move(str(directory), str(aside))
    return aside


def _write_finished(out: Path, fingerprint: str, result: StageResult) -> None:
    body = {"config_sha256": fingerprint, "result": result.model_dump(mode="json")}
    tmp = out / f".{STAGE_RESULT}.tmp"
    tmp.write_bytes(orjson.dumps(body, option=orjson.OPT_INDENT_2))
    tmp.replace(out / STAGE_RESULT)


def base_model(config: PipelineConfig, out: Path, say: Callable[[str], None]) -> Path:
    if config.model is not None:
        return config.model
    from shoparena.train.tiny_model import TinyModelConfig, make_tiny_model

    path = out / BASE_DIR
    if (path / "config.json").exists() and (path / "tokenizer.json").exists():
        say(f"base: tiny model at {path} (resumed)")
        return path
    set_aside(path)
    made = make_tiny_model(TinyModelConfig(out=path, seed=config.seed))
    say(f"base: tiny model {made.path} ({made.parameters:,} parameters)")
    return made.path


def run_stages(
    config: PipelineConfig, out: Path, say: Callable[[str], None] = print
) -> tuple[Path, list[StageRun]]:
    base = base_model(config, out, say)
    runs: list[StageRun] = []
    model = base
    for index, stage in enumerate(config.stages, start=1):
        name = stage.name or stage.stage
        stage_out = out / _stage_dirname(index, stage)
        built = stage_config(config, stage, model, stage_out, runs)
        fingerprint = _fingerprint(built)
        done = _finished(stage_out, fingerprint)
        if done is not None:
            say(f"[{index}/{len(config.stages)}] {name}: finished before, resumed from {stage_out}")
            runs.append(StageRun(stage=stage.stage, name=name, result=done, resumed=True))
        else:
            set_aside(stage_out)
            say(f"[{index}/{len(config.stages)}] {name}: training {model} → {stage_out}")
            _, runner = STAGES[stage.stage].load()
            result = runner(built)
            write_model_card(built, result)
            _write_finished(stage_out, fingerprint, result)
            runs.append(StageRun(stage=stage.stage, name=name, result=result, resumed=False))
        model = runs[-1].result.model_path
    return base, runs


def held_out_problems(config: PipelineConfig) -> list:
    """The corpus' eval-pool problems, with their rewards from `config.problems`, in file order."""
    from shoparena.problems.io import read_problems
    from shoparena.train.leak_guard import problem_key, read_pools

    wanted = set(read_pools(config.corpus).eval)
    loaded = read_problems(config.problems)
    chosen = [p for p in loaded.problems if problem_key(p) in wanted]
    if not chosen:
        raise ValueError(
            f"none of the corpus' {len(wanted)} eval problems is in {config.problems}: evaluate with the "
            "problems file the corpus was built from"
        )
    limit = config.evaluate.limit if config.evaluate else None
    return chosen[:limit] if limit else chosen


HELD_OUT_BOOTSTRAP = 1000
"""Bootstrap resamples of a held-out evaluation (its intervals in Table 1; cheap at these sizes)."""


def evaluate_checkpoints(
    config: PipelineConfig, out: Path, models: list[tuple[str, Path]], say: Callable[[str], None] = print
) -> list[Path]:
    """`shoparena eval` of every checkpoint on the held-out problems (resumable run directories)."""
    from shoparena.eval.runner import run_eval
    from shoparena.train.rollouts import Sampling, eval_config

    settings = config.evaluate or EvalSettings()
    problems = held_out_problems(config)
    sampling = Sampling(
        samples=settings.samples,
        temperature=settings.temperature,
        max_turns=settings.step_cap,
        max_new_tokens=settings.max_tokens,
        similarity=settings.similarity,
        workers=settings.workers,
        protocol="qwen3",
        seed=config.seed,
    )
    runs = []
    for name, model in models:
        run_dir = out / "eval" / name
        say(f"eval {name}: {len(problems)} held-out problems × {settings.samples} → {run_dir}")
        eval_cfg = eval_config(f"hf:{model}", config.catalog, problems, run_dir, sampling)
        # held out: the report's Table 1 shows 95% intervals (rollouts for training draw none)
        run_eval(eval_cfg.replace(name=name, step_cap=settings.step_cap, bootstrap=HELD_OUT_BOOTSTRAP))
        runs.append(run_dir)
    return runs


def run_pipeline(config: PipelineConfig, out: Path, say: Callable[[str], None] = print) -> PipelineResult:
    """Every stage in order (resuming finished ones), then the evaluation and Table 1."""
    started = time.monotonic()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / RESOLVED_PIPELINE).write_bytes(
        orjson.dumps(config.model_dump(mode="json"), option=orjson.OPT_INDENT_2)
    )
    base, runs = run_stages(config, out, say)
    result = PipelineResult(out=out, base_model=base, stages=runs)
    if config.evaluate is not None:
        from shoparena.report.documents import comparison_markdown, report_html
        from shoparena.report.runs import load_run
        from shoparena.report.tables import comparison_rows

        models = [("base", base), *((run.name, run.result.model_path) for run in runs)]
        result.eval_runs = evaluate_checkpoints(config, out, models, say)
        views = [load_run(path) for path in result.eval_runs]
        for run, view in zip(runs, views[1:], strict=True):  # each checkpoint's Table 1 row, in its card
            add_heldout(run.result, comparison_rows([views[0], view]).markdown())
        result.report_md = out / "report.md"
        result.report_html = out / "report.html"
        result.report_md.write_text(comparison_markdown(views, REPORT_TITLE), encoding="utf-8")
        result.report_html.write_text(report_html(views, REPORT_TITLE), encoding="utf-8")
        say(f"report: {result.report_md} and {result.report_html}")
    result.seconds = time.monotonic() - started
    return result
