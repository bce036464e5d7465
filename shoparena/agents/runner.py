"""The evaluation runner (SPEC §10): any agent over a suite, n samples per problem, in parallel, resumable.

One run directory holds one run: `run.json` (the configuration, so a resume under a different one is
refused), `trajectories.jsonl` (one `TrajectoryRecord` per finished episode, appended and flushed by
the parent only) and `metrics.json`. Re-running over the same directory skips every (problem, sample)
pair already recorded; a last line cut short by an interrupted run is detected and truncated away.

Numbers: each episode is scored as it arrives (live ASR), and the final metrics are computed by the
very function `shoparena score` uses (`score_episodes`) over the recorded recommendations, so the two
always agree. An episode that ended in an agent error (crash, timeout) is scored as a failure whatever
it recommended: its recommendation is kept in the record, but no answer is counted for it.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shoparena import __version__
from shoparena.agents.base import AGENT_KINDS, AgentSpecError
from shoparena.agents.executors import (
    EXECUTORS,
    TIMEOUT_ERROR,
    AgentIdentity,
    EpisodeTask,
    RunnerError,
    WorkerConfig,
    make_executor,
)
from shoparena.harness.protocols import canonical_protocol
from shoparena.harness.tool_specs import PROFILES
from shoparena.problems.io import dumps_problems
from shoparena.problems.models import Problem
from shoparena.records.score import ScoreSummary
from shoparena.records.trajectory import TokenUsage, TrajectoryRecord
from shoparena.records.verdict import JudgeVerdict
from shoparena.scoring.answers import Answer, Episode
from shoparena.scoring.judge_summary import summarize_verdicts
from shoparena.scoring.metrics import suite_pass_at_k
from shoparena.scoring.rules import SCORING_MODES, RuleScorer, ScoringMode
from shoparena.scoring.similarity import (
    TitleSimilarity,
    adopt_suite_embeddings,
    default_cache_path,
    make_similarity,
)
from shoparena.scoring.suite import load_problem_file, score_episodes

TRAJECTORIES_FILE = "trajectories.jsonl"
METRICS_FILE = "metrics.json"
RUN_FILE = "run.json"
METRICS_SCHEMA = "shoparena.eval-metrics/1"
RUN_SCHEMA = "shoparena.eval-run/1"
RESULT_DEFINING = (
    "catalog",
    "problems_sha256",
    "agent_spec",
    "agent_options",
    "profile",
    "protocol",
    "step_cap",
    "mode",
    "similarity",
)
"""What a resumed run must share with the original: anything that changes an episode or its score.
Samples, limit, workers, executor and timeout may change (more samples or problems extend the run)."""
SECRET_MARKERS = ("key", "token", "secret", "password", "authorization")

Judge = Callable[[TrajectoryRecord, Problem], JudgeVerdict]


class RunConfig(BaseModel):
    """`run.json`: how a run was made. Written before the first episode, updated when a run finishes."""

    model_config = ConfigDict(extra="ignore")

    schema_version: str = RUN_SCHEMA
    run_id: str
    name: str
    notes: list[str] = Field(default_factory=list)
    created_at: str
    updated_at: str | None = None
    status: str = "running"
    shoparena_version: str = __version__
    catalog: str
    """The catalogue's fingerprint (n products, source, seed, build time): a moved directory still matches."""
    catalog_dir: str
    problems_source: str
    problems_sha256: str
    n_problems_file: int
    limit: int | None = None
    samples: int
    agent_spec: str
    agent_options: dict[str, Any] = Field(default_factory=dict)
    agent: AgentIdentity | None = None
    profile: str
    protocol: str | None = None
    step_cap: int | None = None
    mode: ScoringMode
    similarity: str
    episode_timeout_s: float | None = None
    workers: int = 1
    executor: str = "process"
    judged: bool = False


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


class RunResult(BaseModel):
    run_dir: Path
    run_id: str
    episodes_run: int
    episodes_resumed: int
    dropped_partial_line: bool
    metrics: dict[str, Any]
    wall_s: float


class TrajectoryLog(BaseModel):
    """What `read_trajectories` found: the good records and what was wrong with the file."""

    records: list[TrajectoryRecord]
    truncated_tail: bool = False
    """The last line was cut short (an interrupted write); repaired when read with `repair=True`."""
    duplicates: int = 0


