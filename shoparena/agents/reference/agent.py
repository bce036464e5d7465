"""The two model-free REFERENCE agents (SPEC §5): baselines for demos, tests and sanity checks.

Neither uses a model. Both parse the query with rules (`reference/query.py`), search with the
query's price and service filters, open product pages and check the query's words against each
candidate's own attribute/SKU values (`reference/matching.py`), and recommend what fits — the
same policy (`reference/solver.py`) in the two trace shapes the arena tells apart:

- `reference:agentic` (axis A): a scripted "model". Every tool call is an assistant turn with
  reasoning text, sent through `Episode.run_turn(..., origin="llm")` in a real protocol (OpenAI
  tool_calls by default), so the trace reads like an LLM agent's and a judge can grade it.
- `reference:pipeline` (axis B): deterministic code issues every call with `Episode.call(...,
  origin="code")`; the only "model" text is a classification turn at the start and a narration
  turn before the recommendation, neither holding a tool call.

They are deliberately simple and fully deterministic; a real agent should beat them.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Generator
from typing import Any

from shoparena.agents.base import Agent, AgentRun, AgentSpecError, ProblemView, check_options
from shoparena.agents.reference.query import QueryPlan, parse_query
from shoparena.agents.reference.solver import Batch, Solver
from shoparena.harness.episode import Episode
from shoparena.harness.models import ParsedCall, ParsedTurn
from shoparena.harness.protocols import get_protocol

REFERENCE_VERSION = "1"
MAX_PARALLEL_CALLS = 8
"""Most tool calls the scripted model puts in one turn (parallel function calling)."""


def classify_bucket(query: str) -> str:
    """A rule-based task classifier: voucher if a budget/voucher is stated, shop if one store is asked for."""
    text = query.lower()
    if "voucher" in text or re.search(r"\bbudget\b", text):
        return "voucher"
    if re.search(
        r"\b(same shop|one shop|a shop|shops|one store|single seller|same store|same seller)\b", text
    ):
        return "shop"
    return "product"


class ReferenceAgent(Agent):
    """Shared driving loop: feed the solver's batches to the episode, hand observations back.

    Reference agents report no token usage: no model runs, so claiming model calls or tokens would
    misstate what happened (the judge then reads the reasoning text alone, as for any agent that
    reports no usage).
    """

    kind = "reference"
    reserve = 2

    def __init__(self, name: str, protocol: str = "openai"):
        super().__init__(name=name, version=REFERENCE_VERSION)
        self.protocol = get_protocol(protocol)

    def plan(self, view: ProblemView) -> QueryPlan:
        bucket = view.bucket or classify_bucket(view.query)
        return parse_query(view.query, bucket, view.voucher)

    def steps_left(self, episode: Episode) -> int:
        return episode.step_cap - episode.steps_used

    def capacity(self, episode: Episode) -> int:
        raise NotImplementedError

    def run(self, episode: Episode, view: ProblemView) -> AgentRun:
        report = AgentRun()
        try:
            plan = self.plan(view)
            solver = Solver(plan, episode.tool_names, lambda: self.capacity(episode))
            self.drive(episode, plan, solver, solver.steps(), report)
        except Exception as exc:  # a reference agent must never take the runner down
            report.error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
        return report

    def drive(
        self,
        episode: Episode,
        plan: QueryPlan,
        solver: Solver,
        batches: Generator[Batch, list[Any], None],
        report: AgentRun,
    ) -> None:
        raise NotImplementedError


STYLES = ("full", "concise")
CONCISE_SEARCH = "I search the catalogue for the request."
CONCISE_PICK = "The first hit fits the request."
CONCISE_DONE = "Done."


class AgenticReferenceAgent(ReferenceAgent):
    """Reference agent, axis-A shape: a scripted model whose every call is a reasoned assistant turn.

    `style="concise"` is a teacher for small models (curricula, `shoparena train proof`): on product
    tasks it plays the shortest path that usually solves — one search with the request's own words and
    its price/service filters, the first hit recommended, terminate — with one fixed sentence of
    reasoning per turn, so what a student must learn is copying (words and numbers from the request,
    an id from the tool result), not the full policy's prose. Shop and voucher tasks are played in full.
    """

    def __init__(
        self,
        protocol: str = "openai",
        max_parallel_calls: int = MAX_PARALLEL_CALLS,
        seed: int | None = None,
        style: str = "full",
    ):
        super().__init__("agentic" if style == "full" else f"agentic-{style}", protocol)
        if max_parallel_calls < 1:
            raise ValueError("max_parallel_calls must be at least 1")
        if style not in STYLES:
            raise AgentSpecError(f"reference:agentic: style {style!r} is not one of {', '.join(STYLES)}")
        self.max_parallel_calls = max_parallel_calls
        self.style = style

    def run(self, episode: Episode, view: ProblemView) -> AgentRun:
        if self.style != "concise" or (view.bucket or classify_bucket(view.query)) != "product":
            return super().run(episode, view)
        report = AgentRun()
        try:
            self._concise(episode, view, report)
        except Exception as exc:  # a reference agent must never take the runner down
            report.error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
        return report

    def _say(self, episode: Episode, reasoning: str, name: str, arguments: dict, report: AgentRun) -> list:
        turn = len(report.model_outputs) + 1
        call = ParsedCall(name=name, arguments=arguments, id=f"call_{turn}_1")
        output = self.protocol.render_turn(ParsedTurn(thinking=reasoning, calls=[call]))
        report.model_outputs.append(output)
        return episode.run_turn(self.protocol, output, origin="llm")

    def _concise(self, episode: Episode, view: ProblemView, report: AgentRun) -> None:
        plan = self.plan(view)
        item = plan.items[0]
        arguments: dict[str, Any] = {"q": view.query}
        if item.price:
            arguments["price"] = item.price.filter_text()
        if item.service_filter:
            arguments["service"] = item.service_filter
        observations = self._say(episode, CONCISE_SEARCH, "find_product", arguments, report)
        hits = _hits(observations)
        if not hits or episode.ended:
            return
        self._say(episode, CONCISE_PICK, "recommend_product", {"product_ids": hits[0]}, report)
        if not episode.ended:
            self._say(episode, CONCISE_DONE, "terminate", {"status": "success"}, report)

    def capacity(self, episode: Episode) -> int:
        return self.max_parallel_calls if self.steps_left(episode) - self.reserve >= 1 else 0

    def drive(self, episode, plan, solver, batches, report) -> None:
        batch = next(batches)
        turn_index = 0
        while not episode.ended:
            if batch.calls:
                turn_index += 1
                calls = [
                    ParsedCall(name=c.name, arguments=c.arguments, id=f"call_{turn_index}_{i + 1}")
                    for i, c in enumerate(batch.calls)
                ]
                output = self.protocol.render_turn(
                    ParsedTurn(thinking=batch.reasoning, content=batch.content, calls=calls)
                )
                observations = episode.run_turn(self.protocol, output, origin="llm")
                report.model_outputs.append(output)
            else:
                observations = []
            try:
                batch = batches.send(observations)
            except StopIteration:
                break


class PipelineReferenceAgent(ReferenceAgent):
    """Reference agent, axis-B shape: code calls the tools; the "model" only classifies and narrates."""

    reserve = 3  # narration, recommend_product, terminate

    def __init__(self, protocol: str = "openai", seed: int | None = None):
        super().__init__("pipeline", protocol)

    def capacity(self, episode: Episode) -> int:
        return max(self.steps_left(episode) - self.reserve, 0)

    def _say(self, episode: Episode, text: str, report: AgentRun) -> None:
        """One assistant turn of plain text (no tool calls), written in the agent's protocol."""
        output = self.protocol.render_turn(ParsedTurn(content=text))
        episode.run_turn(self.protocol, output, origin="llm")
        report.model_outputs.append(output)

    def drive(self, episode, plan, solver, batches, report) -> None:
        if self.steps_left(episode) > self.reserve:
            guessed = classify_bucket(episode.query)
            self._say(
                episode,
                f"Task type: {plan.bucket} ({len(plan.items)} item{'s' if len(plan.items) > 1 else ''}; "
                f"text classifier says {guessed}). Parsed: {plan.summary()}.",
                report,
            )
        batch = next(batches)
        while not episode.ended:
            if batch.calls and batch.calls[0].name == "recommend_product" and self.steps_left(episode) > 2:
                self._say(episode, _narration(batch, solver), report)
            observations = []
            for call in batch.calls:
                if episode.ended:
                    break
                observations.append(episode.call(call.name, call.arguments, origin="code"))
            try:
                batch = batches.send(observations)
            except StopIteration:
                break


