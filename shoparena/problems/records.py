"""Validating one raw problem record into a `Problem`, with errors a person can act on.

Pydantic reports a union field (`reward` is a spec, a list of specs or a web gold product) as one
error per alternative, which buries the real problem under noise. We pick the alternative the
record's shape asks for and report only its errors, each as `location: field.path: reason`.
"""

from __future__ import annotations

from pydantic import BaseModel, ValidationError

from shoparena.problems.models import Problem

_BRANCHES = ("RewardSpec", "list[RewardSpec]", "Product")


class RecordError(BaseModel):
    """One rejected record: where it is (`file:line` or `file:[index]`), which field, and why."""

    location: str
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.location}: {self.field}: {self.reason}"


class ProblemRecordError(ValueError):
    """A bad record in strict mode (the first one stops the load)."""

    def __init__(self, error: RecordError):
        super().__init__(str(error))
        self.error = error


def _expected_branch(data: dict) -> str | None:
    reward = data.get("reward")
    if isinstance(reward, list):
        return "list[RewardSpec]"
    if isinstance(reward, dict):
        is_web = "shop_id" in reward or "Knowledge_Attribute" in data or "knowledge_attribute" in data
        return "Product" if is_web else "RewardSpec"
    return None


def _field_path(loc: tuple) -> str:
    parts = [str(p) for p in loc if p != "[key]"]
    return ".".join(parts) if parts else "(record)"


def describe_validation_error(data: dict, exc: ValidationError) -> list[tuple[str, str]]:
    """(field path, reason) pairs for the alternative the record's shape selects."""
    branch = _expected_branch(data)
    errors = exc.errors(include_url=False)
    if branch is not None:
        chosen = [e for e in errors if not (len(e["loc"]) > 1 and e["loc"][0] == "reward")]
        chosen += [
            {**e, "loc": (e["loc"][0], *e["loc"][2:])}
            for e in errors
            if len(e["loc"]) > 1 and e["loc"][0] == "reward" and e["loc"][1] == branch
        ]
        errors = chosen or errors
    pairs = []
    for error in errors:
        reason = error["msg"].removeprefix("Value error, ")
        if error["type"] == "missing":
            reason = "required field is missing"
        pairs.append((_field_path(error["loc"]), reason))
    return pairs


def validate_record(data: object, location: str) -> tuple[Problem | None, list[RecordError]]:
    """A `Problem`, or None and the located errors that explain why not."""
    if not isinstance(data, dict):
        kind = type(data).__name__
        return None, [
            RecordError(location=location, field="(record)", reason=f"expected a JSON object, got {kind}")
        ]
    try:
        return Problem.model_validate(data), []
    except ValidationError as exc:
        return None, [
            RecordError(location=location, field=field, reason=reason)
            for field, reason in describe_validation_error(data, exc)
        ]
