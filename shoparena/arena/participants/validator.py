"""A validator (SPEC §6): claim a job, keep its lease alive, run the submission on every problem of the
job with the eval runner (production-strict scoring, the file agent in its sandbox), judge every
episode, and post the outcomes with the full trajectory records.

Nothing fetched is trusted: the code must hash to the job's sha256 and the local catalogue must be the
arena's (its fingerprint), or the job is given back with the reason. The code is written to a private
temporary directory (mode 0700) that is removed after the job. The problems, rewards included, stay in
this process: the miner's process only sees the reward-stripped view the file agent hands it.

A heartbeat thread keeps the lease alive while the job runs. When the arena says the lease lapsed, the
run stops at the next episode (the job is someone else's now) and nothing is posted. A result post is
retried with the same body after a transport error: results are idempotent per (job, validator).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from shoparena.arena.canonical import canonical_record, problem_outcome
from shoparena.arena.errors import ArenaError
from shoparena.arena.models import ArenaInfo, EvaluationSettings, JobOffer, ResultPost, ResultView
from shoparena.arena.participants.client import ArenaClient, ArenaRefused
from shoparena.records.options import CliFlag, SandboxBackend
from shoparena.records.trajectory import SCORING_PIPELINE_VERSION, TrajectoryRecord

if TYPE_CHECKING:
    from shoparena.eval.config import EvalConfig
    from shoparena.problems.models import Problem

log = logging.getLogger("shoparena.validator")
AGENT_FILE = "agent.py"
LOST_STATUSES = (403, 404, 409)
"""Answers to a heartbeat that mean the lease is gone for good (not ours, unknown, lapsed, ended)."""
LOST_ERRORS = ("lease_lapsed", "lease_ended")
INFERENCE_MODELS_HELP = (
    "The inference proxy's allowlist for miner code: NAME=UPSTREAM,… with UPSTREAM offline:NAME "
    "or http://HOST:PORT/v1#MODEL (e.g. a checkpoint served by `shoparena model serve`) "
    "\\[default: the offline reference models]."
)
"""`validator run` and `miner try`: the models miner code may ask for, as `agents.miner.file_agent.parse_models`
reads them."""


class ValidatorError(ArenaError):
    """This validator cannot evaluate the arena's jobs at all (another catalogue, another scoring
    pipeline): a loop stops rather than claim and give back every job."""


class JobFailed(ArenaError):
    """One job could not be evaluated (code that does not match its hash, a run that cannot start, a
    result the arena refused); the job was given back and a loop goes on with the next."""


class LeaseLost(Exception):
    """The arena took the job back (the lease lapsed): stop working on it."""


def evaluation_config(
    agent: Path,
    catalog: Path,
    problems: list[Problem],
    out: Path,
    evaluation: EvaluationSettings,
    *,
    workers: int = 1,
    sandbox: SandboxBackend = "bwrap",
    inference_models: dict[str, str] | None = None,
    name: str,
    agent_file: str | None = None,
    problems_source: str | None = None,
) -> EvalConfig:
    """The eval run of a miner file as the arena runs it: its evaluation settings (production-strict),
    the file agent in the sandbox, the inference proxy's allowlist (None: the offline reference models).
    Validators run jobs with it, and `miner try` runs a miner's file with it before submission (its copy
    of the file, `agent_file` the name the miner gave it)."""
    from shoparena.eval.config import EvalConfig

    return EvalConfig(
        catalog=catalog,
        problems=problems,
        agent=f"file:{agent}",
        out=out,
        workers=workers,
        executor="process",
        profile=evaluation.profile,
        step_cap=evaluation.step_cap,
        mode=evaluation.mode,
        similarity=evaluation.similarity,
        timeout=evaluation.timeout_s,
        bootstrap=0,
        name=name,
        agent_file=agent_file,
        problems_source=problems_source,
        sandbox=sandbox,
        options={"inference_models": dict(inference_models)} if inference_models else {},
    )


class ValidatorSettings(BaseModel):
    """How a validator works; each field but `cli_exclude` is an option of `validator run`, its
    description the option's help."""

    model_config = ConfigDict(extra="forbid")
    cli_exclude: ClassVar[frozenset[str]] = frozenset({"judge_options", "post_attempts", "work_dir"})

    catalog: Path | None = Field(
        None, description="The arena's catalogue on this machine \\[default: the path the arena names]."
    )
    """[default: the path the arena names, if it exists here]."""
    workers: Annotated[int, CliFlag(min=1)] = Field(1, ge=1, description="Problems of a job run in parallel.")
    judge: str = Field("offline", description="offline (rules, no model) or openai:MODEL (the LLM judge).")
    judge_options: dict[str, Any] = Field(default_factory=dict)
    sandbox: Annotated[SandboxBackend, CliFlag(type=str)] = Field(
        "bwrap", description="Where miner code runs: bwrap, container, or none (unconfined)."
    )
    """Bubblewrap by default; none only loudly."""
    poll_s: Annotated[float, CliFlag(min=0.1)] = Field(
        10.0, gt=0, description="Wait between claims while no job is waiting (s)."
    )
    post_attempts: int = Field(default=5, ge=1)
    work_dir: Path | None = None
    """Where private job directories are made [default: the system's temporary directory]."""
    inference_models: Annotated[dict[str, str] | None, CliFlag(type=str, show_default=False)] = Field(
        None, description=INFERENCE_MODELS_HELP
    )
    """Public name → upstream spec (`offline:NAME` or `http://HOST:PORT/v1#MODEL`, see
    `inference.upstreams`). This is how a validator serves a model it hosts, e.g. a distilled
    checkpoint."""