def _hits(observations: list[Any]) -> list[str]:
    """The product ids a find_product observation lists, in order."""
    import json

    for observation in observations:
        try:
            value = json.loads(getattr(observation, "text", "") or "")
        except ValueError:
            continue
        if isinstance(value, list):
            return [str(h["product_id"]) for h in value if isinstance(h, dict) and "product_id" in h]
    return []


def _narration(batch: Batch, solver: Solver) -> str:
    ids = batch.calls[0].arguments.get("product_ids", "")
    status = "meets every stated requirement" if solver.outcome.complete else "is the closest match found"
    notes = f" Notes: {'; '.join(solver.outcome.notes)}." if solver.outcome.notes else ""
    return f"Recommending {ids}: the selection {status}.{notes}"


def make_reference_agent(target: str = "agentic", **options: Any) -> Agent:
    """`reference:agentic` or `reference:pipeline`; options: protocol (any spelling the harness knows:
    openai, upstream or tags, qwen3 or qwen), max_parallel_calls (agentic only), seed.

    `seed` is accepted and ignored, so that one command line (`--option seed=1`) serves every agent
    kind: a reference agent is deterministic, so every seed gives the same episode anyway."""
    if target == "agentic":
        check_options("reference:agentic", AgenticReferenceAgent, options)
        return AgenticReferenceAgent(**options)
    if target == "pipeline":
        if "max_parallel_calls" in options:
            raise AgentSpecError(
                "reference:pipeline issues one call per step; max_parallel_calls does not apply"
            )
        check_options("reference:pipeline", PipelineReferenceAgent, options)
        return PipelineReferenceAgent(**options)
    raise AgentSpecError(f"reference agent {target!r}: use reference:agentic or reference:pipeline")
