"""One problem's run through the harness: tool dispatch, episode state, the verified call log, the trace.

An `Episode` never raises on anything a model or an agent sends it: bad JSON, an unknown or
out-of-profile tool, a missing or mistyped argument, a second recommendation, a call after the end —
each becomes an error observation that says what is wrong, and the episode goes on. Only the query and
the voucher of a problem are kept; the reward never enters the harness.

A step is one model turn (`run_turn`, however many calls it holds) or one direct `call`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shoparena.catalog.models import Shop
from shoparena.harness import jsontext
from shoparena.harness.models import EpisodeSummary, Observation, ParsedCall, ParsedTurn
from shoparena.harness.params import ArgumentError, bind_arguments
from shoparena.harness.tool_specs import DEFAULT_STEP_CAPS, TOOL_SPECS, profile_tools, tool_schemas
from shoparena.harness.tools import STATELESS_TOOLS, ToolContext, ToolError, split_ids
from shoparena.index.backend import CatalogBackend
from shoparena.problems.models import Problem, Voucher
from shoparena.records.calls import CallRecord, Origin

ERROR_PREFIX = "Error: "


def load_shops(catalog_dir: Path | str) -> dict[str, Shop]:
    """Shop records of a catalogue directory by id; empty when it has no shops.jsonl."""
    from shoparena.index.catalog_dir import SHOPS_FILE, read_shops

    if not (Path(catalog_dir) / SHOPS_FILE).exists():
        return {}
    return {shop.shop_id: shop for shop in read_shops(catalog_dir)}


def observation_text(result: Any) -> str:
    return result if isinstance(result, str) else jsontext.dumps(result)


class Episode:
    """The harness for one problem. Drive it with `call` (one tool call) or `run_turn` (one model output)."""

    def __init__(
        self,
        backend: CatalogBackend,
        query: str,
        *,
        profile: str = "oro7",
        step_cap: int | None = None,
        voucher: Voucher | None = None,
        shops: Mapping[str, Shop] | None = None,
        problem_id: str | None = None,
        system_prompt: str | None = None,
    ):
        self.profile = profile
        self.tool_names = profile_tools(profile)
        self.step_cap = step_cap if step_cap is not None else DEFAULT_STEP_CAPS[profile]
        if self.step_cap < 1:
            raise ValueError(f"step_cap must be at least 1, got {self.step_cap}")
        self.query = query
        self.problem_id = problem_id
        self._ctx = ToolContext(backend=backend, shops=shops or {}, voucher=voucher)
        self._calls: list[CallRecord] = []
        self._turns: list[ParsedTurn] = []
        self._messages: list[dict] = []
        if system_prompt:
            self._messages.append({"role": "system", "content": system_prompt})
        self._messages.append({"role": "user", "content": query})
        self._used_ids: set[str] = set()
        self.steps_used = 0
        self.recommended_product_ids: list[str] | None = None
        self.recommended_at_step: int | None = None
        self.terminated: str | None = None
        self.end_reason: str | None = None

    @classmethod
    def for_problem(
        cls,
        problem: Problem,
        backend: CatalogBackend,
        *,
        profile: str = "oro7",
        step_cap: int | None = None,
        shops: Mapping[str, Shop] | None = None,
        system_prompt: str | None = None,
    ) -> Episode:
        """An episode that sees the problem's query and voucher only."""
        return cls(
            backend,
            problem.query,
            profile=profile,
            step_cap=step_cap,
            voucher=problem.voucher,
            shops=shops,
            problem_id=problem.problem_id,
            system_prompt=system_prompt,
        )

    # -- views -----------------------------------------------------------------------------------
    @property
    def tools(self) -> list[dict]:
        """OpenAI function schemas of this episode's profile."""
        return tool_schemas(self.profile)

    @property
    def ended(self) -> bool:
        return self.end_reason is not None

    @property
    def calls(self) -> list[CallRecord]:
        return list(self._calls)

    @property
    def turns(self) -> list[ParsedTurn]:
        """Every model output `run_turn` parsed, in order (format checks read these)."""
        return list(self._turns)

    @property
    def messages(self) -> list[dict]:
        """The trace in OpenAI chat format: system?, user query, assistant (tool_calls) and tool messages."""
        return list(self._messages)

    def summary(self) -> EpisodeSummary:
        return EpisodeSummary(
            problem_id=self.problem_id,
            query=self.query,
            profile=self.profile,
            step_cap=self.step_cap,
            steps_used=self.steps_used,
            recommended_product_ids=self.recommended_product_ids,
            recommended_at_step=self.recommended_at_step,
            terminated=self.terminated,
            ended=self.ended,
            end_reason=self.end_reason,
            calls=self.calls,
        )

    # -- driving -----------------------------------------------------------------------------------
    def call(
        self,
        name: str,
        arguments: dict[str, Any] | str | None = None,
        origin: Origin = "llm",
        call_id: str | None = None,
    ) -> Observation:
        """Execute one tool call as one step; `arguments` is a dict or its JSON text."""
        parsed = ParsedCall(name=name, id=call_id)
        raw: str | None = None
        if isinstance(arguments, str):
            raw = arguments
            parsed = _call_from_json(name, arguments, call_id)
        elif arguments is None or isinstance(arguments, dict):
            parsed.arguments = arguments or {}
        else:
            parsed.error = f"{name}: arguments must be a JSON object, got {type(arguments).__name__}"
        counted = not self.ended
        step = self._begin_step()
        observation = self._dispatch(step, parsed, origin, counted, raw)
        self._append_exchange(None, None, [parsed], [observation])
        self._end_step(counted)
        return observation

    def run_turn(self, protocol: Any, model_output: Any, origin: Origin = "llm") -> list[Observation]:
        """Parse one model output with `protocol` (an object or its name), execute its calls, one step.

        Returns the observations in call order; render them back with `protocol.render_observations`.
        """
        from shoparena.harness.protocols import get_protocol

        turn = get_protocol(protocol).parse(model_output)
        self._turns.append(turn)
        counted = not self.ended
        step = self._begin_step()
        observations = [
            self._dispatch(step, call, origin, counted and not self.ended, None) for call in turn.calls
        ]
        self._append_exchange(turn.thinking, turn.content, turn.calls, observations)
        self._end_step(counted)
        return observations

    # -- internals ---------------------------------------------------------------------------------
    def _begin_step(self) -> int:
        return self.steps_used + 1 if not self.ended else self.steps_used

    def _end_step(self, counted: bool) -> None:
        if not counted:
            return
        self.steps_used += 1
        if not self.ended and self.steps_used >= self.step_cap:
            self.end_reason = f"step cap reached: {self.step_cap} steps used without terminate"

    def _new_call_id(self, wanted: str | None) -> str:
        if wanted and wanted not in self._used_ids:
            call_id = wanted
        else:
            call_id = f"call_{len(self._calls) + 1}"
            while call_id in self._used_ids:
                call_id += "_"
        self._used_ids.add(call_id)
        return call_id

    def _dispatch(
        self, step: int, call: ParsedCall, origin: Origin, counted: bool, raw: str | None
    ) -> Observation:
        started = time.perf_counter()
        call_id = self._new_call_id(call.id)
        call.id = call_id
        result: Any = None
        error: str | None = None
        try:
            if not counted:
                error = f"the episode has ended ({self.end_reason}); no further tool calls are executed"
            elif call.error is not None:
                error = call.error
            else:
                result = self._execute(call.name, call.arguments or {})
        except (ArgumentError, ToolError) as exc:
            error = str(exc)
        except Exception as exc:  # a tool bug must not end the episode; the log keeps what happened
            error = f"{call.name}: internal error: {type(exc).__name__}: {exc}"
        latency = time.perf_counter() - started
        self._calls.append(
            CallRecord(
                step=step,
                call_id=call_id,
                name=call.name,
                arguments=call.arguments,
                raw_arguments=raw if raw is not None else (call.raw or None) if call.error else None,
                result=result,
                error=error,
                latency_s=latency,
                origin=origin,
                counted=counted,
            )
        )
        if error is not None:
            return Observation(
                call_id=call_id, name=call.name, ok=False, error=error, text=ERROR_PREFIX + error
            )
        return Observation(
            call_id=call_id, name=call.name, ok=True, result=result, text=observation_text(result)
        )

    def _execute(self, name: str, arguments: dict[str, Any]) -> Any:
        spec = TOOL_SPECS.get(name)
        if name not in self.tool_names:
            valid = ", ".join(self.tool_names)
            if spec is None:
                raise ToolError(f"unknown tool {name!r}; valid tools: {valid}")
            raise ToolError(f"tool {name!r} is not available in profile {self.profile}; valid tools: {valid}")
        bound = bind_arguments(name, spec.params, arguments)
        if name == "recommend_product":
            return self._recommend(bound["product_ids"])
        if name == "terminate":
            return self._terminate(bound["status"])
        return STATELESS_TOOLS[name](self._ctx, **bound)

    def _recommend(self, product_ids: str) -> str:
        if self.recommended_product_ids is not None:
            raise ToolError(
                f"recommend_product was already called at step {self.recommended_at_step} with "
                f"{','.join(self.recommended_product_ids)}; it can be called once and the first "
                "recommendation stands"
            )
        ids = split_ids(product_ids)
        if not ids:
            raise ToolError("recommend_product: product_ids is empty; give ids like '123,456'")
        self.recommended_product_ids = ids
        self.recommended_at_step = self.steps_used + 1
        return f"Having recommended the products to the user: {','.join(ids)}."

    def _terminate(self, status: str) -> str:
        self.terminated = status
        self.end_reason = f"terminated with status {status}"
        return f"The interaction has been completed with status: {status}"

    def _append_exchange(
        self,
        thinking: str | None,
        content: str | None,
        calls: list[ParsedCall],
        observations: list[Observation],
    ) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if thinking is not None:
            message["reasoning_content"] = thinking
        if calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _arguments_text(call)},
                }
                for call in calls
            ]
        self._messages.append(message)
        for observation in observations:
            self._messages.append(
                {
                    "role": "tool",
                    "tool_call_id": observation.call_id,
                    "name": observation.name,
                    "content": observation.text,
                }
            )


def _call_from_json(name: str, text: str, call_id: str | None) -> ParsedCall:
    try:
        value = jsontext.loads(text) if text.strip() else {}
    except ValueError as exc:
        return ParsedCall(
            name=name, id=call_id, raw=text, error=f"{name}: arguments are not valid JSON ({exc})"
        )
    if not isinstance(value, dict):
        return ParsedCall(
            name=name,
            id=call_id,
            raw=text,
            error=f"{name}: arguments must be a JSON object, got {text[:80]!r}",
        )
    return ParsedCall(name=name, id=call_id, arguments=value, raw=text)


def _arguments_text(call: ParsedCall) -> str:
    if call.arguments is None:
        return call.raw
    return jsontext.dumps(call.arguments)
