"""Score a whole answer set against a suite: matching, the strict denominator, batching, metrics.

This is the entry point the eval runner and the `score` command share, so both count missing answers,
rejects and precomputed embeddings the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from shoparena.problems.io import read_problems
from shoparena.problems.models import Problem
from shoparena.scoring.answers import Answer, AnswerReject, Episode, match_answers, read_answers
from shoparena.scoring.metrics import PassAtK, SuiteMetrics, aggregate, suite_pass_at_k
from shoparena.scoring.rules import (
    SCORING_PIPELINE_VERSION,
    ProblemScore,
    ProductLookup,
    RuleScorer,
    ScoringMode,
    unanswered_score,
)
from shoparena.scoring.similarity import TitleSimilarity, adopt_suite_embeddings

BATCH = 512


# -- do the problems fit the catalogue? -----------------------------------------------------------


class CatalogMismatchError(ValueError):
    """None of a suite's gold products is in the catalogue it is scored on: every score would be 0."""


def _title_key(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.casefold()))


class GoldCoverage(BaseModel):
    """How many of a suite's gold products the catalogue holds. A gold product counts as held when its
    id is there under the same title: synthetic catalogues of different seeds share ids, so an id alone
    would take problems made from another catalogue for this one's."""

    n_problems: int
    n_gold: int
    """Distinct gold products (id and title) of the problems."""
    n_absent: int = 0
    """Of those, how many the catalogue does not hold."""
    missing_ids: list[str] = Field(default_factory=list)
    """Gold ids the catalogue lacks."""
    other_titles: list[tuple[str, str, str]] = Field(default_factory=list)
    """(id, the catalogue's title, the problem's title) where the id names another product."""
    problems_affected: int = 0
    """Problems with at least one gold product not held: they cannot be solved here."""

    def _detail(self) -> str:
        parts = []
        if self.missing_ids:
            parts.append(f"{len(self.missing_ids)} id(s) missing, e.g. {self.missing_ids[0]}")
        if self.other_titles:
            pid, here, there = self.other_titles[0]
            parts.append(
                f"{len(self.other_titles)} id(s) naming another product, e.g. {pid} is {here[:40]!r} "
                f"in the catalogue but {there[:40]!r} in the problem"
            )
        return "; ".join(parts)

    def note(self) -> str | None:
        """The warning when some (not all) gold products are absent; None when all are held."""
        if not self.n_absent:
            return None
        return (
            f"{self.problems_affected} of {self.n_problems} problem(s) have gold products that are not in "
            f"the catalogue ({self._detail()}): they cannot be solved and score 0"
        )

    def require(self, catalog: str = "the catalogue") -> str | None:
        """Raise `CatalogMismatchError` when no gold product is held; else the partial warning (or None)."""
        if self.n_gold and self.n_absent == self.n_gold:
            raise CatalogMismatchError(
                f"none of the {self.n_gold} gold product(s) of the {self.n_problems} problem(s) is in "
                f"{catalog} ({self._detail()}): the problems were made from another catalogue; use the "
                "catalogue they came from, or generate problems from this one "
                "(`shoparena problems generate`)"
            )
        return self.note()


def gold_coverage(problems: Sequence[Problem], lookup: ProductLookup) -> GoldCoverage:
    """Which gold products of `problems` `lookup` holds (one batched lookup)."""
    wanted = {
        (spec.product_id, spec.title[0] if spec.title else None) for p in problems for spec in p.rewards
    }
    found = lookup.get_products(sorted({pid for pid, _ in wanted}))
    missing = sorted({pid for pid, _ in wanted if pid not in found})
    other = sorted(
        (pid, found[pid].title, title)
        for pid, title in wanted
        if pid in found and title is not None and _title_key(found[pid].title) != _title_key(title)
    )
    absent = {(pid, title) for pid, title in wanted if pid in missing} | {(pid, t) for pid, _, t in other}
    affected = sum(
        1
        for p in problems
        if any((spec.product_id, spec.title[0] if spec.title else None) in absent for spec in p.rewards)
    )
    return GoldCoverage(
        n_problems=len(problems),
        n_gold=len(wanted),
        n_absent=len(absent),
        missing_ids=missing,
        other_titles=other,
        problems_affected=affected,
    )


class SuiteScore(BaseModel):
    """Everything one scoring run produced: per-episode scores, metrics, and what was not scored."""

    mode: ScoringMode
    similarity: str
    title_threshold: float
    pipeline_version: str = SCORING_PIPELINE_VERSION
    n_problems: int
    n_answers: int
    unanswered: list[int] = Field(default_factory=list)
    """Indexes of problems without an answer: failures under the strict denominator, else left out."""
    strict_denominator: bool = False
    """Unanswered problems count as failures (always in strict mode; `--strict-denominator` upstream)."""
    rejects: list[AnswerReject] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    scores: list[ProblemScore]
    metrics: SuiteMetrics
    pass_at_k: list[PassAtK] = Field(default_factory=list)

    @property
    def left_out(self) -> int:
        """Problems without an answer that the metrics leave out (0 under the strict denominator)."""
        return 0 if self.strict_denominator else len(self.unanswered)

    def denominator_warning(self) -> str | None:
        """The loud line every rendering of these metrics must carry when problems were left out.

        Upstream's ASR divides by the answered problems only, so an agent that answers 1 of 6 problems
        correctly scores 1.000: comparable with ShoppingBench's numbers, and misleading without this.
        """
        if not self.left_out:
            return None
        answered = self.n_problems - len(self.unanswered)
        return (
            f"ASR over {answered} answered of {self.n_problems} problems; {self.left_out} unanswered left "
            "out — use --strict-denominator to count them as failures"
        )

    def to_json(self) -> dict:
        """The `score --json` document: per-problem rows and the aggregate."""
        return {
            "problems": [s.summary().model_dump(mode="json") for s in self.scores],
            "aggregate": {
                "mode": self.mode,
                "similarity": self.similarity,
                "title_threshold": self.title_threshold,
                "pipeline_version": self.pipeline_version,
                "n_problems": self.n_problems,
                "n_answers": self.n_answers,
                "n_scored": len(self.scores),
                "unanswered": self.unanswered,
                "strict_denominator": self.strict_denominator,
                "left_out": self.left_out,
                "warning": self.denominator_warning(),
                "rejects": [r.model_dump() for r in self.rejects],
                "notes": self.notes,
                "metrics": self.metrics.model_dump(),
                "pass_at_k": [p.model_dump() for p in self.pass_at_k],
            },
        }


