"""A miner's tryout: what the arena would make of an agent file, on the miner's own machine, before it
is submitted (and before a 12-hour cooldown is spent on a typo).

It runs the parts of the arena that decide a submission, not copies of them: admission's static
analysis (`check_submission`), the validator's evaluation (`validator.evaluation_config`: the arena's
evaluation settings, production-strict scoring, the file agent in the bubblewrap sandbox, the inference
proxy serving the offline reference models), the judge on every episode, the ledger's aggregates
(`canonical.result_scores`: success rate × judge coefficient) and the competition's qualifying
threshold. What differs is only the problems: the arena qualifies on its own bank, which a miner never
sees, so a tryout runs a generated practice set (or problems the miner brings, or an arena directory's
bank on the operator's machine).

The file is copied into the run directory before it runs, and the run directory is named after the
code's sha256: the result is about exactly those bytes, and trying the same bytes again resumes (or
just reprints) the run instead of redoing it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Annotated, ClassVar

import orjson
from pydantic import BaseModel, ConfigDict, Field

from shoparena.admission import Violation, check_submission
from shoparena.arena.canonical import problem_outcome, result_scores
from shoparena.arena.config import CompetitionConfig
from shoparena.arena.errors import ArenaError
from shoparena.arena.models import EvaluationSettings, ProblemResultIn, ResultScores
from shoparena.arena.participants.validator import INFERENCE_MODELS_HELP, evaluation_config
from shoparena.problems.models import Problem
from shoparena.records.options import CliFlag, SandboxBackend

PRACTICE_PRODUCTS = 3000
PRACTICE_PROBLEMS = 12
PRACTICE_SEED = 7
AGENT_FILE = "agent.py"


class TryoutError(ArenaError):
    """The tryout could not run (the file is unreadable, the problems are missing, the run failed)."""


class TryoutSettings(BaseModel):
    """Where and how to try a file; the defaults are the arena's own (`arena init` defaults). Each
    field but `cli_exclude` is an option of `miner try`, its description the option's help."""

    model_config = ConfigDict(extra="forbid")
    cli_exclude: ClassVar[frozenset[str]] = frozenset({"practice_dir", "evaluation", "qualify_threshold"})

    out: Path = Field(
        Path("miner-try"),
        description="Runs go to OUT/<the code's sha256, 12 digits>/, the practice set to OUT/practice.",
    )
    """Runs go to `out/<first 12 hex digits of the code's sha256>/`."""
    catalog: Path | None = Field(None, description="The catalogue --problems was made on.")
    """With `problems`: the catalogue they were made on [default: the practice set's]."""
    problems: Path | None = Field(
        None,
        description="Problems to run \\[default: a practice set of generated problems on a generated "
        "catalogue, made once under OUT/practice].",
    )
    practice_dir: Path | None = None
    """Where the practice set is generated and kept [default: `out/practice`]."""
    practice_problems: int = Field(PRACTICE_PROBLEMS, ge=1, le=500, description="Size of the practice set.")
    limit: int | None = Field(None, ge=1, description="Only the first N problems.")
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)
    qualify_threshold: float = Field(default=CompetitionConfig().qualify_threshold, ge=0, le=1)
    judge: str = Field(
        "offline",
        description="offline (rules, no model) or openai:MODEL (at $OPENAI_BASE_URL, key $OPENAI_API_KEY).",
    )
    sandbox: Annotated[SandboxBackend, CliFlag(type=str)] = Field(
        "bwrap",
        description="bwrap (as validators run it), container, or none (no isolation: your own code only).",
    )
    workers: int = Field(1, ge=1, description="Problems run in parallel.")
    inference_models: Annotated[dict[str, str] | None, CliFlag(type=str, show_default=False)] = Field(
        None, description=INFERENCE_MODELS_HELP
    )
    """The inference proxy's allowlist [default: the offline reference models, as a validator's]."""


