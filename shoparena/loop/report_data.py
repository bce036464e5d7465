"""What the loop report reads: each stage's files under a `LoopLayout`, as plain typed views.

A missing file is not an error (a partial loop still gets a report): its section is None or carries a
`missing` sentence saying what did not run. A file that is there but malformed raises `LoopReportError`
naming the file and the problem.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from shoparena.corpus.models import DEDUP_RANKED_OUT
from shoparena.loop.layout import DISTILLED_MINER, LoopLayout
from shoparena.loop.resume import summary_of
from shoparena.report.runs import METRICS_FILE as RUN_METRICS_FILE
from shoparena.report.runs import RUN_FILE, ReportError, RunView, load_run
from shoparena.season.seasonfile import SeasonFile, SeasonSubmission
from shoparena.train.metrics import METRICS_FILE as STAGE_METRICS_FILE
from shoparena.train.pipeline import BASE_DIR, RESOLVED_PIPELINE, STAGE_RESULT

LEARN_FILE = "learn.json"

CURVE_FAMILIES: dict[str, tuple[str, ...]] = {
    "loss": ("loss", "eval_loss"),
    "reward": (
        "reward_mean",
        "outcome_mean",
        "tool_match_reward_mean",
        "rewards/chosen",
        "rewards/rejected",
        "rewards/margins",
    ),
    "KL": ("kl",),
    "recommend rate": ("recommend_rate", "probe/recommend_rate"),
}
"""The metrics.jsonl keys each curve panel plots (SFT: loss/eval_loss; KTO: TRL's loss, kl, rewards/…
and the probe's recommend rate; GRPO: loss, kl, reward_mean, its parts and the rollouts' recommend
rate). A stage shows the panels it logged."""


class LoopReportError(ValueError):
    """A loop file that is there but cannot be read; the message names the file and the problem."""


def _read_json(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise LoopReportError(f"{path}: not JSON ({exc})") from exc


def read_season_file(path: Path) -> SeasonFile | None:
    """The season file, None when it is not there."""
    if not path.is_file():
        return None
    try:
        return SeasonFile.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise LoopReportError(
            f"{path}: not a season file (shoparena.arena-season/1): {where}: {first['msg']}"
            + (f" (and {exc.error_count() - 1} more problem(s))" if exc.error_count() > 1 else "")
        ) from exc


def miner_names(season: SeasonFile) -> dict[str, str]:
    """hotkey → miner name (the roster's), for every miner participant."""
    return {
        str(p.get("hotkey")): str(p.get("miner") or p.get("hotkey", "?"))
        for p in season.participants
        if p.get("role") == "miner"
    }


def uid_names(season: SeasonFile) -> dict[int, str]:
    """uid → miner name; uid `burn_uid` is the burn."""
    names = {
        int(p["uid"]): str(p.get("miner") or p.get("hotkey", "?"))
        for p in season.participants
        if p.get("role") == "miner" and p.get("uid") is not None
    }
    names.setdefault(season.config.burn_uid, "burn")
    return names


def racer_name(season: SeasonFile, hotkey: str | None, submission_id: str | None = None) -> str:
    """The miner behind a hotkey (or a submission), else the hotkey's head."""
    if hotkey is None:
        return "–"
    for submission in season.submissions:
        if submission_id is not None and submission.submission_id == submission_id:
            return submission.miner
    return miner_names(season).get(hotkey, hotkey[:10] + "…")


# -- the firehose funnel ---------------------------------------------------------------------------------------
class Funnel(BaseModel):
    firehose_rows: int | None
    """Trajectories exported to the firehose (None: no firehose file)."""
    counts: dict[str, int] | None = None
    reasons: dict[str, int] | None = None
    """Rejections by reason, dedup excluded (it is `deduplicated`)."""
    rewritten: int | None = None
    """Agentic rows `corpus rewrite` made of the firehose's axis-B traces, read by the corpus beside it
    (None: the loop did not rewrite)."""

    @property
    def kept(self) -> int:
        return (self.counts or {}).get("train", 0) + (self.counts or {}).get("eval", 0)


def read_funnel(layout: LoopLayout) -> Funnel:
    rows = None
    if layout.firehose.is_file():
        with layout.firehose.open("rb") as handle:
            rows = sum(1 for line in handle if line.strip())
    manifest_path = layout.corpus_dir / "manifest.json"
    if not manifest_path.is_file():
        return Funnel(firehose_rows=rows)
    manifest = _read_json(manifest_path)
    counts = manifest.get("counts") if isinstance(manifest, dict) else None
    needed = ("inputs", "train", "eval", "rejected", "axis_b", "deduplicated")
    if not isinstance(counts, dict) or any(not isinstance(counts.get(k), int) for k in needed):
        raise LoopReportError(f"{manifest_path}: not a corpus manifest (counts {', '.join(needed)} expected)")
    reasons = manifest.get("reasons") or {}
    if not isinstance(reasons, dict) or any(not isinstance(n, int) for n in reasons.values()):
        raise LoopReportError(f"{manifest_path}: 'reasons' is not an object of counts")
    rewritten = summary_of(layout.corpus_dir).get("rewritten")
    return Funnel(
        firehose_rows=rows,
        counts=counts,
        reasons={k: int(v) for k, v in reasons.items() if k != DEDUP_RANKED_OUT},
        rewritten=rewritten if isinstance(rewritten, int) else None,
    )


# -- training ------------------------------------------------------------------------------------------------
class StageCurves(BaseModel):
    name: str
    directory: str
    status: Literal["finished", "unfinished", "not run"]
    result: dict[str, Any] | None = None
    """stage_result.json (steps, train_loss, eval_loss, seconds, details …)."""
    series: dict[str, dict[str, list[tuple[float, float]]]] = {}
    """family (loss, reward, KL, recommend rate) → metric key → (step, value) points."""


class Training(BaseModel):
    ran: bool
    """04-train exists."""
    stages: list[StageCurves] = []
    random_base_parameters: int | None = None
    """Parameters of the random-weight model the pipeline made on the spot (04-train/00-base), so the
    report can say plainly that this base cannot shop; None when the pipeline was given a real model."""
    learn: dict[str, Any] | None = None
    """04-train/learn.json when the stage ran the learning proof's recipe (`train.recipe: proof`)."""


def _safetensors_parameters(directory: Path) -> int | None:
    """Count a checkpoint's parameters from its safetensors headers, without loading torch."""
    total = 0
    files = sorted(directory.glob("*.safetensors"))
    for path in files:
        with path.open("rb") as handle:
            size = int.from_bytes(handle.read(8), "little")
            header = orjson.loads(handle.read(size))
        for name, entry in header.items():
            if name != "__metadata__":
                count = 1
                for dim in entry["shape"]:
                    count *= dim
                total += count
    return total if files else None


def _curves(path: Path) -> dict[str, dict[str, list[tuple[float, float]]]]:
    series: dict[str, dict[str, list[tuple[float, float]]]] = {}
    if not path.is_file():
        return series
    for number, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise LoopReportError(f"{path}: line {number} is not JSON ({exc})") from exc
        if not isinstance(record, dict):
            raise LoopReportError(f"{path}: line {number} is not a JSON object")
        step = record.get("step")
        if not isinstance(step, int | float) or isinstance(step, bool):
            continue
        for family, keys in CURVE_FAMILIES.items():
            for key in keys:
                value = record.get(key)
                if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                    points = series.setdefault(family, {}).setdefault(key, [])
                    if not points or points[-1] != (
                        float(step),
                        float(value),
                    ):  # SFT logs its last eval twice
                        points.append((float(step), float(value)))
    return series


def _planned_stages(train_dir: Path) -> list[str]:
    """`NN-name` of every stage the pipeline config lists, in order (empty without the config)."""
    path = train_dir / RESOLVED_PIPELINE
    if not path.is_file():
        return []
    config = _read_json(path)
    stages = config.get("stages") if isinstance(config, dict) else None
    if not isinstance(stages, list):
        raise LoopReportError(f"{path}: not a pipeline config (no 'stages' list)")
    return [
        f"{index:02d}-{stage.get('name') or stage.get('stage')}"
        for index, stage in enumerate(stages, 1)
        if isinstance(stage, dict)
    ]


def read_training(layout: LoopLayout) -> Training:
    train_dir = layout.train_dir
    if not train_dir.is_dir():
        return Training(ran=False)
    present = sorted(
        p.name
        for p in train_dir.iterdir()
        if p.is_dir() and p.name[:2].isdigit() and p.name[2:3] == "-" and p.name != BASE_DIR
        and ".interrupted-" not in p.name
    )  # fmt: skip
    names = _planned_stages(train_dir)
    names += [name for name in present if name not in names]
    stages = []
    for directory in names:
        stage_dir = train_dir / directory
        name = directory.split("-", 1)[1]
        if not stage_dir.is_dir():
            stages.append(StageCurves(name=name, directory=directory, status="not run"))
            continue
        result = None
        if (stage_dir / STAGE_RESULT).is_file():
            done = _read_json(stage_dir / STAGE_RESULT)
            result = done.get("result") if isinstance(done, dict) else None  # {config_sha256, result}
            if not isinstance(result, dict):
                raise LoopReportError(
                    f"{stage_dir / STAGE_RESULT}: not a finished stage's record (no 'result')"
                )
        stages.append(
            StageCurves(
                name=name,
                directory=directory,
                status="finished" if result is not None else "unfinished",
                result=result,
                series=_curves(stage_dir / STAGE_METRICS_FILE),
            )
        )
    base_dir = train_dir / BASE_DIR
    random_base = _safetensors_parameters(base_dir) if base_dir.is_dir() else None
    learn = _read_json(train_dir / LEARN_FILE) if (train_dir / LEARN_FILE).is_file() else None
    if learn is not None and not isinstance(learn, dict):
        raise LoopReportError(f"{train_dir / LEARN_FILE}: not a JSON object")
    return Training(ran=True, stages=stages, random_base_parameters=random_base, learn=learn)


# -- the held-out comparison ---------------------------------------------------------------------------------
class Agent(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    label: str
    kind: Literal["base", "stage", "season agent"]
    run: RunView


class Comparison(BaseModel):
    agents: list[Agent] = []
    missing: list[str] = []
    """Sentences: which evaluations did not run or did not finish."""


def _is_run_dir(path: Path) -> bool:
    """An eval run directory, finished or not (`shoparena eval` writes run.json first)."""
    return path.is_dir() and ((path / RUN_METRICS_FILE).is_file() or (path / RUN_FILE).is_file())


def _load(path: Path) -> RunView | None:
    """A finished run; None when the directory has no metrics.json yet (it did not finish)."""
    if not (path / RUN_METRICS_FILE).is_file():
        return None
    try:
        return load_run(path)
    except ReportError as exc:
        raise LoopReportError(str(exc)) from exc


def read_comparison(layout: LoopLayout, training: Training) -> Comparison:
    comparison = Comparison()
    eval_dir = layout.train_dir / "eval"
    if not eval_dir.is_dir():
        comparison.missing.append(
            "the checkpoints were not evaluated on the held-out split (no 04-train/eval/)"
        )
    else:
        order = ["base", *(stage.name for stage in training.stages)]
        present = {p.name for p in eval_dir.iterdir() if _is_run_dir(p)}
        for name in [*order, *sorted(present - set(order))]:
            if name not in present:
                if name == "base" or any(s.name == name and s.status == "finished" for s in training.stages):
                    comparison.missing.append(f"{name}: not evaluated")
                continue
            run = _load(eval_dir / name)
            if run is None:
                comparison.missing.append(f"{name}: its evaluation did not finish (no metrics.json)")
                continue
            comparison.agents.append(Agent(label=name, kind="base" if name == "base" else "stage", run=run))
    agents_dir = layout.season_agents_dir
    if not agents_dir.is_dir():
        comparison.missing.append("the season's agents were not evaluated on the held-out split")
    else:
        for path in sorted(p for p in agents_dir.iterdir() if _is_run_dir(p)):  # not files/, the miner files
            run = _load(path)
            if run is None:
                comparison.missing.append(f"{path.name}: its evaluation did not finish (no metrics.json)")
                continue
            comparison.agents.append(Agent(label=path.name, kind="season agent", run=run))
    return comparison


# -- the final race ------------------------------------------------------------------------------------------
class Placement(BaseModel):
    status: Literal["raced", "did not qualify", "did not race"]
    rank: int | None = None
    of: int | None = None
    score: float | None = None
    tied: int = 0
    """Other racers with the same race score (the arena gives ties to the earlier submission)."""
    reason: str = ""

    def text(self) -> str:
        if self.status == "raced":
            tie = ""
            if self.tied:
                racers = "racer" if self.tied == 1 else "racers"
                tie = f"; tied with {self.tied} {racers} on that score, ties go to the earlier submission"
            return f"placed {self.rank} of {self.of} (race score {self.score:.3f}{tie})"
        return f"{self.status}: {self.reason}"


def _latest(submissions: list[SeasonSubmission]) -> SeasonSubmission | None:
    return max(submissions, key=lambda s: (s.day, s.submitted_at), default=None)


def distilled_placement(season: SeasonFile, miner: str = DISTILLED_MINER) -> Placement:
    """Where the distilled miner (`participants[].miner == miner`) placed in the last race."""
    hotkeys = {str(p.get("hotkey")) for p in season.participants if p.get("miner") == miner}
    if not hotkeys:
        return Placement(status="did not race", reason=f"no participant named {miner!r} in the file")
    race = season.races[-1] if season.races else None
    if race is not None:
        for rank, result in enumerate(race.results, 1):
            if result.hotkey in hotkeys:
                tied = sum(1 for other in race.results if other is not result and other.score == result.score)
                return Placement(
                    status="raced", rank=rank, of=len(race.results), score=result.score, tied=tied
                )
    submission = _latest([s for s in season.submissions if s.hotkey in hotkeys])
    if submission is None:
        return Placement(status="did not race", reason="it made no submission")
    threshold = season.config.qualify_threshold
    if submission.status == "rejected":
        why = (
            "; ".join(v.get("message", v.get("rule", "?")) for v in submission.violations)
            or "no reason given"
        )
        return Placement(status="did not race", reason=f"admission rejected it ({why})")
    if submission.qualified is False:
        score = "no score" if submission.qualifying_score is None else f"{submission.qualifying_score:.3f}"
        return Placement(
            status="did not qualify",
            reason=f"qualifying score {score}, the threshold is {threshold:g} (submission {submission.status})",
        )
    if race is None:
        return Placement(status="did not race", reason="the file has no race")
    if submission.qualified is None:
        return Placement(
            status="did not race", reason=f"its submission was never qualified (status {submission.status})"
        )
    why = f"race {race.race_id} {race.state}" + (f": {race.cancel_reason}" if race.cancel_reason else "")
    return Placement(status="did not race", reason=f"qualified but not among the race's results ({why})")


class LoopData(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    layout: LoopLayout
    season: SeasonFile | None
    funnel: Funnel
    training: Training
    comparison: Comparison
    final: SeasonFile | None
    placement: Placement | None


def read_loop(layout: LoopLayout) -> LoopData:
    training = read_training(layout)
    final = read_season_file(layout.final_season_file)
    return LoopData(
        layout=layout,
        season=read_season_file(layout.season_file),
        funnel=read_funnel(layout),
        training=training,
        comparison=read_comparison(layout, training),
        final=final,
        placement=distilled_placement(final) if final is not None else None,
    )
