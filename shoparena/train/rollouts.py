"""Sampling episodes for training (SPEC §9.2–9.3): any agent the eval runner accepts — the checkpoint
being trained (`hf:DIR`), a vLLM server of it or a teacher (`openai:MODEL`), a reference agent — over
problems, through the real harness (`agents.runner.run_eval`), strictly scored.

A rollout run is an ordinary eval run directory (run.json, trajectories.jsonl, metrics.json), so it
resumes after an interruption and `shoparena report` reads it like any other. What training takes
from it are the records that scored 1.0 under the strict rules, turned into training rows by the
corpus normaliser (`corpus.normalise.from_trajectory`, then the corpus' format gates and TRL form),
never by a second converter: a sampled row looks exactly like a corpus row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from shoparena.agents.base import RunnerError
from shoparena.corpus import gates as gate_mod
from shoparena.corpus.export import trl_message
from shoparena.corpus.normalise import NormaliseError, from_trajectory
from shoparena.corpus.trace import trace_calls
from shoparena.eval.config import EvalConfig
from shoparena.eval.runner import RunProgress, run_eval
from shoparena.problems.models import Problem
from shoparena.records.options import Executor, Profile, SimilarityName
from shoparena.train.leak_guard import GuardReport, guard_problems

MODEL_KINDS = ("hf", "openai", "live")
"""Agent kinds that sample from a model, and so take temperature, top_p, a turn cap and a token cap
(`live`: the in-memory policy, `train.live_agent`)."""
TOKEN_OPTION = {"hf": "max_new_tokens", "live": "max_new_tokens", "openai": "max_tokens"}
TRAJECTORIES = "trajectories.jsonl"


@dataclass
class Sampling:
    """How episodes are sampled. Defaults are the paper's RS numbers (k = 8 at T = 0.9, top_p 0.95,
    ≤ 8 turns); temperature, top_p and max_turns reach model agents only (hf:, openai:)."""

    samples: int = 8
    temperature: float = 0.9
    top_p: float = 0.95
    max_turns: int | None = 8
    max_new_tokens: int | None = None
    profile: Profile = "oro7"
    protocol: str | None = None
    similarity: SimilarityName = "minilm"
    executor: Executor = "inline"
    """inline: one agent in this process (one copy of a local checkpoint in memory)."""
    workers: int = 1
    timeout: float | None = None
    base_url: str | None = None
    """openai: the endpoint (a vLLM server of the checkpoint, or a teacher's API)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Any other agent option (KEY: VALUE), as `shoparena eval --option`."""
    seed: int | None = None
    """Model agents: each (problem, sample) draws with its own seed derived from this one
    (`agents.base.episode_seed`), so a rerun samples the same episodes. None: unseeded."""


class RolloutResult(BaseModel):
    """One sampling run: where it is and what it yielded."""

    run_dir: Path
    agent: str
    problems: int
    sampled: int
    """Episodes recorded (resumed ones included)."""
    passed: int
    """Episodes with strict score 1.0."""
    asr: float | None
    episodes_per_s: float | None = None
    """Episodes sampled per second in this call (None when every episode was resumed)."""


def eval_config(
    agent: str, catalog: Path, problems: list[Problem], out: Path, sampling: Sampling
) -> EvalConfig:
    """The eval run that samples `agent` over `problems`: strict scoring, sampling options for models."""
    kind = agent.partition(":")[0]
    options: dict[str, Any] = {}
    base_url = None
    if kind in MODEL_KINDS:
        options.update(temperature=sampling.temperature, top_p=sampling.top_p)
        if sampling.max_turns is not None:
            options["max_turns"] = sampling.max_turns
        if sampling.max_new_tokens is not None:
            options[TOKEN_OPTION[kind]] = sampling.max_new_tokens
        if kind == "openai":
            base_url = sampling.base_url
        if sampling.seed is not None:
            options["seed"] = sampling.seed
    options.update(sampling.options)
    return EvalConfig(
        catalog=catalog,
        problems=problems,
        agent=agent,
        out=out,
        samples=sampling.samples,
        workers=sampling.workers,
        executor=sampling.executor,
        profile=sampling.profile,
        protocol=sampling.protocol,
        mode="strict",
        similarity=sampling.similarity,
        timeout=sampling.timeout,
        options=options,
        bootstrap=0,
        base_url=base_url,
    )


def sample_rollouts(
    agent: str,
    catalog: Path,
    problems: list[Problem],
    out: Path,
    sampling: Sampling,
    progress: Callable[[RunProgress], None] | None = None,
) -> RolloutResult:
    """Run `agent` over `problems` × `sampling.samples` into `out` (resuming it), strictly scored."""
    if not problems:
        raise ValueError("no problems to sample: the leak guard kept none, or the problems file is empty")
    try:
        run = run_eval(eval_config(agent, catalog, problems, out, sampling), progress=progress)
    except RunnerError as exc:  # a bad spec or an unusable run directory: the stage's input was wrong
        raise ValueError(f"sampling {agent} into {out}: {exc}") from exc
    sampled = passed = 0
    for record in read_records(out / TRAJECTORIES):
        sampled += 1
        passed += strict_pass(record)
    return RolloutResult(
        run_dir=out,
        agent=agent,
        problems=len(problems),
        sampled=sampled,
        passed=passed,
        asr=passed / sampled if sampled else None,
        episodes_per_s=(run.metrics.get("timing") or {}).get("episodes_per_s"),
    )


def read_records(path: Path) -> Iterator[dict]:
    """The trajectory records of a JSONL file (a rollout run's, or any file of records)."""
    with Path(path).open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON: {exc}") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{number}: not a trajectory record (a JSON {type(record).__name__})")
            yield record


