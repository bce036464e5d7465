"""Reading and writing problem files in the formats real users have (SPEC §2).

Three formats, told apart by content, not by file name:
- `shoppingbench`: ShoppingBench's JSONL, one task per line (`query`, `reward`, `voucher`?,
  `Knowledge_Attribute`?), optionally with our metadata keys;
- `arena`: the arena's JSON list of tasks with `category`, `difficulty`, `title`,
  `reward_title_embeddings`;
- `suite`: our frozen suite object (see `suite.py`), verified against its hash on every load.

Loading is a batch job: a bad record is reported with its location (`file:line` or `file:[index]`)
and the field and reason, and the load goes on; `strict=True` makes the first bad record fatal.
"""

from __future__ import annotations

from codecs import BOM_UTF8
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import orjson

from shoparena.problems.models import Problem
from shoparena.problems.records import ProblemRecordError, RecordError, validate_record
from shoparena.problems.suite import SuiteHeader, is_suite_document, verify_suite_document

ProblemFormat = Literal["shoppingbench", "arena", "suite"]
WRITABLE_FORMATS: tuple[str, ...] = ("shoppingbench", "arena")
ARENA_KEYS = ("category", "difficulty", "title", "reward_title_embeddings")
BUCKET_TO_CATEGORY = {"product": "Product", "shop": "Shop", "voucher": "Voucher", "web": "Knowledge"}


class ProblemFileError(ValueError):
    """The file as a whole cannot be read (missing, empty, not one of the formats)."""


@dataclass(frozen=True)
class DuplicateId:
    """A `problem_id` that several records of one file share, with where each of them is."""

    problem_id: str
    locations: tuple[str, ...]

    def __str__(self) -> str:
        return (
            f"problem_id {self.problem_id!r} is shared by {len(self.locations)} records: "
            f"{', '.join(self.locations)} (a run keys episodes by problem_id, so `eval` refuses this file; "
            "a record without problem_id gets one from its query and reward, so identical tasks collide too)"
        )


@dataclass
class LoadResult:
    """What a load produced: the good problems, the rejects, and what kind of file it was."""

    source: str
    format: ProblemFormat
    problems: list[Problem] = field(default_factory=list)
    rejects: list[RecordError] = field(default_factory=list)
    suite: SuiteHeader | None = None
    locations: list[str] = field(default_factory=list)
    """Where each of `problems` is (`file:line` or `file:[index]`), in the same order."""

    @property
    def ok(self) -> bool:
        return not self.rejects

    def duplicate_ids(self) -> list[DuplicateId]:
        """Ids held by more than one valid record, in order of first appearance."""
        places: dict[str, list[str]] = {}
        for problem, location in zip(self.problems, self.locations, strict=True):
            places.setdefault(problem.problem_id or "", []).append(location)
        return [DuplicateId(pid, tuple(where)) for pid, where in places.items() if len(where) > 1]

    def bucket_counts(self) -> dict[str, int]:
        return dict(Counter(p.bucket for p in self.problems))


def detect_format(data: bytes) -> ProblemFormat:
    """JSON list → arena; one JSON object holding `problems` + `content_hash` → suite; else JSONL."""
    stripped = data.lstrip()
    if not stripped:
        raise ProblemFileError("empty file")
    if stripped[:1] == b"[":
        return "arena"
    if stripped[:1] == b"{":
        try:
            whole = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            return "shoppingbench"
        return "suite" if is_suite_document(whole) else "shoppingbench"
    return "shoppingbench"


def _accept(result: LoadResult, record: object, location: str, strict: bool) -> None:
    problem, errors = validate_record(record, location)
    if errors:
        if strict:
            raise ProblemRecordError(errors[0])
        result.rejects.extend(errors)
    else:
        result.problems.append(problem)
        result.locations.append(location)


def parse_problems(data: bytes, source: str = "<memory>", strict: bool = False) -> LoadResult:
    """Parse a problem file's bytes; `source` names it in error locations.

    A UTF-8 byte-order mark (what some editors save) is not part of the first record.
    """
    data = data.removeprefix(BOM_UTF8)
    fmt = detect_format(data)
    result = LoadResult(source=source, format=fmt)
    if fmt == "shoppingbench":
        for line_no, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                continue
            location = f"{source}:{line_no}"
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                reason = "not UTF-8 text (binary data?)" if "UTF-8" in str(exc) else f"invalid JSON: {exc}"
                error = RecordError(location=location, field="(line)", reason=reason)
                if strict:
                    raise ProblemRecordError(error) from None
                result.rejects.append(error)
                continue
            _accept(result, record, location, strict)
        return result
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ProblemFileError(f"{source}: invalid JSON ({fmt} format): {exc}") from None
    if fmt == "suite":
        result.suite = verify_suite_document(document, source)
        records, prefix = document["problems"], "problems"
    else:
        records, prefix = document, ""
    if not records:
        raise ProblemFileError(f"{source}: holds no problems (an empty list)")
    for index, record in enumerate(records):
        _accept(result, record, f"{source}:{prefix}[{index}]", strict)
    return result


def read_problems(path: Path | str, strict: bool = False) -> LoadResult:
    """Load any problem file (format detected from its content)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ProblemFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return parse_problems(data, str(path), strict=strict)
    except ProblemFileError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise ProblemFileError(f"{path}: {exc}") from None


def problem_record(problem: Problem, fmt: str = "shoppingbench", metadata: bool = True) -> dict:
    """The JSON object for one problem in `fmt`.

    Without metadata a record holds only what its format defines (plus any unknown keys it was read
    with), so an upstream file is written back with exactly its original values.
    """
    if fmt not in WRITABLE_FORMATS:
        raise ValueError(f"unknown problem format {fmt!r}; expected one of {', '.join(WRITABLE_FORMATS)}")
    if metadata:
        data = problem.to_record()
    else:
        data = problem.task_record()
        if fmt == "arena":
            data.update({k: getattr(problem, k) for k in ARENA_KEYS if getattr(problem, k) is not None})
        data.update(problem.model_extra or {})
    if fmt == "arena" and "category" not in data:
        data["category"] = BUCKET_TO_CATEGORY[problem.bucket or "product"]
    return data


def dumps_problems(problems: Iterable[Problem], fmt: str = "shoppingbench", metadata: bool = True) -> bytes:
    records = [problem_record(p, fmt, metadata) for p in problems]
    if fmt == "arena":
        return orjson.dumps(records, option=orjson.OPT_INDENT_2) + b"\n"
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def write_problems(
    path: Path | str, problems: Iterable[Problem], fmt: str = "shoppingbench", metadata: bool = True
) -> int:
    """Write problems atomically; returns how many were written."""
    problems = list(problems)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(dumps_problems(problems, fmt, metadata))
    tmp.replace(path)
    return len(problems)