# -- the trajectory file --------------------------------------------------------------------------


def read_trajectories(path: Path, repair: bool = False) -> TrajectoryLog:
    """Every record of a trajectories file; a bad last line is an interrupted write, any other bad line
    is corruption and stops with its line number (dropping it silently would lose data)."""
    if not path.exists():
        return TrajectoryLog(records=[])
    data = path.read_bytes()
    lines = data.split(b"\n")
    ends_clean = data.endswith(b"\n") or not data
    records: list[TrajectoryRecord] = []
    seen: set[tuple[str, int]] = set()
    duplicates = 0
    good_bytes = 0
    truncated = False
    body = lines[:-1] if ends_clean else lines
    for number, raw in enumerate(body, start=1):
        last = number == len(body)
        if not raw.strip():
            good_bytes += len(raw) + 1
            continue
        try:
            record = TrajectoryRecord.model_validate(orjson.loads(raw))
        except (orjson.JSONDecodeError, ValidationError) as exc:
            if last:
                truncated = True
                break
            reason = str(exc).splitlines()[0]
            raise RunnerError(
                f"{path}:{number}: not a trajectory record ({reason}); only the last line may be cut "
                "short by an interrupted run — move the file aside or fix the line"
            ) from exc
        if not ends_clean and last:
            truncated = True  # parsed, but its newline never made it: rewrite it whole
            break
        good_bytes += len(raw) + 1
        if record.key in seen:
            duplicates += 1
            continue
        seen.add(record.key)
        records.append(record)
    if truncated and repair:
        with path.open("r+b") as handle:
            handle.truncate(good_bytes)
    return TrajectoryLog(records=records, truncated_tail=truncated, duplicates=duplicates)


class TrajectoryWriter:
    """The single appender: one JSON line per record, flushed so a crash loses at most the line in flight."""

    def __init__(self, path: Path):
        self.handle = path.open("ab")

    def write(self, record: TrajectoryRecord) -> None:
        self.write_line(orjson.dumps(record.model_dump(mode="json")) + b"\n")

    def write_line(self, line: bytes) -> None:
        self.handle.write(line)
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()


# -- configuration --------------------------------------------------------------------------------


def redact(options: dict[str, Any]) -> dict[str, Any]:
    """Agent options as recorded: secrets (api keys, tokens) never reach run.json."""
    return {
        key: ("<redacted>" if any(marker in key.lower() for marker in SECRET_MARKERS) else value)
        for key, value in sorted(options.items())
    }


def catalog_fingerprint(catalog_dir: Path) -> str:
    from shoparena.index.catalog_dir import read_meta

    try:
        meta = read_meta(catalog_dir)
    except Exception as exc:
        raise RunnerError(f"cannot read the catalogue at {catalog_dir}: {exc}") from exc
    return f"{meta.n_products} products · {meta.source} · seed {meta.seed} · built {meta.built_at}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def load_run_config(run_dir: Path) -> RunConfig | None:
    path = run_dir / RUN_FILE
    if not path.exists():
        return None
    try:
        return RunConfig.model_validate(orjson.loads(path.read_bytes()))
    except (orjson.JSONDecodeError, ValidationError) as exc:
        raise RunnerError(f"{path} is not a shoparena run file: {str(exc).splitlines()[0]}") from exc


def write_run_config(run_dir: Path, config: RunConfig) -> None:
    path = run_dir / RUN_FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(orjson.dumps(config.model_dump(mode="json"), option=orjson.OPT_INDENT_2))
    tmp.replace(path)


def config_differences(old: RunConfig, new: RunConfig) -> list[str]:
    return [
        f"{field}: {getattr(old, field)!r} before, {getattr(new, field)!r} now"
        for field in RESULT_DEFINING
        if getattr(old, field) != getattr(new, field)
    ]


def _load_problems(problems: Path | str | Sequence[Problem]) -> tuple[list[Problem], str, str]:
    """(problems in file order, where they came from, content hash)."""
    if isinstance(problems, str | Path):
        path = Path(problems)
        if not path.is_file():
            raise RunnerError(f"problems file {path} does not exist")
        loaded = load_problem_file(path)
        return loaded, str(path.resolve()), hashlib.sha256(path.read_bytes()).hexdigest()
    loaded = list(problems)
    digest = hashlib.sha256(dumps_problems(loaded, metadata=True)).hexdigest()
    return loaded, "<in-memory>", digest


