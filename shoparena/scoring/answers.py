"""Answers to score: one JSONL line per episode, matched to problems by `problem_id` or 0-based `index`.

A bad line is reported with its line number and reason and skipped, never fatal: a batch of thousands
of episodes should not be lost to one truncated line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from shoparena.problems.models import Problem
from shoparena.scoring.rules import parse_product_ids


class Answer(BaseModel):
    """One episode's final recommendation plus what the harness knows about how it ended."""

    model_config = ConfigDict(extra="ignore")

    problem_id: str | None = None
    index: int | None = Field(default=None, ge=0)
    product_ids: list[str] = Field(default_factory=list)
    sample: int = Field(default=0, ge=0)
    steps: int | None = Field(default=None, ge=0)
    terminated: bool | None = None
    format_ok: bool | None = None

    @field_validator("product_ids", mode="before")
    @classmethod
    def _ids(cls, value: object) -> object:
        if value is None or isinstance(value, str | list | tuple):
            return parse_product_ids(value)
        raise ValueError("product_ids must be a list of ids or a comma-separated string")

    @field_validator("problem_id", mode="before")
    @classmethod
    def _pid(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @model_validator(mode="after")
    def _locates_a_problem(self) -> Answer:
        if self.problem_id is None and self.index is None:
            raise ValueError("an answer needs 'problem_id' or 'index'")
        return self


class AnswerReject(BaseModel):
    """A line (or answer) that could not be used, and why."""

    source: str
    line: int | None = None
    reason: str


class Episode(BaseModel):
    """An answer matched to its problem's position in the suite."""

    index: int
    answer: Answer


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "record"
    return f"{where}: {err['msg']}"


def read_answers(path: str | Path) -> tuple[list[tuple[int, Answer]], list[AnswerReject]]:
    """(line number, answer) for each good line; rejects name the line and the problem."""
    path = Path(path)
    good: list[tuple[int, Answer]] = []
    rejects: list[AnswerReject] = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                data = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                rejects.append(AnswerReject(source=str(path), line=number, reason=f"not JSON: {exc}"))
                continue
            if not isinstance(data, dict):
                rejects.append(AnswerReject(source=str(path), line=number, reason="not a JSON object"))
                continue
            try:
                good.append((number, Answer.model_validate(data)))
            except ValidationError as exc:
                rejects.append(AnswerReject(source=str(path), line=number, reason=_first_error(exc)))
    return good, rejects


def match_answers(
    problems: Sequence[Problem], answers: Iterable[tuple[int | None, Answer]], source: str = "answers"
) -> tuple[list[Episode], list[AnswerReject]]:
    """Pair answers with problems; unknown ids, out-of-range indexes and repeated samples are rejected."""
    by_id: dict[str, int] = {}
    for position, problem in enumerate(problems):
        by_id.setdefault(problem.problem_id or "", position)
    episodes: list[Episode] = []
    rejects: list[AnswerReject] = []
    seen: set[tuple[int, int]] = set()
    for line, answer in answers:
        if answer.problem_id is not None:
            index = by_id.get(answer.problem_id)
            if index is None:
                reason = f"problem_id {answer.problem_id!r} is not in the problems file"
                rejects.append(AnswerReject(source=source, line=line, reason=reason))
                continue
            if answer.index is not None and answer.index != index:
                reason = f"problem_id {answer.problem_id!r} is at index {index}, not {answer.index}"
                rejects.append(AnswerReject(source=source, line=line, reason=reason))
                continue
        else:
            index = answer.index
            assert index is not None
            if index >= len(problems):
                reason = f"index {index} is out of range (the problems file has {len(problems)})"
                rejects.append(AnswerReject(source=source, line=line, reason=reason))
                continue
        if (index, answer.sample) in seen:
            reason = f"a second answer for problem {index} sample {answer.sample}"
            rejects.append(AnswerReject(source=source, line=line, reason=reason))
            continue
        seen.add((index, answer.sample))
        episodes.append(Episode(index=index, answer=answer))
    return episodes, rejects
