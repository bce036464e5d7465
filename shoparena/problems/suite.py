"""Versioned, frozen problem suites (SPEC §2): formal evaluation must run on exactly the problems
that were published, so a suite file carries a content hash and refuses to load once edited.

A suite file is one JSON object: `format`, `name`, `version`, `created`, `n_problems`,
`content_hash` (sha256 over the canonical JSON of the problem records, `created` excluded) and
`problems` (the records, each stamped with `suite` + `suite_version`). Writing never replaces a
different existing file: a changed suite is a new version in a new file.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shoparena.problems.canonical import content_hash
from shoparena.problems.models import Problem
from shoparena.problems.records import ProblemRecordError, validate_record

SUITE_FORMAT = "shoparena-suite/1"


class SuiteError(ValueError):
    """A suite file that cannot be used as it stands."""


class SuiteIntegrityError(SuiteError):
    """The file's problems no longer match the hash it was frozen with."""


class SuiteExistsError(SuiteError):
    """Refused to overwrite an existing file that holds different content."""


class SuiteHeader(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str = SUITE_FORMAT
    name: str = Field(min_length=1)
    version: str = Field(min_length=1)
    created: str
    n_problems: int = Field(ge=0)
    content_hash: str = Field(min_length=64, max_length=64)

    @property
    def label(self) -> str:
        return f"suite {self.name!r} version {self.version!r}"


class Suite(BaseModel):
    header: SuiteHeader
    problems: list[Problem]


def is_suite_document(data: object) -> bool:
    return isinstance(data, dict) and "problems" in data and "content_hash" in data


def build_suite(name: str, version: str, problems: list[Problem], created: str | None = None) -> Suite:
    """Stamp every problem with the suite name/version and compute the content hash."""
    stamped = [p.model_copy(update={"suite": name, "suite_version": version}) for p in problems]
    records = [p.to_record() for p in stamped]
    header = SuiteHeader(
        name=name,
        version=version,
        created=created or datetime.now(UTC).replace(microsecond=0).isoformat(),
        n_problems=len(records),
        content_hash=content_hash(records),
    )
    return Suite(header=header, problems=stamped)


def suite_document(suite: Suite) -> dict:
    return {**suite.header.model_dump(), "problems": [p.to_record() for p in suite.problems]}


def verify_suite_document(data: dict, source: str) -> SuiteHeader:
    """The header, once the problems are shown to be exactly those the hash was computed over."""
    header_fields = {k: v for k, v in data.items() if k != "problems"}
    try:
        header = SuiteHeader.model_validate(header_fields)
    except ValidationError as exc:
        reasons = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or '(header)'}: {error['msg']}"
            for error in exc.errors(include_url=False)
        )
        raise SuiteError(f"{source}: not a valid suite header: {reasons}") from None
    records = data["problems"]
    if not isinstance(records, list):
        raise SuiteError(f"{source}: {header.label}: 'problems' must be a list")
    actual = content_hash(records)
    if len(records) != header.n_problems or actual != header.content_hash:
        changes = []
        if len(records) != header.n_problems:
            changes.append(f"it was frozen with {header.n_problems} problems but now holds {len(records)}")
        if actual != header.content_hash:
            changes.append(
                f"content hash is sha256 {actual[:12]}… but the header says {header.content_hash[:12]}…"
            )
        raise SuiteIntegrityError(
            f"{source}: {header.label} was modified after it was frozen: {'; '.join(changes)}. "
            "Refusing to load it; publish changes as a new suite version instead."
        )
    return header


def read_suite(path: Path | str) -> Suite:
    """Load and verify a suite; every record must be valid (a frozen suite has no rejects)."""
    path = Path(path)
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise SuiteError(f"{path}: cannot read suite: {exc}") from None
    if not is_suite_document(data):
        raise SuiteError(f"{path}: not a suite file (expected an object with 'problems' and 'content_hash')")
    header = verify_suite_document(data, str(path))
    problems = []
    for index, record in enumerate(data["problems"]):
        problem, errors = validate_record(record, f"{path}:problems[{index}]")
        if errors:
            raise ProblemRecordError(errors[0])
        problems.append(problem)
    return Suite(header=header, problems=problems)


def write_suite(
    path: Path | str, name: str, version: str, problems: list[Problem], created: str | None = None
) -> Suite:
    """Freeze `problems` as `name` `version` at `path`.

    Writing the same content again is a no-op (the existing file, with its original `created`,
    is kept); any other existing file at `path` is never overwritten.
    """
    path = Path(path)
    suite = build_suite(name, version, problems, created)
    if path.exists():
        try:
            existing = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            existing = None
        if not is_suite_document(existing):
            raise SuiteExistsError(f"{path} exists and is not a suite file; refusing to overwrite it")
        same = (
            existing.get("name") == name
            and existing.get("version") == version
            and existing.get("content_hash") == suite.header.content_hash
        )
        if not same:
            raise SuiteExistsError(
                f"{path} already holds suite {existing.get('name')!r} version {existing.get('version')!r} "
                f"(sha256 {str(existing.get('content_hash'))[:12]}…, {existing.get('n_problems')} problems); "
                f"the new content (sha256 {suite.header.content_hash[:12]}…, {suite.header.n_problems} "
                "problems) differs. Suites are frozen: write the new version to a new file."
            )
        return read_suite(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(orjson.dumps(suite_document(suite), option=orjson.OPT_INDENT_2) + b"\n")
    tmp.replace(path)
    return suite