def _check_unique(problems: Sequence[Problem]) -> None:
    seen: dict[str, int] = {}
    for index, problem in enumerate(problems):
        pid = problem.problem_id or ""
        if pid in seen:
            raise RunnerError(
                f"problems {seen[pid]} and {index} share problem_id {pid!r}; a run keys episodes by "
                "(problem_id, sample), so ids must be unique — de-duplicate the suite first"
            )
        seen[pid] = index


# -- records and answers --------------------------------------------------------------------------


class EpisodeDigest(BaseModel):
    """What the metrics need of one recorded episode (new ones are never parsed back from JSON)."""

    problem_id: str
    sample: int
    answer: Answer
    success: bool
    error: str | None = None
    judge: JudgeVerdict | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)
    wall_s: float = 0.0

    @property
    def key(self) -> tuple[str, int]:
        return self.problem_id, self.sample

    @classmethod
    def of(cls, record: TrajectoryRecord) -> EpisodeDigest:
        return cls(
            problem_id=record.problem.problem_id,
            sample=record.sample,
            answer=record_answer(record),
            success=bool(record.score.success),
            error=record.outcome.error,
            judge=record.judge,
            usage=record.usage,
            wall_s=record.timings.wall_s,
        )


def make_answer(
    problem_id: str,
    index: int | None,
    sample: int,
    ids: Sequence[str] | None,
    error: str | None,
    steps: int,
    terminated: bool,
    format_ok: bool | None,
) -> Answer:
    """The answer an episode counts as (what `shoparena score` would be given for it).

    An errored episode (crash, timeout) answers nothing: it is a failure whatever it recommended.
    """
    return Answer(
        problem_id=problem_id,
        index=index,
        product_ids=[] if error else list(ids or []),
        sample=sample,
        steps=steps,
        terminated=terminated,
        format_ok=format_ok,
    )


def record_answer(record: TrajectoryRecord) -> Answer:
    outcome = record.outcome
    return make_answer(
        record.problem.problem_id,
        record.problem.index,
        record.sample,
        outcome.recommended_product_ids,
        outcome.error,
        outcome.steps_used,
        outcome.terminated is not None,
        record.score.format_ok,
    )


def score_summary(scorer: RuleScorer, problem: Problem, answer: Answer, answered: bool) -> ScoreSummary:
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
    )
    return score.summary().model_copy(
        update={"format_ok": answer.format_ok, "steps": answer.steps, "terminated": answer.terminated}
    )


def complete_line(body: bytes, score: ScoreSummary, judge: JudgeVerdict | None) -> bytes:
    """The worker's record JSON (`{...}` without score and judge) completed into one JSONL line."""
    verdict = orjson.dumps(judge.model_dump(mode="json")) if judge is not None else b"null"
    return (
        body[:-1]
        + b',"score":'
        + orjson.dumps(score.model_dump(mode="json"))
        + b',"judge":'
        + verdict
        + b"}\n"
    )


# -- metrics --------------------------------------------------------------------------------------


def _metric(value: Any) -> dict:
    return value.model_dump() if hasattr(value, "model_dump") else value


