"""The evaluation runner (SPEC §10): any agent over a suite, n samples per problem, in parallel, resumable.

`run_eval(config)` takes three named steps. `open_run` locks the run directory, loads the problems,
refuses to resume a run made under a different configuration, and reads what the directory already
holds (a last line cut short by an interrupted run is truncated away). `run_tasks` builds the agent —
only then is the directory claimed (run.json written), so an agent that cannot be built leaves no
trace, and a directory this eval created is removed again — hands every missing (problem, sample)
pair to the executor and scores, judges and appends each episode as it arrives (live ASR).
An episode that ended in an error is not judged (its record's `judge` is null): a crash's or a timeout's
trace is no reasoning to grade, and its row says why it failed instead. `finish_run` writes the final metrics, computed by the very function `shoparena score` uses, so the
two always agree. An episode that ended in an agent error (crash, timeout) is scored as a failure
whatever it recommended: its recommendation is kept in the record, but no answer is counted for it.
With `retry_errors`, a resumed run re-runs the episodes whose record holds a model-endpoint error or a
timeout (`episodes.error_kind`); the new record is appended and, as the newest of its (problem,
sample), is the one that counts; the errored one stays in the file.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from shoparena.agents.base import AGENT_KINDS, RunnerError
from shoparena.eval.config import EvalConfig, RunConfig, WorkerConfig, redact, utc_now
from shoparena.eval.episodes import EpisodeDigest, EpisodeTask
from shoparena.eval.executors import TIMEOUT_ERROR, make_executor
from shoparena.eval.metrics import compute_metrics
from shoparena.eval.run_dir import (
    RUN_FILE,
    TRAJECTORIES_FILE,
    RunLock,
    TrajectoryLog,
    TrajectoryWriter,
    complete_line,
    load_run_config,
    read_trajectories,
    write_metrics,
    write_run_config,
)
from shoparena.index.backend import CatalogBackend
from shoparena.problems.io import dumps_problems
from shoparena.problems.models import Problem
from shoparena.records.score import ScoreSummary
from shoparena.records.trajectory import TrajectoryRecord
from shoparena.records.verdict import JudgeVerdict
from shoparena.scoring.answers import Answer
from shoparena.scoring.rules import RuleScorer
from shoparena.scoring.similarity import (
    TitleSimilarity,
    adopt_suite_embeddings,
    default_cache_path,
    make_similarity,
)
from shoparena.scoring.suite import gold_coverage, load_problem_file

Judge = Callable[[TrajectoryRecord, Problem], JudgeVerdict]
"""`judge(record, problem)`: the runner takes the judge as a callable (agents sit below the judge)."""


class RunProgress(BaseModel):
    """A snapshot for progress bars: `done` includes episodes found from an earlier run."""

    total: int
    done: int = 0
    resumed: int = 0
    successes: int = 0
    errors: int = 0
    timeouts: int = 0

    @property
    def asr(self) -> float | None:
        return self.successes / self.done if self.done else None

    def count(self, digest: EpisodeDigest) -> None:
        self.successes += digest.success
        self.errors += bool(digest.error)
        self.timeouts += digest.error_kind == TIMEOUT_ERROR


Progress = Callable[[RunProgress], None]


class RunResult(BaseModel):
    run_dir: Path
    run_id: str
    episodes_run: int
    episodes_resumed: int
    episodes_retried: int = 0
    """Of `episodes_run`, how many re-ran an errored episode (`retry_errors`)."""
    dropped_partial_line: bool
    warnings: list[str] = Field(default_factory=list)
    """What the user must hear about the run's inputs (problems whose gold is not in the catalogue)."""
    metrics: dict = Field(default_factory=dict)
    wall_s: float


# -- opening the run ------------------------------------------------------------------------------


@dataclass
class LoadedProblems:
    problems: list[Problem]
    """Every problem of the source, in its order."""
    source: str
    sha256: str


def load_suite(problems: Path | Sequence[Problem], source: str | None = None) -> LoadedProblems:
    """A run's problems with where they came from and their content hash (what a resume must match);
    `source` names a list's origin (a file names itself)."""
    if isinstance(problems, Path):
        loaded = load_problem_file(problems)
        return LoadedProblems(
            loaded, str(problems.resolve()), hashlib.sha256(problems.read_bytes()).hexdigest()
        )
    loaded = list(problems)
    return LoadedProblems(
        loaded, source or "<in-memory>", hashlib.sha256(dumps_problems(loaded, metadata=True)).hexdigest()
    )


