"""GRPO rewards (SPEC §9.5): the episode's outcome plus a per-step tool-match against a teacher.

reward = outcome + tool_weight × tool_match [+ prm_weight × prm]   (`RewardFormula`)

- **outcome** is the strict rule score of the episode (`RuleScorer` in production-strict mode, the
  arena's scorer): the mean rule over the reward positions, so a partial answer earns partial credit
  and a failure to recommend earns 0.
- **tool_match** compares the model's tool calls with a teacher trajectory for the same problem,
  aligned by step (the i-th call against the teacher's i-th call). One aligned pair scores
  `0.5 · [same tool] + 0.5 · [same tool] · argument_similarity`, so a wrong tool earns nothing and the
  right tool with the right arguments earns 1. The sum is divided by the longer of the two call
  lists, so missing and surplus calls both cost. Identical call sequences score exactly 1.
- **prm** (only with a process-reward head, `train grpo --prm-head`): the head's mean predicted rule
  over the episode's decision points.
- **hallucinated ids** (a logged diagnostic, not a reward term): product ids the model recommended,
  viewed or checked that no search of the same episode returned.

Teacher trajectories are read from JSONL in either shape the project writes: trajectory records
(`calls`, the verified call log, with `problem.problem_id`) or corpus rows (OpenAI `messages` with
`metadata.problem_id`). Only calls the model emitted (`origin == "llm"`) count as the teacher's.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shoparena.records.calls import CallRecord

SEARCH_TOOLS = ("find_product", "find_products_in_same_shop")
"""Tools whose results introduce product ids into an episode."""
ID_CONSUMING_TOOLS = {
    "recommend_product": "product_ids",
    "view_product_information": "product_ids",
    "check_product_match": "product_id",
}
"""Tools that take product ids the model should have seen in a search result, and the argument holding them."""
_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")


class ToolStep(BaseModel):
    """One tool call reduced to what tool-match compares: the tool name and its arguments."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class TeacherTrajectory(BaseModel):
    """The teacher's tool calls for one problem, in order."""

    model_config = ConfigDict(extra="forbid")

    problem_id: str
    steps: list[ToolStep]
    success: bool | None = None
    """The teacher run's own strict success when its record says (preferred when a problem has several)."""


class TeacherReject(BaseModel):
    line: int
    reason: str


class TeacherSet(BaseModel):
    """Every usable teacher trajectory by problem id, and the lines that could not be used."""

    by_problem: dict[str, TeacherTrajectory]
    rejects: list[TeacherReject] = Field(default_factory=list)


