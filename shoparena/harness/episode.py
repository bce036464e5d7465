"""One problem's run through the harness: tool dispatch, episode state, the verified call log, the trace.

An `Episode` never raises on anything a model or an agent sends it: bad JSON, an unknown or
out-of-profile tool, a missing or mistyped argument, a second recommendation, a call after the end —
each becomes an error observation that says what is wrong, and the episode goes on. Only the query and
the voucher of a problem are kept; the reward never enters the harness.

A step is one model turn (`run_turn`, however many calls it holds) or one direct `call`.

What the episode stores (the call log and the trace) is bounded and always writable, whatever the
agent sends (`record_limits`): arguments that cannot be used (a lone surrogate, nesting deeper than
the cap, an integer beyond 64 bits) or that are too large are refused with an error observation;
stored results and texts are cut to caps within a per-episode budget; only the first few calls
after the end are recorded. Every cut is said in the entry's `cut` (and in `notes`).

Grounding (issue 22): a call naming product ids (recommend, view, check) of which some no earlier
search of the episode returned still runs, and its entry says `ungrounded` (strict scoring scores such
a recommendation 0). Every result the agent was given is also kept as `shown`, what the inference
proxy verifies a chat request's tool messages against (`verified_history`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shoparena.catalog.models import Shop
from shoparena.harness import jsontext
from shoparena.harness.models import EpisodeSummary, Observation, ParsedCall, ParsedTurn, Refusal
from shoparena.harness.params import ArgumentError, bind_arguments
from shoparena.harness.record_limits import (
    DEFAULT_LIMITS,
    SURROGATES,
    RecordLimits,
    StoreBudget,
    argument_problem,
    clean_text,
    encode,
    prefix,
)
from shoparena.harness.tool_specs import DEFAULT_STEP_CAPS, TOOL_SPECS, profile_tools, tool_schemas
from shoparena.harness.tools import STATELESS_TOOLS, ToolContext, ToolError, split_ids
from shoparena.harness.verified_history import (
    SEARCH_TOOLS,
    ShownResult,
    product_ids_in_arguments,
    product_ids_in_value,
)
from shoparena.index.backend import CatalogBackend
from shoparena.problems.models import Problem, Voucher
from shoparena.records.calls import UNGROUNDED_REASON, CallRecord, Origin

ERROR_PREFIX = "Error: "
MAX_NAME_BYTES = 128
"""A stored tool name or call id is cut here (real ones are a few words)."""
CUT_MARK = " …[cut by the harness]"
"""Ends a trace text the record holds only part of; the call's `cut` says how much was left out."""