def check_unique(problems: Sequence[Problem]) -> None:
    seen: dict[str, int] = {}
    for index, problem in enumerate(problems):
        pid = problem.problem_id or ""
        if pid in seen:
            raise RunnerError(
                f"problems {seen[pid]} and {index} share problem_id {pid!r}; a run keys episodes by "
                "(problem_id, sample), so ids must be unique — de-duplicate the suite first"
            )
        seen[pid] = index


def catalog_fingerprint(catalog_dir: Path) -> str:
    from shoparena.index.catalog_dir import read_meta

    try:
        meta = read_meta(catalog_dir)
    except Exception as exc:
        raise RunnerError(f"cannot read the catalogue at {catalog_dir}: {exc}") from exc
    return f"{meta.n_products} products · {meta.source} · seed {meta.seed} · built {meta.built_at}"


def _title_similarity(name: str) -> TitleSimilarity:
    try:
        return make_similarity(name, default_cache_path() if name == "minilm" else None)
    except ValueError as exc:
        raise RunnerError(str(exc)) from exc


@dataclass
class OpenRun:
    """A run directory opened for one eval: locked, its configuration checked, its records read."""

    config: EvalConfig
    run_dir: Path
    lock: RunLock
    problems: list[Problem]
    """The problems this eval runs (the first `limit` of the source)."""
    record: RunConfig
    """What run.json says (and will say): updated as the run goes."""
    previous: RunConfig | None
    log: TrajectoryLog
    similarity: TitleSimilarity
    progress: RunProgress
    digests: dict[tuple[str, int], EpisodeDigest] = field(default_factory=dict)
    """The newest recorded episode of each (problem, sample): what counts."""
    retry: set[tuple[str, int]] = field(default_factory=set)
    """Recorded episodes to run again (`retry_errors`: their record holds a retryable error)."""
    attempts: dict[tuple[str, int], int] = field(default_factory=dict)
    """How many records each (problem, sample) has in trajectories.jsonl."""
    created: list[Path] = field(default_factory=list)
    """The directories this eval made for `run_dir` (itself first): removed again if it never claims it."""
    backend: CatalogBackend | None = None
    scorer: RuleScorer | None = None
    warnings: list[str] = field(default_factory=list)

    def planned(self) -> Iterator[EpisodeTask]:
        """The tasks still to run, sample-major: every problem's first sample before any second, so
        pass@1 fills in first."""
        done = {key for key in self.digests if key not in self.retry}
        for sample in range(self.config.samples):
            for index, problem in enumerate(self.problems):
                key = (problem.problem_id or "", sample)
                if key not in done:
                    attempt = self.attempts.get(key, 0)
                    yield EpisodeTask(index=index, sample=sample, problem=problem, attempt=attempt)

    def save(self, status: str) -> None:
        self.record.status = status
        self.record.updated_at = utc_now()
        write_run_config(self.run_dir, self.record)

    def close(self) -> None:
        try:
            if self.backend is not None:
                self.backend.close()
        finally:
            release_run_dir(self.run_dir, self.lock, self.created)


def release_run_dir(run_dir: Path, lock: RunLock, created: list[Path]) -> None:
    """Release the lock (removing run.lock, so a finished run leaves none); a directory this eval created
    but never claimed (no run.json: the agent was never built, or the problems never loaded) is removed
    again, so a failed start leaves nothing."""
    lock.release()
    if not created or (run_dir / RUN_FILE).exists():
        return
    for path in created:  # the run directory first, then the parents made for it; only while empty
        with suppress(OSError):
            path.rmdir()


def _missing_dirs(path: Path) -> list[Path]:
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing


