"""Answers to score: one JSONL line per episode, matched to problems by `problem_id` or 0-based `index`.

A bad line is reported with its line number and reason and skipped, never fatal: a batch of thousands
of episodes should not be lost to one truncated line.
"""

from __future__ import annotations

from codecs import BOM_UTF8
from collections.abc import Iterable, Sequence
from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from shoparena.problems.models import Problem
from shoparena.scoring.rules import parse_product_ids


class Answer(BaseModel):
    """One episode's final recommendation plus what the harness knows about how it ended.

    Numbers and flags are strict: `"index": true` or `"sample": "1"` is a rejected line, not problem 1.
    """

    model_config = ConfigDict(extra="ignore")

    problem_id: str | None = None
    index: int | None = Field(default=None, ge=0, strict=True)
    product_ids: list[str] = Field(default_factory=list)
    sample: int = Field(default=0, ge=0, strict=True)
    steps: int | None = Field(default=None, ge=0, strict=True)
    terminated: bool | None = Field(default=None, strict=True)
    format_ok: bool | None = Field(default=None, strict=True)

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
            if number == 1:
                raw = raw.removeprefix(BOM_UTF8)  # what some editors save: not part of line 1
            if not raw.strip():
                continue
            try:
                data = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                reason = "not UTF-8 text (binary data?)" if "UTF-8" in str(exc) else f"not JSON: {exc}"
                rejects.append(AnswerReject(source=str(path), line=number, reason=reason))
                continue
            if not isinstance(data, dict):
                shape = "a JSON array" if isinstance(data, list) else f"a JSON {type(data).__name__}"
                reason = f"not a JSON object: {shape} (the answers file holds one object per line)"
                rejects.append(AnswerReject(source=str(path), line=number, reason=reason))
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
    # ids several problems carry (`problems validate` fails such files): an answer by id alone is ambiguous
    shared: dict[str, list[int]] = {}
    for position, problem in enumerate(problems):
        pid = problem.problem_id or ""
        if pid in by_id:
            shared.setdefault(pid, [by_id[pid]]).append(position)
        else:
            by_id[pid] = position
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
            if answer.problem_id in shared and answer.index in shared[answer.problem_id]:
                index = answer.index
            elif answer.problem_id in shared:
                positions = ", ".join(str(p) for p in shared[answer.problem_id])
                reason = (
                    f"problem_id {answer.problem_id!r} names several problems (indexes {positions}) in the "
                    "problems file; give the answer's 'index' too"
                )
                rejects.append(AnswerReject(source=source, line=line, reason=reason))
                continue
            elif answer.index is not None and answer.index != index:
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