def strict_pass(record: dict) -> bool:
    """Scored under the strict rules, and scored 1.0 (a success with every constraint met)."""
    score = record.get("score") or {}
    rule = score.get("rule")
    return (
        record.get("scoring_mode") == "strict"
        and score.get("success") is True
        and (rule is None or rule >= 1.0)
        and not (record.get("outcome") or {}).get("error")
    )


class RowReject(BaseModel):
    """A passing record that could not become a training row, and why (a corpus reject reason)."""

    record_id: str | None
    problem_id: str | None
    reason: str
    detail: str


class Rows(BaseModel):
    rows: list[dict]
    rejects: list[RowReject]


def training_rows(records: Iterable[dict], source: str) -> Rows:
    """Records → TRL rows `{messages, tools, metadata}` as `corpus build` exports them: the corpus
    normaliser, the format gates that need no catalogue (paired calls, one recommend, a proper ending),
    tool-call arguments as objects. A record that fails is a reject with the corpus' reason."""
    rows: list[dict] = []
    rejects: list[RowReject] = []
    for number, record in enumerate(records, start=1):
        where = f"{source}[{number}]"
        try:
            row = from_trajectory(record, where)
        except NormaliseError as exc:
            rejects.append(_reject(record, exc.reason, exc.detail))
            continue
        calls = trace_calls(row.messages)
        failure = (
            gate_mod.pairing_gate(row.messages)
            or gate_mod.recommend_gates(calls, None)
            or gate_mod.ending_gate(row.messages, calls)
        )
        if failure is not None:
            rejects.append(_reject(record, failure.reason, failure.detail))
            continue
        rows.append(
            {
                "messages": [trl_message(m) for m in row.messages],
                "tools": row.tools,
                "metadata": row.metadata.model_dump(mode="json"),
            }
        )
    return Rows(rows=rows, rejects=rejects)


def _reject(record: dict, reason: str, detail: str) -> RowReject:
    problem = record.get("problem") or {}
    return RowReject(
        record_id=record.get("record_id"),
        problem_id=problem.get("problem_id") if isinstance(problem, dict) else None,
        reason=reason,
        detail=detail,
    )


def write_jsonl(path: Path, rows: Iterable[Any]) -> int:
    """Rows (dicts or pydantic models) as JSONL; returns how many."""
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("wb") as handle:
        for row in rows:
            data = row.model_dump(mode="json") if isinstance(row, BaseModel) else row
            handle.write(orjson.dumps(data) + b"\n")
            count += 1
    return count