def load_shops(catalog_dir: Path | str) -> dict[str, Shop]:
    """Shop records of a catalogue directory by id; empty when it has no shops.jsonl."""
    from shoparena.index.catalog_dir import read_shops
    from shoparena.index.catalog_files import SHOPS_FILE

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
        limits: RecordLimits | None = None,
    ):
        self.profile = profile
        self.tool_names = profile_tools(profile)
        self.step_cap = step_cap if step_cap is not None else DEFAULT_STEP_CAPS[profile]
        if self.step_cap < 1:
            raise ValueError(f"step_cap must be at least 1, got {self.step_cap}")
        self.query = query
        self.problem_id = problem_id
        self.limits = limits or DEFAULT_LIMITS
        self._ctx = ToolContext(backend=backend, shops=shops or {}, voucher=voucher)
        self._calls: list[CallRecord] = []
        self._turns: list[ParsedTurn] = []
        self._messages: list[dict] = []
        self._budget = StoreBudget(self.limits)
        self._notes: list[str] = []
        self._late_calls = 0
        self._unrecorded = 0
        self._drop_anchor: tuple[CallRecord, str | None] | None = None
        if system_prompt:
            self._messages.append({"role": "system", "content": clean_text(system_prompt)})
        self._messages.append({"role": "user", "content": clean_text(query)})
        self._used_ids: set[str] = set()
        self._shown: list[ShownResult] = []
        self._searched: set[str] = set()
        """Product ids the episode's searches have returned so far (what grounds an id)."""
        self.recommendation_ungrounded: str | None = None
        """The `ungrounded` reason of the recommendation that stands, when it was ungrounded."""
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
        limits: RecordLimits | None = None,
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
            limits=limits,
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
    def shown(self) -> list[ShownResult]:
        """Every result the episode answered a call with, as the agent got it (in call order): what a
        chat request's tool messages are verified against (`verified_history`)."""
        return list(self._shown)

    @property
    def turns(self) -> list[ParsedTurn]:
        """Every model output `run_turn` parsed, in order (format checks read these)."""
        return list(self._turns)

    @property
    def messages(self) -> list[dict]:
        """The trace in OpenAI chat format: system?, user query, assistant (tool_calls) and tool messages."""
        return list(self._messages)

    @property
    def notes(self) -> list[str]:
        """What the harness left out of this episode's record, beyond each call's own `cut`."""
        notes = list(self._notes)
        if self._unrecorded:
            notes.append(
                f"{self._unrecorded} call(s) made after the end were refused and not recorded (only the "
                f"first {self.limits.max_calls_after_end} after the end are)"
            )
        if self._budget.spent:
            notes.append(
                f"the record budget of {self.limits.max_episode_bytes:,} bytes was spent; later results "
                f"and texts are stored as previews of {self.limits.preview_bytes:,} bytes"
            )
        return notes

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
            notes=self.notes,
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
        self._close_full_log()
        counted = not self.ended
        step = self._begin_step()
        observation, stored = self._dispatch(step, parsed, origin, counted, raw)
        if stored is not None:
            self._append_exchange(step, None, None, [stored])
        self._end_step(counted)
        return observation

    def run_turn(self, protocol: Any, model_output: Any, origin: Origin = "llm") -> list[Observation]:
        """Parse one model output with `protocol` (an object or its name), execute its calls, one step.

        Returns the observations in call order; render them back with `protocol.render_observations`.
        """
        from shoparena.harness.protocols import get_protocol

        turn = get_protocol(protocol).parse(model_output)
        self._turns.append(turn)
        self._close_full_log()
        counted = not self.ended
        dropping = not counted and self._late_calls >= self.limits.max_calls_after_end
        step = self._begin_step()
        observations, stored = [], []
        for call in turn.calls:
            self._close_full_log()
            observation, kept = self._dispatch(step, call, origin, counted and not self.ended, None)
            observations.append(observation)
            if kept is not None:
                stored.append(kept)
        if stored or not dropping:
            self._append_exchange(step, turn.thinking, turn.content, stored)
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

    def _close_full_log(self) -> None:
        if not self.ended and len(self._calls) >= self.limits.max_calls:
            self.end_reason = f"call log cap reached: {self.limits.max_calls} calls recorded"

    def _new_call_id(self, wanted: str | None) -> tuple[str, str | None]:
        note = None
        if wanted and (len(wanted) > MAX_NAME_BYTES or SURROGATES.search(wanted)):
            note, wanted = "the agent's call id was not usable (over 128 characters or invalid text)", None
        if wanted and wanted not in self._used_ids:
            call_id = wanted
        else:
            call_id = f"call_{len(self._calls) + 1}"
            while call_id in self._used_ids:
                call_id += "_"
        self._used_ids.add(call_id)
        return call_id, note

    def _dispatch(
        self, step: int, call: ParsedCall, origin: Origin, counted: bool, raw: str | None
    ) -> tuple[Observation, _Stored | None]:
        """Run one call; the observation for the agent and what the record keeps (None: not kept)."""
        started = time.perf_counter()
        call_id, id_note = self._new_call_id(call.id)
        call.id = call_id
        result: Any = None
        error: str | None = None
        refused: Refusal | None = None
        ungrounded: str | None = None
        try:
            if not counted:
                refused = "ended"
                error = f"the episode has ended ({self.end_reason}); no further tool calls are executed"
            elif call.error is not None:
                refused, error = "malformed", call.error
            else:
                problem = argument_problem(call.arguments or {}, self.limits)
                if problem is not None:
                    refused, error = "unusable", f"{call.name}: {problem}; the call was not executed"
                else:
                    ungrounded = self._ungrounded(call.name, call.arguments)
                    result = self._execute(call.name, call.arguments or {}, ungrounded)
        except _NotInProfile as exc:
            refused, error = "unknown_tool", str(exc)
        except ArgumentError as exc:
            refused, error = "bad_arguments", str(exc)
        except ToolError as exc:
            error = str(exc)
        except Exception as exc:  # a tool bug must not end the episode; the log keeps what happened
            error = f"{call.name}: internal error: {type(exc).__name__}: {exc}"
        latency = time.perf_counter() - started
        name = clean_text(call.name)
        data: bytes | None = None
        if error is not None:
            error = clean_text(error)
            observation = Observation(
                call_id=call_id, name=name, ok=False, error=error, text=ERROR_PREFIX + error, refused=refused
            )
        else:
            # catalogue data and checked arguments, but a JSON-string argument the tool decodes can
            # still carry a surrogate into a result: the agent is answered with what can be written
            result, data = encode(result, self.limits.max_depth)
            text = result if isinstance(result, str) else data.decode()
            observation = Observation(call_id=call_id, name=name, ok=True, result=result, text=text)
            self._shown.append(ShownResult(call_id, name, origin, text, result))
            if name in SEARCH_TOOLS:
                product_ids_in_value(result, self._searched)
        raw_text = raw if raw is not None else (call.raw or None) if call.error else None
        stored = self._store(step, call, observation, data, origin, counted, raw_text, latency, id_note)
        if stored is not None and ungrounded is not None and refused is None:
            stored.record.ungrounded = ungrounded
        return observation, stored

    def _store(
        self,
        step: int,
        call: ParsedCall,
        observation: Observation,
        result_json: bytes | None,
        origin: Origin,
        counted: bool,
        raw: str | None,
        latency: float,
        id_note: str | None,
    ) -> _Stored | None:
        """The call log entry and trace texts of one call, within the episode's caps."""
        limits, budget = self.limits, self._budget
        if not counted:
            self._late_calls += 1
            if self._late_calls > limits.max_calls_after_end:
                self._unrecorded += 1
                self._mark_unrecorded()
                return None
        cuts = [id_note] if id_note else []
        name, note = budget.text(call.name, "tool name", cap=MAX_NAME_BYTES)
        cuts.append(note)
        arguments: dict[str, Any] | None = None
        arguments_text: str | None = None
        if call.arguments is not None:
            value, data = encode(call.arguments, limits.max_depth)
            room = budget.room()
            if len(data) > min(limits.max_argument_bytes, room):
                raw = prefix(data, limits.preview_bytes)
                why = (
                    f"over the {limits.max_argument_bytes:,}-byte limit"
                    if len(data) > limits.max_argument_bytes
                    else f"the episode's record budget of {limits.max_episode_bytes:,} bytes is spent"
                )
                cuts.append(
                    f"arguments of {len(data):,} bytes ({why}) kept as the first "
                    f"{limits.preview_bytes:,} bytes of their JSON text in raw_arguments"
                )
            else:
                arguments, arguments_text = value, data.decode()
                budget.used += len(data)
                if value is not call.arguments:
                    cuts.append("arguments: unusable parts replaced (see the error)")
        raw, note = budget.text(raw, "raw arguments", cap=limits.max_argument_bytes)
        cuts.append(note)
        result = None
        if observation.ok:
            result, note = budget.value(observation.result, "result", result_json)
            cuts.append(note)
        error, note = budget.text(observation.error, "error")
        cuts.append(note)
        cut = "; ".join(c for c in cuts if c) or None
        record = CallRecord(
            step=step,
            call_id=observation.call_id,
            name=name or "",
            arguments=arguments,
            raw_arguments=raw,
            result=result,
            error=error,
            latency_s=latency,
            origin=origin,
            counted=counted,
            cut=cut,
        )
        self._calls.append(record)
        # the observation is already clean, so anything the budget changed was cut for size
        # and the JSON already encoded above is reused rather than encoded again
        if error is not None:
            content = ERROR_PREFIX + error + (CUT_MARK if error is not observation.error else "")
        elif result is observation.result:
            content = observation.text
        else:
            content = observation_text(result) + CUT_MARK
        return _Stored(record, arguments_text if arguments_text is not None else raw or "", content)

    def _mark_unrecorded(self) -> None:
        """Say on the last stored entry how many later calls were not recorded."""
        if self._drop_anchor is None:
            if not self._calls:
                return
            self._drop_anchor = (self._calls[-1], self._calls[-1].cut)
        record, own = self._drop_anchor
        dropped = (
            f"{self._unrecorded} later call(s) after the end were refused and not recorded (only the "
            f"first {self.limits.max_calls_after_end} after the end are)"
        )
        record.cut = f"{own}; {dropped}" if own else dropped

    def _ungrounded(self, name: str, arguments: dict[str, Any] | None) -> str | None:
        """Grounded answers (issue 22): the reason a call's product ids are not grounded, when some
        appeared in no search result of this episode so far; None for a grounded call or one that
        names no product. The call still runs (upstream semantics); strict scoring reads the flag."""
        ids = product_ids_in_arguments(name, arguments)
        missing = list(dict.fromkeys(pid for pid in ids if pid not in self._searched))
        if not missing:
            return None
        named = ", ".join(clean_text(pid)[:64] for pid in missing[:10])
        return f"{UNGROUNDED_REASON}: {named}" + (
            f" (+{len(missing) - 10} more)" if len(missing) > 10 else ""
        )

    def _execute(self, name: str, arguments: dict[str, Any], ungrounded: str | None = None) -> Any:
        spec = TOOL_SPECS.get(name)
        if name not in self.tool_names:
            valid = ", ".join(self.tool_names)
            if spec is None:
                raise _NotInProfile(f"unknown tool {name!r}; valid tools: {valid}")
            raise _NotInProfile(
                f"tool {name!r} is not available in profile {self.profile}; valid tools: {valid}"
            )
        bound = bind_arguments(name, spec.params, arguments)
        if name == "recommend_product":
            return self._recommend(bound["product_ids"], ungrounded)
        if name == "terminate":
            return self._terminate(bound["status"])
        return STATELESS_TOOLS[name](self._ctx, **bound)

    def _recommend(self, product_ids: str, ungrounded: str | None = None) -> str:
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
        self.recommendation_ungrounded = ungrounded
        return f"Having recommended the products to the user: {','.join(ids)}."

    def _terminate(self, status: str) -> str:
        self.terminated = status
        self.end_reason = f"terminated with status {status}"
        return f"The interaction has been completed with status: {status}"

    def _model_text(self, step: int, text: str | None, what: str) -> str | None:
        stored, note = self._budget.text(text, what)
        if note:
            self._notes.append(f"step {step}: {note}")
            if stored is not None and stored != clean_text(text or ""):
                stored += CUT_MARK
        return stored

    def _append_exchange(
        self, step: int, thinking: str | None, content: str | None, stored: list[_Stored]
    ) -> None:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": self._model_text(step, content, "model content"),
        }
        if thinking is not None:
            message["reasoning_content"] = self._model_text(step, thinking, "model reasoning")
        if stored:
            message["tool_calls"] = [
                {
                    "id": entry.record.call_id,
                    "type": "function",
                    "function": {"name": entry.record.name, "arguments": entry.arguments_text},
                }
                for entry in stored
            ]
        self._messages.append(message)
        for entry in stored:
            self._messages.append(
                {
                    "role": "tool",
                    "tool_call_id": entry.record.call_id,
                    "name": entry.record.name,
                    "content": entry.content,
                }
            )


class _NotInProfile(ToolError):
    """No such tool in this episode's profile (a refusal of the call, not of the tool)."""


@dataclass
class _Stored:
    """One call as the record keeps it: its log entry and its texts in the trace."""

    record: CallRecord
    arguments_text: str
    content: str


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