class JobReport(BaseModel):
    job_id: str
    submission_id: str
    lease_id: str
    status: Literal["posted", "lease_lost"]
    created: bool | None = None
    """posted: False when the arena had this result already (a retried post)."""
    result: ResultView | None = None
    detail: str | None = None
    problems: int
    wall_s: float


class LeaseKeeper:
    """Heartbeats a lease from a thread of its own (with its own connection) until stopped; `lost`
    says why the lease is gone once the arena refuses a heartbeat or none got through in time."""

    def __init__(self, client: ArenaClient, offer: JobOffer):
        self.lease_id = offer.lease_id
        self.lease_s = float(offer.lease_s)
        self.interval = max(0.05, offer.heartbeat_s)
        self.lost: str | None = None
        self.beats = 0
        self._client = ArenaClient(
            client.url, client.signer, timeout=max(5.0, self.interval), clock=client.clock
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lease-{offer.lease_id[:8]}", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._client.close()

    def _run(self) -> None:
        deadline = time.monotonic() + self.lease_s
        while not self._stop.wait(self.interval):
            try:
                self._client.heartbeat(self.lease_id)
                self.beats += 1
                deadline = time.monotonic() + self.lease_s
            except ArenaRefused as exc:
                if exc.status in LOST_STATUSES:
                    self.lost = f"{exc.error}: {exc.message}"
                    return
                log.warning("heartbeat for lease %s refused (%s): %s", self.lease_id, exc.status, exc.message)
            except ArenaError as exc:
                log.warning("heartbeat for lease %s failed: %s", self.lease_id, exc)
            if time.monotonic() > deadline:
                self.lost = f"no heartbeat reached the arena within the lease's {self.lease_s:g} s"
                return


class Validator:
    """Claims and evaluates jobs of one arena with one key. Close it (or use `with`) when done."""

    def __init__(self, client: ArenaClient, settings: ValidatorSettings | None = None):
        self.client = client
        self.settings = settings or ValidatorSettings()
        self.hotkey = client.signer.ss58_address
        self._judge = None
        self._catalogs: dict[tuple[str, str], Path] = {}

    def close(self) -> None:
        if self._judge is not None:
            self._judge.close()
            self._judge = None

    def __enter__(self) -> Validator:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- what this validator must have -------------------------------------------------------------

    def judge(self):
        if self._judge is None:
            from shoparena.judge import JudgeSpecError, make_judge

            try:
                self._judge = make_judge(self.settings.judge, **self.settings.judge_options)
            except (JudgeSpecError, ValueError) as exc:
                raise ValidatorError(f"--judge {self.settings.judge}: {exc}") from None
        return self._judge

    def catalog(self, fingerprint: str, arena_dir: str) -> Path:
        """The local catalogue directory, checked to be the arena's."""
        path = self.settings.catalog or Path(arena_dir)
        key = (fingerprint, str(path))
        if key in self._catalogs:
            return self._catalogs[key]
        given = "--catalog" if self.settings.catalog else "the arena's catalogue path"
        if not path.is_dir():
            raise ValidatorError(
                f"{given} {path} is not a directory here; this validator needs the arena's catalogue "
                f"({fingerprint}): copy its directory and pass it with --catalog DIR"
            )
        from shoparena.agents.base import RunnerError
        from shoparena.eval.runner import catalog_fingerprint

        try:
            local = catalog_fingerprint(path)
        except RunnerError as exc:
            raise ValidatorError(f"{given}: {exc}") from None
        if local != fingerprint:
            raise ValidatorError(
                f"{given} {path} is not the arena's catalogue: it is [{local}], the arena's is "
                f"[{fingerprint}]; outcome scores from another catalogue would not agree with other "
                f"validators' — copy the arena's catalogue directory ({arena_dir} on the arena's machine)"
            )
        self._catalogs[key] = path
        return path

    def check(self) -> ArenaInfo:
        """Refuse before claiming anything when this validator could not evaluate the arena's jobs."""
        info = self.client.arena_info()
        self._check_pipeline(info.scoring_pipeline_version)
        self.catalog(info.catalog_fingerprint, info.catalog_dir)
        self.judge()
        return info

    @staticmethod
    def _check_pipeline(version: str) -> None:
        if version != SCORING_PIPELINE_VERSION:
            raise ValidatorError(
                f"the arena scores with pipeline {version}, this shoparena with {SCORING_PIPELINE_VERSION}; "
                "install the arena's shoparena version"
            )

    # -- one job -----------------------------------------------------------------------------------

    def run_once(self) -> JobReport | None:
        """Claim one job and evaluate it; None when no job is waiting."""
        offer = self.client.claim()
        return None if offer is None else self.evaluate(offer)

    def run(
        self,
        stop: threading.Event | None = None,
        on_report: Callable[[JobReport], None] | None = None,
        on_error: Callable[[JobFailed], None] | None = None,
    ) -> None:
        """Claim and evaluate jobs until `stop` is set, waiting `poll_s` whenever none is waiting.
        A job that fails is reported and skipped; an unreachable or unavailable (5xx) arena is retried;
        any other refusal (this key is not a validator's, say) stops the loop."""
        stop = stop or threading.Event()
        self.check()
        while not stop.is_set():
            try:
                report = self.run_once()
            except JobFailed as exc:
                if on_error is not None:
                    on_error(exc)
                continue
            except ArenaRefused as exc:
                if exc.status < 500:
                    raise
                log.warning(
                    "the arena cannot serve now (%s): %s; retrying in %g s",
                    exc.error,
                    exc,
                    self.settings.poll_s,
                )
                report = None
            except ValidatorError:
                raise
            except ArenaError as exc:
                log.warning("the arena is unreachable: %s; retrying in %g s", exc, self.settings.poll_s)
                report = None
            if report is None:
                stop.wait(self.settings.poll_s)
            elif on_report is not None:
                on_report(report)

    def evaluate(self, offer: JobOffer) -> JobReport:
        """Run the job and post its result; the lease is given back if anything stops it first."""
        started = time.monotonic()
        with LeaseKeeper(self.client, offer) as keeper:
            try:
                self._check_pipeline(offer.scoring_pipeline_version)
                catalog = self.catalog(offer.catalog_fingerprint, offer.catalog_dir)
                records = self._run(offer, catalog, keeper)
                if keeper.lost is None:
                    return self._post(offer, records, keeper, started)
            except LeaseLost as exc:
                keeper.lost = keeper.lost or str(exc)
            except BaseException as exc:
                if keeper.lost is None:
                    self._release(offer, exc)
                raise
        return JobReport(
            job_id=offer.job_id,
            submission_id=offer.submission_id,
            lease_id=offer.lease_id,
            status="lease_lost",
            detail=keeper.lost,
            problems=len(offer.problems),
            wall_s=time.monotonic() - started,
        )

    def _release(self, offer: JobOffer, exc: BaseException) -> None:
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        try:
            self.client.release(offer.lease_id, f"validator {self.hotkey} gave the job back: {reason}")
        except ArenaError as release_error:
            log.warning("could not give lease %s back (it will lapse): %s", offer.lease_id, release_error)

    def fetch_code(self, offer: JobOffer) -> bytes:
        """The submission's code, refused unless it hashes to the job's sha256."""
        try:
            code, claimed = self.client.code(offer.lease_id)
        except ArenaRefused as exc:
            if exc.error in LOST_ERRORS:
                raise LeaseLost(f"{exc.error}: {exc.message}") from None
            raise
        actual = hashlib.sha256(code).hexdigest()
        if actual != offer.code_sha256 or (claimed is not None and claimed != offer.code_sha256):
            raise JobFailed(
                f"job {offer.job_id}: the code received hashes to {actual[:12]}…, the job's is "
                f"{offer.code_sha256[:12]}…; not running it"
            )
        return code

    def _run(self, offer: JobOffer, catalog: Path, keeper: LeaseKeeper) -> list[TrajectoryRecord]:
        from shoparena.agents.base import RunnerError
        from shoparena.eval.run_dir import TRAJECTORIES_FILE, read_trajectories
        from shoparena.eval.runner import run_eval
        from shoparena.problems.models import Problem

        code = self.fetch_code(offer)
        problems = [Problem.model_validate(record) for record in offer.problems]
        workdir = Path(tempfile.mkdtemp(prefix="shoparena-job-", dir=self.settings.work_dir))
        try:
            agent = workdir / AGENT_FILE
            descriptor = os.open(agent, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(code)
            config = evaluation_config(
                agent,
                catalog,
                problems,
                workdir / "run",
                offer.evaluation,
                workers=self.settings.workers,
                sandbox=self.settings.sandbox,
                inference_models=self.settings.inference_models,
                name=f"arena job {offer.job_id}",
            )

            def watch(_progress) -> None:
                if keeper.lost is not None:
                    raise LeaseLost(keeper.lost)

            try:
                run_eval(config, judge=self.judge(), progress=watch)
            except RunnerError as exc:
                raise JobFailed(f"job {offer.job_id}: the evaluation could not run: {exc}") from None
            records = read_trajectories(workdir / "run" / TRAJECTORIES_FILE).records
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        ran = {record.problem.problem_id for record in records}
        missing = [problem.problem_id for problem in problems if problem.problem_id not in ran]
        if missing:
            raise JobFailed(
                f"job {offer.job_id}: no record for problem(s) {', '.join(map(str, missing[:5]))}"
            )
        return [canonical_record(record, offer, self.hotkey) for record in records]

    def result(self, offer: JobOffer, records: list[TrajectoryRecord]) -> ResultPost:
        return ResultPost(
            lease_id=offer.lease_id,
            job_id=offer.job_id,
            outcomes=[problem_outcome(record) for record in records],
            records=records,
        )

    def _post(
        self, offer: JobOffer, records: list[TrajectoryRecord], keeper: LeaseKeeper, started: float
    ) -> JobReport:
        body = self.result(offer, records).model_dump_json().encode()
        for attempt in range(self.settings.post_attempts):
            try:
                accepted = self.client.post_result(body)
                break
            except ArenaRefused as exc:
                if exc.error in LOST_ERRORS:
                    keeper.lost = f"{exc.error}: {exc.message}"
                    raise LeaseLost(keeper.lost) from None
                raise JobFailed(
                    f"job {offer.job_id}: the arena refused the result ({exc.error}): {exc.message}"
                ) from None
            except ArenaError as exc:
                if attempt + 1 == self.settings.post_attempts:
                    raise JobFailed(f"job {offer.job_id}: the result could not be posted: {exc}") from None
                wait = min(30.0, 2.0**attempt)
                log.warning("posting job %s failed (%s); retrying in %g s", offer.job_id, exc, wait)
                time.sleep(wait)
        return JobReport(
            job_id=offer.job_id,
            submission_id=offer.submission_id,
            lease_id=offer.lease_id,
            status="posted",
            created=accepted.created,
            result=accepted.result,
            problems=len(records),
            wall_s=time.monotonic() - started,
        )
