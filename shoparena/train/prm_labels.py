"""Step labels for the process-reward head (SPEC §11): at each decision point of a trajectory, how good
the best candidate the agent has seen so far is, decomposed like the rule scorer's outcome.

A decision point is an assistant turn that makes calls. Before it, the verified call log has shown some
products; each is scored against each of the problem's reward positions with the scorer's own
`score_item` (title similarity, price, service, SKU/attribute checks). Per position the best candidate
by rule score is kept; the label is its rule score and its per-axis hit ratios, averaged over the
positions (an axis the problem asks nothing of is absent, not zero). So the labels say "what the agent
could already recommend", and rise as it searches well: a process signal the outcome (one number at
the end) does not give. They need the reward, so they exist only where rewards do (the arena's
validators, a corpus' problems file) — which is why a head learns to predict them from the trace alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pydantic import BaseModel

from shoparena.judge.trace import Observed
from shoparena.problems.models import Problem
from shoparena.records.trajectory import TrajectoryRecord
from shoparena.scoring.rules import AXES, ProductLookup, score_item

SCORED_AXES = tuple(axis for axis in AXES if axis != "knowledge")
"""The axes of the product, shop and voucher buckets (`knowledge` is the web bucket's)."""
OUTPUTS = ("rule", *SCORED_AXES)
"""What the head predicts, in order: the best candidate's rule score, then its per-axis hit ratios."""


class StepLabel(BaseModel):
    record_id: str
    problem_id: str
    message_index: int
    """The assistant turn the prefix stops before (its calls not made yet)."""
    seen_products: int
    values: list[float | None]
    """One per `OUTPUTS`; None where the problem asks nothing of that axis."""
    success: bool | None
    """The episode's outcome (for evaluating the head's last prediction)."""


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def best_so_far(seen: Iterable[str], problem: Problem, lookup: ProductLookup, similarity, threshold: float):
    """(rule, per-axis ratios) of the best seen candidate per reward position, averaged over positions."""
    products = lookup.get_products(list(seen))
    similarity.prepare([*problem.gold_titles, *(product.title for product in products.values())])
    rules: list[float] = []
    axes: dict[str, list[float]] = {axis: [] for axis in SCORED_AXES}
    for position, spec in enumerate(problem.rewards):
        best = None
        for product in products.values():
            item = score_item(product, spec, similarity, threshold, position=position)
            if best is None or item.rule > best.rule:
                best = item
        if best is None:
            best = score_item(None, spec, similarity, threshold, position=position)
        rules.append(best.rule)
        for axis in SCORED_AXES:
            ratio = best.axes[axis].ratio
            if ratio is not None:
                axes[axis].append(ratio)
    return [_mean(rules), *(_mean(axes[axis]) for axis in SCORED_AXES)]


def step_labels(
    record: TrajectoryRecord, problem: Problem, lookup: ProductLookup, similarity, threshold: float
) -> list[StepLabel]:
    """A label for every assistant turn of `record` that makes calls."""
    calls = {call.call_id: call for call in record.calls}
    observed = Observed()
    labels: list[StepLabel] = []
    for index, message in enumerate(record.messages):
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            values = best_so_far(observed.products, problem, lookup, similarity, threshold)
            labels.append(
                StepLabel(
                    record_id=record.record_id,
                    problem_id=problem.problem_id or "",
                    message_index=index,
                    seen_products=len(observed.products),
                    values=values,
                    success=record.score.success,
                )
            )
        elif role == "tool":
            call = calls.get(message.get("tool_call_id"))
            if call is not None and call.error is None and call.result is not None:
                observed.add_result(call.result)
    return labels


def labelled_steps(
    records: Iterable[TrajectoryRecord],
    problems: dict[str, Problem],
    lookup: ProductLookup,
    similarity,
    threshold: float,
) -> Iterator[tuple[TrajectoryRecord, StepLabel]]:
    """(record, label) for every decision point of the records whose problem (with its reward) is known."""
    for record in records:
        problem = problems.get(record.problem.problem_id)
        if problem is None or problem.bucket == "web":
            continue
        for label in step_labels(record, problem, lookup, similarity, threshold):
            yield record, label