class TryoutReport(BaseModel):
    agent: Path
    code_sha256: str
    violations: list[Violation]
    """Admission's findings; any of them and the arena would refuse the file (nothing else ran)."""
    run_dir: Path | None = None
    """The eval run (records, metrics): `OUT/<code sha256, 12 digits>/run-<settings key>/`, beside the
    copy of the bytes tried (`OUT/<code sha256, 12 digits>/agent.py`)."""
    problems_file: Path | None = None
    outcomes: list[ProblemResultIn] = Field(default_factory=list)
    scores: ResultScores | None = None
    qualify_threshold: float
    similarity: str

    @property
    def admitted(self) -> bool:
        return not self.violations

    @property
    def qualifies(self) -> bool:
        """Whether this score would pass qualifying (an unjudged run scores 0, as in the arena)."""
        return (
            self.admitted
            and self.scores is not None
            and (self.scores.final_score or 0.0) >= self.qualify_threshold
        )


def arena_settings(arena_dir: Path, settings: TryoutSettings) -> TryoutSettings:
    """`settings` with an arena directory's evaluation settings, qualifying threshold and, unless the
    tryout names its own, the arena's catalogue and bank (on the operator's machine)."""
    from shoparena.arena.config import read_config

    config = read_config(arena_dir)
    update: dict = {
        "evaluation": config.evaluation,
        "qualify_threshold": config.competition.qualify_threshold,
    }
    if settings.problems is None and settings.catalog is None:
        update |= {"catalog": Path(config.catalog), "problems": Path(config.problems)}
    return settings.model_copy(update=update)


def by_bucket_in_turn(problems: list[Problem]) -> list[Problem]:
    """The practice set one bucket after another in turn (product, shop, voucher, …), each bucket in its
    own order: the generator writes a bucket at a time, and `--limit 3` should not be three product
    problems."""
    queues: dict[str | None, list[Problem]] = {}
    for problem in problems:
        queues.setdefault(problem.bucket, []).append(problem)
    ordered: list[Problem] = []
    while any(queues.values()):
        for queue in queues.values():
            if queue:
                ordered.append(queue.pop(0))
    return ordered


def read_agent(path: Path) -> bytes:
    if path.is_dir():
        raise TryoutError(f"{path} is a directory; give the agent's .py file")
    if not path.is_file():
        raise TryoutError(f"{path}: no such file")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TryoutError(f"{path}: cannot read: {exc.strerror or exc}") from None


def problem_source(settings: TryoutSettings) -> tuple[Path, Path]:
    """(catalogue, problems file) of the tryout: the miner's own, or the practice set (made on first use)."""
    if settings.problems is not None:
        if settings.catalog is None:
            raise TryoutError("--problems needs the --catalog they were made on")
        for path, what in ((settings.catalog, "catalogue directory"), (settings.problems, "problems file")):
            if not path.exists():
                raise TryoutError(f"{path}: no such {what}")
        return settings.catalog, settings.problems
    if settings.catalog is not None:
        raise TryoutError("--catalog needs --problems made on it (without both, the practice set is used)")
    from shoparena.problems.world import generated_world

    world = generated_world(
        settings.practice_dir or settings.out / "practice",
        products=PRACTICE_PRODUCTS,
        seed=PRACTICE_SEED,
        problems=settings.practice_problems,
    )
    return world.catalog, world.problems


def source_label(settings: TryoutSettings, problems_file: Path, n: int, total: int) -> str:
    """Where the tryout's problems came from, for run.json and its report: the run gets them as a list
    (reordered, cut to --limit), which would otherwise read as `<in-memory>`."""
    where = str(problems_file.resolve())
    if settings.problems is None:
        return f"the practice set: {n} of its {total} generated problems, a bucket at a time ({where})"
    return where if n == total else f"{where} (the first {n})"


def run_key(settings: TryoutSettings, problems: list) -> str:
    """What a run's results depend on besides the code: a different key is a different run (the eval
    runner refuses to resume a run under another configuration)."""
    identity = {
        "problems": [problem.model_dump(mode="json") for problem in problems],
        "evaluation": settings.evaluation.model_dump(mode="json"),
        "judge": settings.judge,
        "sandbox": settings.sandbox,
        "workers": settings.workers,
        "inference_models": settings.inference_models,
    }
    return hashlib.sha256(orjson.dumps(identity, option=orjson.OPT_SORT_KEYS)).hexdigest()[:10]


