"""metrics.json: a run's numbers, computed by the very function `shoparena score` uses (`score_episodes`)
over the recorded answers, so the two always agree; plus counts, errors, pass@k per bucket, the judge's
summary, token usage and timing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shoparena.agents.miner.crash import parse_crash
from shoparena.eval.config import RunConfig
from shoparena.eval.episodes import EpisodeDigest
from shoparena.problems.models import Problem
from shoparena.scoring.answers import Episode
from shoparena.scoring.judge_summary import summarize_verdicts
from shoparena.scoring.metrics import suite_pass_at_k
from shoparena.scoring.similarity import TitleSimilarity
from shoparena.scoring.suite import score_episodes

METRICS_SCHEMA = "shoparena.eval-metrics/1"
ERROR_EXAMPLE_CHARS = 300


def error_example(error: str) -> str:
    """An error as one line for a summary: its first line, and for a miner's crash where in the
    miner's own code it raised (`my_bot.py:7 in parse_budget`), never the harness's frame."""
    crash = parse_crash(error)
    where = crash.where()
    text = crash.summary + (f" (at {where})" if where else "")
    return text[:ERROR_EXAMPLE_CHARS]


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
    attempts: Mapping[tuple[str, int], int] | None = None,
) -> dict[str, Any]:
    """metrics.json: exactly `shoparena score` over the records' answers, plus counts, pass@k and judge.

    `records` holds one episode per (problem, sample), the newest recorded; `attempts` says how many
    records each pair has (more than one where an errored episode was re-run: `counts.superseded`)."""
    wanted = {(p.problem_id or "", s) for p in problems for s in range(samples)}
    selected = [r for r in records if r.key in wanted]
    position = {p.problem_id or "": i for i, p in enumerate(problems)}
    episodes = []
    for record in selected:
        answer = record.answer.model_copy(update={"index": position[record.key[0]]})
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
    examples: dict[str, str] = {}
    for record in selected:
        kind = record.error_kind
        if kind is not None:
            errors[kind] = errors.get(kind, 0) + 1
            if kind not in examples:
                examples[kind] = error_example(record.error or "")
    superseded = sum(n - 1 for key, n in (attempts or {}).items() if key in wanted)
    stored = {r.key: r.success for r in selected}
    rescored = {(s.problem_id, s.sample): s.success for s in suite.scores if s.answered}
    disagreements = sum(1 for key, ok in rescored.items() if key in stored and stored[key] != ok)
    notes = list(suite.notes)
    warning = suite.denominator_warning()
    if warning:  # an interrupted run's missing problems are left out of upstream ASR: say so first
        notes.insert(0, warning.split(" — ")[0] + " — resume the run, or use --mode strict to count them")
    if disagreements:
        notes.append(f"{disagreements} episode(s) scored differently when written (similarity changed?)")
    outside = len(records) - len(selected)
    if outside:
        notes.append(
            f"{outside} recorded episode(s) lie outside this run's problems/samples and are not counted"
        )
    judging = summarize_verdicts(
        (r.judge for r in selected), overall["asr"].value, errored=sum(1 for r in selected if r.error)
    )
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
            "retryable_errors": sum(1 for r in selected if r.retryable),
            "superseded": superseded,
            "buckets": {bucket: len(scores) for bucket, scores in by_bucket.items()},
        },
        "error_examples": examples,
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