def score_episodes(
    problems: Sequence[Problem],
    episodes: Sequence[Episode],
    lookup: ProductLookup,
    similarity: TitleSimilarity,
    mode: ScoringMode = "upstream",
    title_threshold: float | None = None,
    rejects: Sequence[AnswerReject] = (),
    pass_k: Sequence[int] = (),
    n_bootstrap: int = 1000,
    seed: int = 0,
    progress=None,
    strict_denominator: bool | None = None,
) -> SuiteScore:
    """Score matched episodes. Under the strict denominator (strict mode's, or asked for with
    `strict_denominator=True` in upstream mode) every problem nobody answered adds a failure; otherwise
    it is left out of the metrics, and `SuiteScore.denominator_warning()` says so. Problems whose gold
    products are not in `lookup` are a note; when none is, `CatalogMismatchError` (nothing to score)."""
    strict_denominator = mode == "strict" if strict_denominator is None else strict_denominator
    coverage = gold_coverage(problems, lookup).require()
    notes = adopt_suite_embeddings(problems, similarity)
    if coverage:
        notes.insert(0, coverage)
    scorer = RuleScorer(lookup, similarity, mode, title_threshold)
    scores: list[ProblemScore] = []
    for start in range(0, len(episodes), BATCH):
        chunk = episodes[start : start + BATCH]
        batch = [
            (
                problems[e.index],
                e.answer.product_ids,
                {
                    "index": e.index,
                    "sample": e.answer.sample,
                    "steps": e.answer.steps,
                    "terminated": e.answer.terminated,
                    "format_ok": e.answer.format_ok,
                },
            )
            for e in chunk
        ]
        scores.extend(scorer.score_many(batch))
        if progress is not None:
            progress(len(chunk))
    answered = {e.index for e in episodes}
    unanswered = [i for i in range(len(problems)) if i not in answered]
    if strict_denominator:
        scores.extend(unanswered_score(problems[i], mode, index=i) for i in unanswered)
        scores.sort(key=lambda s: (s.index if s.index is not None else -1, s.sample))
    if unanswered:
        where = "counted as failures" if strict_denominator else "left out of the metrics (upstream mode)"
        notes.append(f"{len(unanswered)} problem(s) have no answer: {where}")
    metrics = aggregate(scores, n_bootstrap=n_bootstrap, seed=seed)
    passes = [suite_pass_at_k(scores, k, n_bootstrap=n_bootstrap, seed=seed) for k in pass_k]
    return SuiteScore(
        mode=mode,
        similarity=getattr(similarity, "name", type(similarity).__name__),
        title_threshold=scorer.title_threshold,
        n_problems=len(problems),
        n_answers=len(episodes),
        unanswered=unanswered,
        strict_denominator=strict_denominator,
        rejects=list(rejects),
        notes=notes,
        scores=scores,
        metrics=metrics,
        pass_at_k=passes,
    )


def score_answers(
    problems: Sequence[Problem],
    answers: Sequence[Answer],
    lookup: ProductLookup,
    similarity: TitleSimilarity,
    mode: ScoringMode = "upstream",
    **options,
) -> SuiteScore:
    """Score in-memory answers (what the eval runner calls); unmatched answers become rejects."""
    episodes, rejects = match_answers(problems, [(None, a) for a in answers])
    return score_episodes(problems, episodes, lookup, similarity, mode, rejects=rejects, **options)


def score_answer_file(
    problems: Sequence[Problem],
    answers_path: str | Path,
    lookup: ProductLookup,
    similarity: TitleSimilarity,
    mode: ScoringMode = "upstream",
    **options,
) -> SuiteScore:
    """Score a JSONL answers file; bad lines are located, skipped and reported in `rejects`."""
    good, bad = read_answers(answers_path)
    episodes, unmatched = match_answers(problems, good, source=str(answers_path))
    return score_episodes(problems, episodes, lookup, similarity, mode, rejects=[*bad, *unmatched], **options)


def load_problem_file(path: str | Path) -> list[Problem]:
    """The problems of a suite file, in file order, so an answer's `index` is its 0-based position.

    Strict loading: skipping a bad record would shift every later index and score answers against
    the wrong problems, so the first bad record stops the run with its location.
    """
    return read_problems(path, strict=True).problems