def compute_metrics(
    records: Sequence[EpisodeDigest],
    problems: Sequence[Problem],
    samples: int,
    lookup,
    similarity: TitleSimilarity,
    config: RunConfig,
    n_bootstrap: int = 1000,
    seed: int = 0,
    wall_s: float | None = None,
) -> dict[str, Any]:
    """metrics.json: exactly `shoparena score` over the records' answers, plus counts, pass@k and judge."""
    wanted = {(p.problem_id or "", s) for p in problems for s in range(samples)}
    selected = [r for r in records if r.key in wanted]
    position = {p.problem_id or "": i for i, p in enumerate(problems)}
    episodes = []
    for record in selected:
        answer = record.answer.model_copy(update={"index": position[record.problem_id]})
        episodes.append(Episode(index=answer.index or 0, answer=answer))
    # canonical order, so bootstrap intervals do not depend on which worker finished first
    episodes.sort(key=lambda e: (e.index, e.answer.sample))
    suite = score_episodes(
        problems,
        episodes,
        lookup,
        similarity,
        config.mode,
        pass_k=range(1, samples + 1),
        n_bootstrap=n_bootstrap,
        seed=seed,
    )
    overall = suite.metrics.overall.metrics
    by_bucket: dict[str, list] = {}
    for score in suite.scores:
        by_bucket.setdefault(score.bucket, []).append(score)
    pass_by_bucket = {
        bucket: [
            suite_pass_at_k(scores, k, n_bootstrap=n_bootstrap, seed=seed).model_dump()
            for k in range(1, samples + 1)
        ]
        for bucket, scores in by_bucket.items()
    }
    errors: dict[str, int] = {}
    for record in selected:
        if record.error:
            kind = TIMEOUT_ERROR if record.error == TIMEOUT_ERROR else record.error.split(":")[0]
            errors[kind] = errors.get(kind, 0) + 1
    stored = {r.key: r.success for r in selected}
    rescored = {(s.problem_id, s.sample): s.success for s in suite.scores if s.answered}
    disagreements = sum(1 for key, ok in rescored.items() if key in stored and stored[key] != ok)
    notes = list(suite.notes)
    if disagreements:
        notes.append(f"{disagreements} episode(s) scored differently when written (similarity changed?)")
    outside = len(records) - len(selected)
    if outside:
        notes.append(
            f"{outside} recorded episode(s) lie outside this run's problems/samples and are not counted"
        )
    judging = summarize_verdicts((r.judge for r in selected), overall["asr"].value)
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "model_calls": 0}
    for record in selected:
        usage["prompt_tokens"] += record.usage.prompt_tokens
        usage["completion_tokens"] += record.usage.completion_tokens
        usage["model_calls"] += record.usage.model_calls
    episode_wall = [r.wall_s for r in selected]
    return {
        "schema_version": METRICS_SCHEMA,
        "run_id": config.run_id,
        "name": config.name,
        "notes": config.notes,
        "agent": config.agent.model_dump() if config.agent else {"spec": config.agent_spec},
        "config": config.model_dump(mode="json"),
        "mode": suite.mode,
        "similarity": suite.similarity,
        "title_threshold": suite.title_threshold,
        "pipeline_version": suite.pipeline_version,
        "counts": {
            "problems": len(problems),
            "samples": samples,
            "expected_episodes": len(wanted),
            "episodes": len(selected),
            "missing_episodes": len(wanted) - len(selected),
            "scored": len(suite.scores),
            "errors": sum(errors.values()),
            "errors_by_kind": errors,
            "buckets": {bucket: len(scores) for bucket, scores in by_bucket.items()},
        },
        "headline": {"asr": _metric(overall["asr"]), "car": _metric(overall["car"])},
        "metrics": suite.metrics.model_dump(),
        "pass_at_k": [p.model_dump() for p in suite.pass_at_k],
        "pass_at_k_by_bucket": pass_by_bucket,
        "judge": judging.model_dump() if judging.judged else None,
        "usage": usage,
        "timing": {
            "run_wall_s": wall_s,
            "mean_episode_s": sum(episode_wall) / len(episode_wall) if episode_wall else None,
            "max_episode_s": max(episode_wall) if episode_wall else None,
        },
        "scoring_notes": notes,
    }