# -- the sampling step of the rs and teacher stages -------------------------------------------------------
class Collected(BaseModel):
    """Guard → sample → keep strict 1.0 → training rows, with every count a stage reports."""

    guard: GuardReport
    rollouts: RolloutResult
    rows: list[dict]
    rejects: list[RowReject]
    duplicates: int
    """Passing episodes whose conversation repeated an earlier one exactly (kept once)."""

    def counts(self) -> dict[str, int]:
        return {
            "problems": self.guard.candidates,
            "guard_kept": len(self.guard.kept),
            "guard_dropped_by_id": len(self.guard.dropped_by_id),
            "guard_dropped_by_cluster": len(self.guard.dropped_by_cluster),
            "sampled": self.rollouts.sampled,
            "passed": self.rollouts.passed,
            "row_rejects": len(self.rejects),
            "duplicates": self.duplicates,
            "rows": len(self.rows),
        }

    def rates(self) -> dict[str, float | None]:
        return {"episodes_per_s": self.rollouts.episodes_per_s, "strict_pass_rate": self.rollouts.asr}


def collect(
    agent: str,
    catalog: Path,
    problems_file: Path,
    corpus: Path,
    out: Path,
    sampling: Sampling,
    *,
    limit: int | None = None,
    never_touch: list[Path] | None = None,
    progress: bool = True,
    say: Callable[[str], None] = print,
) -> Collected:
    """The guarded sampling step: the problems the leak guard keeps (counts printed through `say` and
    written to `out/guard.json`), sampled into `out/rollouts`, the strict 1.0 episodes as training rows
    (`out/rollout_rows.jsonl`; rejects with reasons in `out/rollout_rejects.jsonl`)."""
    from shoparena.scoring.suite import load_problem_file

    problems = load_problem_file(problems_file)[:limit] if limit else load_problem_file(problems_file)
    guard = guard_problems(problems, corpus, never_touch)
    say(guard.summary())
    out.mkdir(parents=True, exist_ok=True)
    (out / "guard.json").write_bytes(
        orjson.dumps(
            {
                "counts": guard.counts(),
                "dropped": [d.model_dump() for d in guard.dropped_by_id + guard.dropped_by_cluster],
                "corpus": guard.corpus,
                "manifest_sha256": guard.manifest_sha256,
            },
            option=orjson.OPT_INDENT_2,
        )
    )
    run_dir = out / "rollouts"
    with _bar(f"sampling {agent}", len(guard.kept) * sampling.samples, progress) as advance:
        rollouts = sample_rollouts(agent, catalog, guard.kept, run_dir, sampling, advance)
    passing = [r for r in read_records(run_dir / TRAJECTORIES) if strict_pass(r)]
    converted = training_rows(passing, str(run_dir / TRAJECTORIES))
    rows, seen, duplicates = [], set(), 0
    for row in converted.rows:
        key = orjson.dumps(row["messages"], option=orjson.OPT_SORT_KEYS)
        if key in seen:
            duplicates += 1
            continue
        seen.add(key)
        rows.append(row)
    write_jsonl(out / "rollout_rows.jsonl", rows)
    write_jsonl(out / "rollout_rejects.jsonl", converted.rejects)
    collected = Collected(
        guard=guard, rollouts=rollouts, rows=rows, rejects=converted.rejects, duplicates=duplicates
    )
    c = collected.counts()
    say(
        f"sampled {c['sampled']} episodes, {c['passed']} at strict 1.0, {c['rows']} training rows "
        f"({c['row_rejects']} rejected, {c['duplicates']} duplicates)"
    )
    return collected


@contextmanager
def _bar(description: str, total: int, show: bool) -> Iterator[Callable[[RunProgress], None] | None]:
    """A progress bar fed by `run_eval`'s progress (episodes done, resumed ones included)."""
    if not show:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda state: bar.update(task, completed=state.done, total=state.total)