def admission(path: Path, settings: TryoutSettings) -> TryoutReport:
    """The file's admission, as the arena's submit endpoint runs it (nothing runs the code)."""
    code = read_agent(path)
    return TryoutReport(
        agent=path,
        code_sha256=hashlib.sha256(code).hexdigest(),
        violations=check_submission(code),
        qualify_threshold=settings.qualify_threshold,
        similarity=settings.evaluation.similarity,
    )


def try_agent(
    path: Path,
    settings: TryoutSettings,
    progress: Callable[[], AbstractContextManager[Callable | None]] | None = None,
    say: Callable[[str], None] | None = None,
) -> TryoutReport:
    """Admission, then (when admitted) the problems — the practice set made on first use, before the
    evaluation starts — and the arena's evaluation of the file on them. `progress()` is entered around
    the evaluation and gives the runner's progress callback (a live bar); `say` hears where the
    practice set is."""
    report = admission(path, settings)
    if not report.admitted:
        return report
    if settings.problems is None and settings.catalog is None and say is not None:
        say(f"practice set: {settings.practice_dir or settings.out / 'practice'} (generated on first use)")
    problem_source(settings)
    with (progress or nullcontext)() as callback:
        return evaluate(report, settings, callback)


def evaluate(report: TryoutReport, settings: TryoutSettings, progress=None) -> TryoutReport:
    """`report` (an admitted file's) with the evaluation's outcomes and scores; `progress` gets the eval
    runner's progress after every problem."""
    from shoparena.agents.base import RunnerError
    from shoparena.eval.run_dir import TRAJECTORIES_FILE, read_trajectories
    from shoparena.eval.runner import run_eval
    from shoparena.judge import JudgeSpecError, make_judge
    from shoparena.problems.io import ProblemFileError, read_problems
    from shoparena.problems.records import ProblemRecordError

    code = read_agent(report.agent)
    sha256 = hashlib.sha256(code).hexdigest()
    if sha256 != report.code_sha256:
        raise TryoutError(f"{report.agent} changed after its admission check; try it again")
    catalog, problems_file = problem_source(settings)
    try:
        problems = read_problems(problems_file, strict=True).problems
    except (ProblemFileError, ProblemRecordError) as exc:
        raise TryoutError(f"{problems_file}: {exc}") from None
    total = len(problems)
    if settings.problems is None:
        problems = by_bucket_in_turn(problems)
    if settings.limit is not None:
        problems = problems[: settings.limit]
    if not problems:
        raise TryoutError(f"{problems_file}: no problems to run")
    code_dir = settings.out / sha256[:12]
    run_dir = code_dir / f"run-{run_key(settings, problems)}"
    run_dir.mkdir(parents=True, exist_ok=True)
    agent = code_dir / AGENT_FILE
    if not agent.exists() or agent.read_bytes() != code:
        tmp = run_dir / f".{AGENT_FILE}.tmp"
        tmp.write_bytes(code)
        os.replace(tmp, agent)
    config = evaluation_config(
        agent.resolve(),
        catalog,
        problems,
        run_dir,
        settings.evaluation,
        workers=settings.workers,
        sandbox=settings.sandbox,
        inference_models=settings.inference_models,
        name=f"miner try {sha256[:12]}",
        agent_file=str(report.agent),
        problems_source=source_label(settings, problems_file, len(problems), total),
    )
    try:
        judge = make_judge(settings.judge)
    except (JudgeSpecError, ValueError) as exc:
        raise TryoutError(f"--judge {settings.judge}: {exc}") from None
    try:
        run_eval(config, judge=judge, progress=progress)
    except RunnerError as exc:
        raise TryoutError(f"the evaluation could not run: {exc}") from None
    finally:
        judge.close()
    records = read_trajectories(run_dir / TRAJECTORIES_FILE).records
    outcomes = [problem_outcome(record) for record in records]
    return report.model_copy(
        update={
            "run_dir": run_dir,
            "problems_file": problems_file,
            "outcomes": outcomes,
            "scores": result_scores(outcomes) if outcomes else None,
        }
    )