def write_metrics(run_dir: Path, metrics: dict[str, Any]) -> Path:
    path = run_dir / METRICS_FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(orjson.dumps(metrics, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    tmp.replace(path)
    return path


# -- the run --------------------------------------------------------------------------------------


def _tasks(problems: Sequence[Problem], samples: int, done: set[tuple[str, int]]) -> Iterator[EpisodeTask]:
    """Sample-major order: every problem's first sample before any second, so pass@1 fills in first."""
    for sample in range(samples):
        for index, problem in enumerate(problems):
            if (problem.problem_id or "", sample) not in done:
                yield EpisodeTask(index=index, sample=sample, problem=problem)


def _similarity(similarity: str | TitleSimilarity) -> TitleSimilarity:
    if isinstance(similarity, str):
        try:
            return make_similarity(similarity, default_cache_path() if similarity == "minilm" else None)
        except ValueError as exc:
            raise RunnerError(str(exc)) from exc
    return similarity


def run_eval(
    catalog_dir: Path | str,
    problems: Path | str | Sequence[Problem],
    agent_spec: str,
    agent_options: dict[str, Any] | None = None,
    out_dir: Path | str = "run",
    *,
    samples: int = 1,
    workers: int = 1,
    executor: str = "process",
    profile: str = "oro7",
    protocol: str | None = None,
    step_cap: int | None = None,
    mode: ScoringMode = "upstream",
    similarity: str | TitleSimilarity = "minilm",
    episode_timeout_s: float | None = None,
    judge: Judge | None = None,
    progress: Callable[[RunProgress], None] | None = None,
    limit: int | None = None,
    name: str | None = None,
    notes: Sequence[str] = (),
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> RunResult:
    """Run `agent_spec` over the first `limit` problems × `samples` into `out_dir` (resuming it if it
    holds an earlier run of the same configuration); write trajectories.jsonl, metrics.json, run.json.

    `protocol` (when given) is passed to the agent as its `protocol` option; None keeps the agent's
    own default. `judge(record, problem)` (optional) grades each new record before it is written.
    """
    from shoparena.index.catalog_dir import open_catalog

    started = time.perf_counter()
    if samples < 1:
        raise RunnerError(f"samples must be at least 1, got {samples}")
    if workers < 1:
        raise RunnerError(f"workers must be at least 1, got {workers}")
    if mode not in SCORING_MODES:
        raise RunnerError(f"mode must be one of {', '.join(SCORING_MODES)}, not {mode!r}")
    if executor not in EXECUTORS:
        raise RunnerError(f"executor must be one of {', '.join(EXECUTORS)}, not {executor!r}")
    if profile not in PROFILES:
        raise RunnerError(f"unknown profile {profile!r}; use one of {', '.join(PROFILES)}")
    if limit is not None and limit < 1:
        raise RunnerError(f"limit must be at least 1, got {limit}")
    _kind, sep, target = agent_spec.partition(":")
    if not sep or not target:
        raise RunnerError(str(AgentSpecError(f"agent spec {agent_spec!r}: expected KIND:TARGET")))
    if protocol is not None:
        try:
            protocol = canonical_protocol(protocol)
        except ValueError as exc:
            raise RunnerError(str(exc)) from None
        if _kind == "file":
            raise RunnerError(
                "--protocol does not apply to file: agents: a miner calls the tools over HTTP, "
                "without a model protocol"
            )
    catalog_dir = Path(catalog_dir)
    all_problems, source, digest = _load_problems(problems)
    selected = all_problems[:limit] if limit else all_problems
    if not selected:
        raise RunnerError(f"no problems to run in {source}")
    _check_unique(selected)
    title_similarity = _similarity(similarity)
    options = dict(agent_options or {})
    if protocol is not None:
        options.setdefault("protocol", protocol)

    run_dir = Path(out_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    trajectories = run_dir / TRAJECTORIES_FILE
    previous = load_run_config(run_dir)
    if previous is None and trajectories.exists() and trajectories.stat().st_size:
        raise RunnerError(f"{run_dir} holds {TRAJECTORIES_FILE} but no {RUN_FILE}: not a run to resume")
    config = RunConfig(
        run_id=previous.run_id if previous else uuid.uuid4().hex[:12],
        name=name or (previous.name if previous else agent_spec),
        notes=list(notes) or (previous.notes if previous else []),
        created_at=previous.created_at if previous else _now(),
        catalog=catalog_fingerprint(catalog_dir),
        catalog_dir=str(catalog_dir.resolve()),
        problems_source=source,
        problems_sha256=digest,
        n_problems_file=len(all_problems),
        limit=limit,
        samples=samples,
        agent_spec=agent_spec,
        agent_options=redact(options),
        profile=profile,
        protocol=protocol,
        step_cap=step_cap,
        mode=mode,
        similarity=getattr(title_similarity, "name", type(title_similarity).__name__),
        episode_timeout_s=episode_timeout_s,
        workers=workers,
        executor=executor,
        judged=judge is not None or (previous.judged if previous else False),
    )
    if previous is not None:
        differences = config_differences(previous, config)
        if differences:
            raise RunnerError(
                f"{run_dir} holds a run with a different configuration; use a new --out, or run it "
                "again as it was. Differences: " + "; ".join(differences)
            )
    log = read_trajectories(trajectories, repair=True)
    done = {record.key for record in log.records}
    planned = {(p.problem_id or "", s) for p in selected for s in range(samples)}
    state = RunProgress(total=len(planned), resumed=len(done & planned), done=len(done & planned))
    for record in log.records:
        if record.key in planned:
            state.successes += bool(record.score.success)
            state.errors += bool(record.outcome.error)
            state.timeouts += record.outcome.error == TIMEOUT_ERROR
    if progress is not None:
        progress(state)

    backend = open_catalog(catalog_dir)
    records = [EpisodeDigest.of(record) for record in log.records]
    ran = 0
    try:
        adopt_suite_embeddings(selected, title_similarity)
        scorer = RuleScorer(backend, title_similarity, mode)
        tasks = list(_tasks(selected, samples, done))
        if tasks:
            worker_config = WorkerConfig(
                catalog_dir=str(catalog_dir),
                agent_spec=agent_spec,
                agent_options=options,
                profile=profile,
                protocol=protocol,
                step_cap=step_cap,
                episode_timeout_s=episode_timeout_s,
                agent_kinds=dict(AGENT_KINDS),
                run_id=config.run_id,
                scoring_mode=mode,
            )
            runner = make_executor(executor, worker_config, min(workers, len(tasks)))
            writer = TrajectoryWriter(trajectories)
            try:
                config.agent = runner.start()
                config.status = "running"
                config.updated_at = _now()
                write_run_config(run_dir, config)
                for output in runner.run(tasks):
                    problem = selected[output.index]
                    answer = make_answer(
                        output.problem_id,
                        output.index,
                        output.sample,
                        output.recommended_product_ids,
                        output.error,
                        output.steps_used,
                        output.terminated is not None,
                        output.format_ok,
                    )
                    score = score_summary(scorer, problem, answer, answered=not output.error)
                    verdict = None
                    if judge is not None:
                        record = TrajectoryRecord.model_validate_json(complete_line(output.body, score, None))
                        verdict = _judge(judge, record, problem)
                    writer.write_line(complete_line(output.body, score, verdict))
                    records.append(
                        EpisodeDigest(
                            problem_id=output.problem_id,
                            sample=output.sample,
                            answer=answer,
                            success=bool(score.success),
                            error=output.error,
                            judge=verdict,
                            usage=output.usage,
                            wall_s=output.wall_s,
                        )
                    )
                    ran += 1
                    state.done += 1
                    state.successes += bool(score.success)
                    state.errors += bool(output.error)
                    state.timeouts += output.error == TIMEOUT_ERROR
                    if progress is not None:
                        progress(state)
            except BaseException:
                config.status = "interrupted"
                config.updated_at = _now()
                write_run_config(run_dir, config)
                raise
            finally:
                writer.close()
                runner.close()
        elif previous is None:
            write_run_config(run_dir, config)
        if config.agent is None and previous is not None:
            config.agent = previous.agent
        wall = time.perf_counter() - started
        config.status = "complete"
        config.updated_at = _now()
        write_run_config(run_dir, config)
        metrics = compute_metrics(
            records, selected, samples, backend, title_similarity, config, n_bootstrap, seed, wall
        )
        metrics["timing"]["episodes_run"] = ran
        metrics["timing"]["episodes_per_s"] = ran / wall if wall > 0 and ran else None
        write_metrics(run_dir, metrics)
    finally:
        backend.close()
    return RunResult(
        run_dir=run_dir,
        run_id=config.run_id,
        episodes_run=ran,
        episodes_resumed=state.resumed,
        dropped_partial_line=log.truncated_tail,
        metrics=metrics,
        wall_s=time.perf_counter() - started,
    )


def _judge(judge: Judge, record: TrajectoryRecord, problem: Problem) -> JudgeVerdict | None:
    """A judge failure leaves the record unjudged (and says so in the log) rather than losing the episode."""
    import logging

    try:
        return judge(record, problem)
    except Exception as exc:
        logging.getLogger(__name__).warning("judge failed on %s: %s", record.problem.problem_id, exc)
        return None