def open_run(config: EvalConfig, *, judged: bool, similarity: TitleSimilarity | None = None) -> OpenRun:
    """Lock `config.out`, load and check everything the run needs; nothing runs yet, nothing is written."""
    run_dir = config.out
    created = _missing_dirs(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = RunLock(run_dir).acquire()
    try:
        return _open_locked(config, run_dir, lock, judged, similarity, created)
    except BaseException:
        release_run_dir(run_dir, lock, created)
        raise


def _open_locked(
    config: EvalConfig,
    run_dir: Path,
    lock: RunLock,
    judged: bool,
    similarity: TitleSimilarity | None,
    created: list[Path],
) -> OpenRun:
    from shoparena.index.catalog_dir import open_catalog

    suite = load_suite(config.problems, config.problems_source)
    selected = suite.problems[: config.limit] if config.limit else suite.problems
    if not selected:
        raise RunnerError(f"no problems to run in {suite.source}")
    check_unique(selected)
    title_similarity = similarity if similarity is not None else _title_similarity(config.similarity)

    trajectories = run_dir / TRAJECTORIES_FILE
    previous = load_run_config(run_dir)
    recorded = trajectories.exists() and trajectories.stat().st_size > 0
    if previous is None and recorded:
        raise RunnerError(f"{run_dir} holds {TRAJECTORIES_FILE} but no run.json: not a run to resume")
    if previous is not None and previous.agent is None and not recorded:
        previous = None  # left by an earlier version's failed start (its agent never built): no run
    record = RunConfig(
        run_id=previous.run_id if previous else uuid.uuid4().hex[:12],
        name=config.name or (previous.name if previous else config.agent),
        notes=list(config.notes) or (previous.notes if previous else []),
        created_at=previous.created_at if previous else utc_now(),
        catalog=catalog_fingerprint(config.catalog),
        catalog_dir=str(config.catalog.resolve()),
        problems_source=suite.source,
        problems_sha256=suite.sha256,
        n_problems_file=len(suite.problems),
        limit=config.limit,
        samples=config.samples,
        agent_spec=config.agent,
        agent_options=redact(config.agent_options()),
        agent_file=config.agent_file or (previous.agent_file if previous else None),
        profile=config.profile,
        protocol=config.protocol,
        step_cap=config.step_cap,
        mode=config.mode,
        similarity=getattr(title_similarity, "name", type(title_similarity).__name__),
        episode_timeout_s=config.timeout,
        workers=config.workers,
        executor=config.executor,
        judged=judged or (previous.judged if previous else False),
    )
    if previous is not None:
        differences = previous.differences(record)
        if differences:
            raise RunnerError(
                f"{run_dir} holds a run with a different configuration; use a new --out, or run it "
                "again as it was. Differences: " + "; ".join(differences)
            )
    log = read_trajectories(trajectories, repair=True)
    planned = {(p.problem_id or "", s) for p in selected for s in range(config.samples)}
    digests = {record.key: EpisodeDigest.of(record) for record in log.records}
    retry: set[tuple[str, int]] = set()
    if config.retry_errors:
        retry = {key for key, digest in digests.items() if key in planned and digest.retryable}
    progress = RunProgress(total=len(planned))
    for key, digest in digests.items():
        if key in planned and key not in retry:
            progress.resumed += 1
            progress.count(digest)
    progress.done = progress.resumed
    run = OpenRun(
        config, run_dir, lock, selected, record, previous, log, title_similarity, progress, digests,
        retry=retry, attempts=dict(log.attempts), created=created,
    )  # fmt: skip
    run.backend = open_catalog(config.catalog)
    try:
        # before any episode runs: problems made from another catalogue would all score 0
        coverage = gold_coverage(selected, run.backend).require(f"catalogue {config.catalog}")
        run.warnings = [coverage] if coverage else []
        adopt_suite_embeddings(selected, title_similarity)
        run.scorer = RuleScorer(run.backend, title_similarity, config.mode)
    except BaseException:
        run.backend.close()
        raise
    return run


# -- running the tasks ----------------------------------------------------------------------------


def score_summary(
    scorer: RuleScorer, problem: Problem, answer: Answer, answered: bool, grounded: bool | None = None
) -> ScoreSummary:
    """`ProblemScore.summary()` plus how the episode ended: the record's `score` field."""
    score = scorer.score(
        problem,
        answer.product_ids,
        index=answer.index,
        sample=answer.sample,
        steps=answer.steps,
        terminated=answer.terminated,
        format_ok=answer.format_ok,
        answered=answered,
        grounded=grounded,
    )
    return score.summary().model_copy(
        update={"format_ok": answer.format_ok, "steps": answer.steps, "terminated": answer.terminated}
    )


def run_tasks(run: OpenRun, judge: Judge | None = None, progress: Progress | None = None) -> int:
    """Run every missing episode (and those to retry); returns how many ran. The run directory is
    claimed only once the agent is built: run.json says `running` from then on while episodes run, and
    `interrupted` if anything (Ctrl-C included) stops them; an agent that cannot be built writes nothing."""
    tasks = list(run.planned())
    if not tasks:
        if run.previous is None:
            write_run_config(run.run_dir, run.record)
        return 0
    assert run.scorer is not None
    config = run.config
    worker = WorkerConfig.of(config, run.record.run_id, dict(AGENT_KINDS))
    executor = make_executor(config.executor, worker, min(config.workers, len(tasks)))
    try:
        run.record.agent = executor.start()
    except BaseException:
        executor.close()
        raise
    writer: TrajectoryWriter | None = None
    ran = 0
    try:
        run.save("running")
        writer = TrajectoryWriter(run.run_dir / TRAJECTORIES_FILE)
        for output in executor.run(tasks):
            digest = output.digest
            problem = run.problems[digest.answer.index or 0]
            score = score_summary(
                run.scorer, problem, digest.answer, answered=not digest.error, grounded=digest.grounded
            )
            verdict = None
            if judge is not None and not digest.error:  # a crash or timeout has no reasoning to grade
                record = TrajectoryRecord.model_validate_json(complete_line(output.body, score, None))
                verdict = _judge(judge, record, problem)
            writer.write_line(complete_line(output.body, score, verdict))
            digest = digest.model_copy(update={"success": bool(score.success), "judge": verdict})
            run.digests[digest.key] = digest  # the newest record of its (problem, sample) counts
            run.attempts[digest.key] = run.attempts.get(digest.key, 0) + 1
            ran += 1
            run.progress.done += 1
            run.progress.count(digest)
            if progress is not None:
                progress(run.progress)
    except BaseException:
        run.save("interrupted")
        raise
    finally:
        if writer is not None:
            writer.close()
        executor.close()
    return ran


def _judge(judge: Judge, record: TrajectoryRecord, problem: Problem) -> JudgeVerdict | None:
    """A judge failure leaves the record unjudged (and says so in the log) rather than losing the episode."""
    try:
        return judge(record, problem)
    except Exception as exc:
        logging.getLogger(__name__).warning("judge failed on %s: %s", record.problem.problem_id, exc)
        return None


# -- finishing ------------------------------------------------------------------------------------


def finish_run(run: OpenRun, ran: int, started: float) -> RunResult:
    """run.json says `complete`; metrics.json is written from every recorded episode of this run."""
    assert run.backend is not None
    if run.record.agent is None and run.previous is not None:
        run.record.agent = run.previous.agent
    wall = time.perf_counter() - started
    run.save("complete")
    config = run.config
    metrics = compute_metrics(
        list(run.digests.values()),
        run.problems,
        config.samples,
        run.backend,
        run.similarity,
        run.record,
        config.bootstrap,
        config.seed,
        wall,
        attempts=run.attempts,
    )
    metrics["timing"]["episodes_run"] = ran
    metrics["timing"]["episodes_per_s"] = ran / wall if wall > 0 and ran else None
    write_metrics(run.run_dir, metrics)
    return RunResult(
        run_dir=run.run_dir,
        run_id=run.record.run_id,
        episodes_run=ran,
        episodes_resumed=run.progress.resumed,
        episodes_retried=len(run.retry),
        dropped_partial_line=run.log.truncated_tail,
        warnings=run.warnings,
        metrics=metrics,
        wall_s=time.perf_counter() - started,
    )


def run_eval(
    config: EvalConfig,
    *,
    judge: Judge | None = None,
    progress: Progress | None = None,
    similarity: TitleSimilarity | None = None,
) -> RunResult:
    """Run `config.agent` over the first `config.limit` problems × `config.samples` into `config.out`
    (resuming it if it holds an earlier run of the same configuration); write trajectories.jsonl,
    metrics.json and run.json.

    `judge(record, problem)` (optional) grades each new record before it is written; `progress` gets a
    `RunProgress` after every episode (and once at the start). `similarity` is an already-built title
    similarity to share across runs (a race's entrants, say) instead of building `config.similarity`.
    Raises `RunnerError` when the run cannot start or go on; the configuration itself was checked
    when `config` was built.
    """
    started = time.perf_counter()
    run = open_run(config, judged=judge is not None, similarity=similarity)
    try:
        if progress is not None:
            progress(run.progress)
        ran = run_tasks(run, judge, progress)
        return finish_run(run, ran, started)
    finally:
        run.close()