# -- argument and step similarity -------------------------------------------------------------------


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _ids(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def value_similarity(a: Any, b: Any) -> float:
    """How alike two argument values are, in [0, 1]; equal values score 1.

    Numbers compare by relative difference, comma-separated id lists as sets of ids, other strings as
    sets of lowercase words (a reformulated search query shares most words), anything else (lists,
    objects) as the words of its JSON text.
    """
    if isinstance(a, bool) or isinstance(b, bool):  # before ==, since True == 1 in Python
        return 1.0 if type(a) is type(b) and a == b else 0.0
    if a == b:
        return 1.0
    if isinstance(a, int | float) and isinstance(b, int | float):
        if not (math.isfinite(a) and math.isfinite(b)):
            return 0.0
        scale = max(abs(a), abs(b))
        return max(0.0, 1.0 - abs(a - b) / scale) if scale else 1.0
    if isinstance(a, str) and isinstance(b, str):
        if "," in a or "," in b:
            ids_a, ids_b = set(_ids(a)), set(_ids(b))
            if ids_a or ids_b:
                return _jaccard(ids_a, ids_b)
        return _jaccard(_words(a), _words(b))
    return _jaccard(_words(_json(a)), _words(_json(b)))


def argument_similarity(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """Mean value similarity over the union of argument names (a name on one side only scores 0)."""
    keys = set(a) | set(b)
    if not keys:
        return 1.0
    return sum(value_similarity(a[k], b[k]) if k in a and k in b else 0.0 for k in keys) / len(keys)


def step_match(model: ToolStep, teacher: ToolStep) -> float:
    """0 for a different tool; 0.5 + 0.5 × argument similarity for the same tool."""
    if model.name != teacher.name:
        return 0.0
    return 0.5 + 0.5 * argument_similarity(model.arguments, teacher.arguments)


def tool_match(model: Sequence[ToolStep], teacher: Sequence[ToolStep]) -> float:
    """Per-step tool-match in [0, 1], aligned by step and divided by the longer sequence."""
    longest = max(len(model), len(teacher))
    if longest == 0:
        return 1.0
    return sum(step_match(m, t) for m, t in zip(model, teacher, strict=False)) / longest


# -- episodes -----------------------------------------------------------------------------------------


def model_steps(calls: Iterable[CallRecord]) -> list[ToolStep]:
    """The tool calls the model emitted and the harness counted, in order, as tool-match sees them."""
    return [
        ToolStep(name=call.name, arguments=call.arguments or {})
        for call in calls
        if call.origin == "llm" and call.counted
    ]


def _product_ids_in(value: Any, into: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "product_id" and isinstance(item, str | int):
                into.add(str(item))
            else:
                _product_ids_in(item, into)
    elif isinstance(value, list):
        for item in value:
            _product_ids_in(item, into)


def hallucinated_ids(calls: Iterable[CallRecord]) -> list[str]:
    """Ids recommended, viewed or checked in an episode that none of its searches returned (sorted)."""
    calls = list(calls)
    found: set[str] = set()
    for call in calls:
        if call.name in SEARCH_TOOLS and call.error is None:
            _product_ids_in(call.result, found)
    used: set[str] = set()
    for call in calls:
        argument = ID_CONSUMING_TOOLS.get(call.name)
        if argument is None or call.origin != "llm" or not call.arguments:
            continue
        value = call.arguments.get(argument)
        if isinstance(value, str):
            used.update(_ids(value))
        elif isinstance(value, int):
            used.add(str(value))
        elif isinstance(value, list):
            used.update(str(v).strip() for v in value if str(v).strip())
    return sorted(used - found)


class RewardFormula(BaseModel):
    """The scalar GRPO optimises, as weighted terms: the trainer's reward functions and weights, the
    per-rollout log and the report all read it here, so they cannot disagree."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool_weight: float = Field(0.0, ge=0)
    prm_weight: float = Field(0.0, ge=0)
    """0: no process-reward term at all (no head is loaded, no `prm` field is logged)."""

    @property
    def terms(self) -> tuple[str, ...]:
        """The reward fields each rollout carries, in the trainer's order."""
        return ("outcome", "tool_match", *(("prm",) if self.prm_weight > 0 else ()))

    @property
    def weights(self) -> list[float]:
        """One weight per term (TRL's `reward_weights`)."""
        return [1.0, self.tool_weight, *([self.prm_weight] if self.prm_weight > 0 else [])]

    def total(self, values: Mapping[str, float]) -> float:
        """The weighted sum of one rollout's terms (what TRL's weighted reward sum comes to)."""
        return sum(weight * values[term] for term, weight in zip(self.terms, self.weights, strict=True))

    def describe(self) -> str:
        text = f"outcome + {self.tool_weight:g} × tool-match"
        return text + (f" + {self.prm_weight:g} × process reward" if self.prm_weight > 0 else "")


# -- teacher trajectories -----------------------------------------------------------------------------


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.strip():
        try:
            parsed = json.loads(value)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def teacher_from_row(row: Mapping[str, Any]) -> TeacherTrajectory:
    """A teacher trajectory from one trajectory record or corpus row; ValueError says what is missing."""
    if "calls" in row:
        problem = row.get("problem") or {}
        problem_id = problem.get("problem_id") if isinstance(problem, dict) else None
        steps = [
            ToolStep(name=str(call["name"]), arguments=_arguments(call.get("arguments")))
            for call in row["calls"]
            if isinstance(call, dict)
            and call.get("name")
            and call.get("origin", "llm") == "llm"
            and call.get("counted", True)
        ]
        score = row.get("score")
        success = score.get("success") if isinstance(score, dict) else None
    elif "messages" in row:
        metadata = row.get("metadata") or {}
        problem_id = metadata.get("problem_id") if isinstance(metadata, dict) else None
        steps = []
        for message in row["messages"]:
            if not isinstance(message, dict) or message.get("role") != "assistant":
                continue
            for call in message.get("tool_calls") or []:
                function = call.get("function", call) if isinstance(call, dict) else {}
                if function.get("name"):
                    steps.append(
                        ToolStep(name=str(function["name"]), arguments=_arguments(function.get("arguments")))
                    )
        success = metadata.get("success") if isinstance(metadata, dict) else None
    else:
        raise ValueError("neither a trajectory record (`calls`) nor a corpus row (`messages`)")
    if not problem_id:
        raise ValueError("no problem id (problem.problem_id or metadata.problem_id)")
    if not steps:
        raise ValueError(f"problem {problem_id}: the trajectory has no model tool calls")
    return TeacherTrajectory(
        problem_id=str(problem_id), steps=steps, success=success if isinstance(success, bool) else None
    )


def load_teachers(path: str | Path) -> TeacherSet:
    """Teacher trajectories of a JSONL file, one per problem (a successful run preferred, then the first).

    Unusable lines become rejects with their line number and reason; the rest are kept.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"teacher trajectories: {path} is not a file")
    by_problem: dict[str, TeacherTrajectory] = {}
    rejects: list[TeacherReject] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError("a line must hold one JSON object")
                teacher = teacher_from_row(row)
            except ValueError as exc:
                rejects.append(TeacherReject(line=number, reason=f"{path}:{number}: {exc}"))
                continue
            kept = by_problem.get(teacher.problem_id)
            if kept is None or (teacher.success and not kept.success):
                by_problem[teacher.problem_id] = teacher
    return TeacherSet(by_problem=by_problem, rejects=rejects)
