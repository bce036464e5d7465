"""The verified inference proxy (SPEC §6): the one way agent code behind the tool server reaches a model.

`POST /v1/inference/chat/completions` (OpenAI Chat Completions, no streaming) is mounted on the tool
server beside the tools and authenticated with the same session token, so every request belongs to
one episode. The proxy forwards allowlisted models to their upstream (`inference_upstreams`) and, per
episode, enforces:

- the model allowlist: another model is refused with 403 (the error lists the allowed ones);
- request caps: a body over `max_request_bytes` (413), more than `max_messages` messages, `stream`,
  `n` other than 1, a parameter not on the forwarded list (400); a request's `max_tokens` is lowered
  to `max_completion_tokens` and to what the token budget has left;
- one request in flight per episode, at most `max_requests` per episode, and a token-bucket rate of
  `requests_per_minute` with a burst of `burst` (429; the rate refusal carries `Retry-After`);
- a token budget per episode (prompt + completion tokens as the upstream reports them): once spent, or
  when a request's prompt alone would overrun it, requests are refused with 429;
- nothing after the episode has ended (409).

Every request, refused or served, is an entry of the episode's verified inference log
(`inference_log`): the request's SHA-256, size and message count, the model, the upstream, the
status, tokens, latency, and the response's reasoning, content and tool calls (texts capped). The tool
calls of each served response are offered to the episode's call ledger before the response is
returned, which is what lets a later tool call be recorded as `llm` (`harness.call_ledger`).

`GET /v1/inference/models` lists the allowed models, OpenAI-style.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from shoparena.harness import jsontext
from shoparena.harness.call_ledger import OfferedCall, canonical_arguments, response_tool_calls
from shoparena.harness.record_limits import clean_text
from shoparena.harness.tool_routes import Refusal, client_gone, current_session, read_body, reply
from shoparena.harness.tool_session import ToolSession
from shoparena.harness.verified_history import HistoryCheck, HistoryVerdict
from shoparena.inference.reference_model import SUBNET_MODEL_NAMES
from shoparena.inference.upstreams import EpisodeContext, Upstream, UpstreamError, make_upstream
from shoparena.records.inference import (
    InferenceEntry,
    InferenceLog,
    InferenceToolCall,
)

CHAT_PATH = "/v1/inference/chat/completions"
MODELS_PATH = "/v1/inference/models"
STATE_KEY = "inference_proxy"
CHARS_PER_TOKEN = 4
DEFAULT_OFFLINE_MODELS = {
    "reference-agentic": "offline:reference-agentic",
    "reference-agentic-tags": "offline:reference-agentic-tags",
    "reference-agentic-qwen3": "offline:reference-agentic-qwen3",
    "reference-agentic-auto": "offline:reference-agentic-auto",
    **{name: "offline:reference-agentic-auto" for name in SUBNET_MODEL_NAMES},
}
"""The allowlist when none is configured: the offline reference models (for tests and demos), also
under SN15's model names, so a subnet miner's default model answers offline (issue 23)."""
FORWARDED_PARAMS = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "repetition_penalty",
        "response_format",
        "chat_template_kwargs",
        "n",
        "stream",
        "user",
    }
)
"""Request keys the proxy passes on; anything else is refused (it could change cost or routing)."""


class ProxyLimits(BaseModel):
    """Per-episode limits of the inference proxy."""

    model_config = ConfigDict(extra="forbid")

    max_requests: int = Field(default=64, ge=1)
    requests_per_minute: float = Field(default=120.0, gt=0)
    burst: int = Field(default=16, ge=1)
    token_budget: int = Field(default=400_000, ge=1)
    """Prompt plus completion tokens one episode may use."""
    max_completion_tokens: int = Field(default=4096, ge=1)
    max_request_bytes: int = Field(default=1 << 20, ge=1024)
    max_messages: int = Field(default=512, ge=1)
    max_text_chars: int = Field(default=16_384, ge=64)
    """Per stored response text (reasoning, content, one call's arguments)."""
    max_log_chars: int = Field(default=1_000_000, ge=1024)
    """All stored response texts of an episode; past it, texts are kept as previews."""
    preview_chars: int = Field(default=512, ge=16)
    max_logged_calls: int = Field(default=64, ge=1)
    """Tool calls of one response stored in the log (all of them are offered to the ledger)."""
    max_refused_entries: int = Field(default=16, ge=0)
    """Refused requests stored in the log; later ones are counted only."""


@dataclass
class _RateBucket:
    """Token bucket: `burst` requests at once, refilled at `per_minute`."""

    per_minute: float
    burst: int
    tokens: float = -1.0
    at: float = 0.0

    def take(self, now: float) -> float | None:
        """None when a request may go now, else the seconds until one may."""
        if self.tokens < 0:
            self.tokens, self.at = float(self.burst), now
        rate = self.per_minute / 60.0
        self.tokens = min(float(self.burst), self.tokens + (now - self.at) * rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return None
        return (1.0 - self.tokens) / rate


@dataclass
class _Served:
    """A stored entry and the offered calls whose use fills its `used_by` when the log is read."""

    entry: InferenceEntry
    offered: dict[int, OfferedCall] = field(default_factory=dict)


@dataclass
class ProxySession:
    """The proxy's state for one episode (kept in the tool session's `state`)."""

    limits: ProxyLimits
    opened_at: float = field(default_factory=time.monotonic)
    busy: threading.Lock = field(default_factory=threading.Lock)
    """Held while a request is in flight: one at a time per episode."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    rate: _RateBucket | None = None
    requests: int = 0
    forwarded: int = 0
    served: int = 0
    failed: int = 0
    refused: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    entries: list[_Served] = field(default_factory=list)
    refusals_stored: int = 0
    refused_unstored: int = 0
    text_chars: int = 0
    """Characters of response text stored so far (against `max_log_chars`)."""
    history: HistoryCheck = field(default_factory=HistoryCheck)
    """Verifies each request's tool messages against the episode's real results."""
    unshown_id_calls: int = 0

    @property
    def tokens_used(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def arrive(self) -> int:
        """Count a request; its sequence number."""
        with self.lock:
            self.requests += 1
            return self.requests


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


class InferenceProxy:
    """The proxy: an allowlist of models → upstreams, and per-episode limits. Mount `router` on a
    ToolServer; read an episode's log with `log_of(session)` (or `log_of_state(state)`)."""

    def __init__(
        self,
        models: Mapping[str, Upstream | str] | None = None,
        *,
        limits: ProxyLimits | None = None,
        default_model: str | None = None,
        api_key_env: str | None = None,
    ):
        specs = dict(models) if models is not None else dict(DEFAULT_OFFLINE_MODELS)
        if not specs:
            raise ValueError("the inference proxy needs at least one allowed model")
        self.models: dict[str, Upstream] = {
            name: make_upstream(upstream, api_key_env=api_key_env) if isinstance(upstream, str) else upstream
            for name, upstream in specs.items()
        }
        self.default_model = default_model or next(iter(self.models))
        if self.default_model not in self.models:
            raise ValueError(f"default model {self.default_model!r} is not in the allowlist")
        self.limits = limits or ProxyLimits()
        self.router = self._build_router()

    def close(self) -> None:
        """Release the upstreams' connections (the proxy stays usable; they reconnect)."""
        for upstream in self.models.values():
            upstream.close()

    # -- sessions ------------------------------------------------------------------------------------
    def new_state(self) -> dict[str, Any]:
        """The `state` to register an episode's tool session with (opens its clock now)."""
        return {STATE_KEY: ProxySession(self.limits)}

    def session_state(self, session: ToolSession) -> ProxySession:
        state = session.state.get(STATE_KEY)
        if not isinstance(state, ProxySession):
            state = session.state.setdefault(STATE_KEY, ProxySession(self.limits))
        return state

    def log_of(self, session: ToolSession) -> InferenceLog:
        """The verified inference log of an episode's session (read it once the agent has stopped)."""
        return inference_log(session, self.limits)

    # -- the routes ----------------------------------------------------------------------------------
    def _build_router(self) -> APIRouter:
        router = APIRouter()

        @router.get(MODELS_PATH)
        async def list_models(session: ToolSession = Depends(current_session)) -> Response:
            data = [{"id": name, "object": "model", "owned_by": "shoparena"} for name in self.models]
            return reply(200, {"object": "list", "data": data, "default": self.default_model})

        @router.post(CHAT_PATH)
        async def chat(request: Request) -> Response:
            # the session is looked up here rather than through Depends: FastAPI's dependency solver
            # costs more per request than everything the proxy itself does
            session = await current_session(request)
            state = self.session_state(session)
            arrived = time.monotonic()
            try:
                body = await read_body(request, self.limits.max_request_bytes)
            except Refusal as exc:
                length = request.headers.get("content-length") or ""
                size = int(length) if length.isdigit() else 0
                self._log_refusal(
                    session, state, state.arrive(), arrived, None, size, exc.status, exc.message
                )
                raise
            except ClientDisconnect:
                return client_gone(request, "before sending the whole inference request")
            status, payload, headers = await run_in_threadpool(self.handle, session, state, body, arrived)
            if await request.is_disconnected():
                return client_gone(request, "before the inference reply; it was logged")
            return reply(status, payload, headers=headers)

        return router

    # -- one request ---------------------------------------------------------------------------------
    def handle(
        self, session: ToolSession, state: ProxySession, body: bytes, arrived: float
    ) -> tuple[int, dict[str, Any], dict[str, str] | None]:
        """One request, start to end, in a worker thread: (status, JSON reply, headers)."""
        seq = state.arrive()
        request = _Request(seq=seq, arrived=arrived, digest=hashlib.sha256(body).hexdigest(), size=len(body))
        if not state.busy.acquire(blocking=False):
            refusal = _Refused(
                429, "another inference request of this episode is in flight; send one at a time"
            )
            return self._refuse(session, state, request, refusal)
        try:
            return self._handle(session, state, body, request)
        finally:
            state.busy.release()

    def _handle(
        self, session: ToolSession, state: ProxySession, body: bytes, request: _Request
    ) -> tuple[int, dict[str, Any], dict[str, str] | None]:
        try:
            parsed = self._parse(body)
            request.messages = len(parsed["messages"])
            request.model = parsed.get("model") if isinstance(parsed.get("model"), str) else None
            upstream, request.model = self._route(request.model)
            forwarded = self._admit(session, state, parsed, request.model, request.arrived)
        except _Refused as refusal:
            return self._refuse(session, state, request, refusal)

        episode = session.episode
        context = EpisodeContext(step_cap=episode.step_cap, tool_names=episode.tool_names)
        calls_before = len(episode.calls)
        # what the model is shown, checked before it answers: the results the episode has given so far
        history = state.history.check(parsed["messages"], episode.shown)
        started = time.perf_counter()
        try:
            response: dict[str, Any] = upstream.complete(forwarded, context)
            error: UpstreamError | None = None
        except UpstreamError as exc:
            response, error = {}, exc
        except Exception as exc:  # an upstream bug is the upstream's failure, not a crash of the server
            response, error = {}, UpstreamError(502, f"the upstream failed: {type(exc).__name__}: {exc}")
        base = {
            "seq": request.seq,
            "at_s": request.arrived - state.opened_at,
            "calls_before": calls_before,
            "model": request.model,
            "upstream": upstream.label,
            "request_sha256": request.digest,
            "request_bytes": request.size,
            "request_messages": request.messages,
            "latency_s": time.perf_counter() - started,
            "tool_messages": history.tool_messages,
            "unverified_tool_messages": history.unverified,
        }
        if error is not None:
            entry = InferenceEntry(status=error.status, outcome="upstream_error", error=error.message, **base)
            with state.lock:
                state.failed += 1
                state.entries.append(_Served(entry))
            return error.status, {"ok": False, "error": error.message}, None
        self._served(session, state, forwarded, response, base, history)
        return 200, response, None

    def _parse(self, body: bytes) -> dict[str, Any]:
        try:
            request = jsontext.loads(body.decode("utf-8", errors="replace")) if body.strip() else None
        except ValueError as exc:
            raise _Refused(400, f"the request body is not JSON ({exc})") from None
        if not isinstance(request, dict):
            raise _Refused(400, "the request body must be a JSON object with 'messages'")
        unknown = sorted(str(key) for key in request if key not in FORWARDED_PARAMS)
        if unknown:
            raise _Refused(
                400,
                f"unsupported parameter(s) {', '.join(repr(k[:40]) for k in unknown[:5])}; allowed: "
                + ", ".join(sorted(FORWARDED_PARAMS)),
            )
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _Refused(400, "'messages' must be a non-empty list of chat messages")
        if len(messages) > self.limits.max_messages:
            raise _Refused(
                400, f"{len(messages)} messages exceed the limit of {self.limits.max_messages} per request"
            )
        if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
            raise _Refused(400, "every message must be an object with a 'role'")
        if request.get("stream"):
            raise _Refused(400, "streaming is not supported by the inference proxy; send stream=false")
        if request.get("n", 1) != 1:
            raise _Refused(400, "n must be 1: one completion per request")
        if not isinstance(request.get("model"), str | None):
            raise _Refused(400, "'model' must be a string")
        return request

    def _route(self, model: str | None) -> tuple[Upstream, str]:
        name = model or self.default_model
        upstream = self.models.get(name)
        if upstream is None:
            raise _Refused(
                403,
                f"model {name[:200]!r} is not allowed by the inference proxy; allowed: {', '.join(self.models)}",
            )
        return upstream, name

    def _admit(
        self, session: ToolSession, state: ProxySession, request: dict[str, Any], model: str, now: float
    ) -> dict[str, Any]:
        """The checks that depend on the episode's state; counts the request as forwarded when it passes."""
        limits = self.limits
        if session.episode.ended:
            raise _Refused(409, f"the episode has ended ({session.episode.end_reason}); no more inference")
        prompt = math.ceil(len(jsontext.dumps(request["messages"])) / CHARS_PER_TOKEN)
        with state.lock:
            if state.forwarded >= limits.max_requests:
                raise _Refused(429, f"this episode's {limits.max_requests} inference requests are used up")
            left = limits.token_budget - state.tokens_used
            if left <= 0:
                raise _Refused(429, f"this episode's token budget of {limits.token_budget:,} tokens is spent")
            if prompt >= left:
                raise _Refused(
                    429,
                    f"this request's prompt (~{prompt:,} tokens) does not fit the {left:,} tokens left of "
                    f"this episode's budget of {limits.token_budget:,}",
                )
            if state.rate is None:
                state.rate = _RateBucket(limits.requests_per_minute, limits.burst)
            wait = state.rate.take(now)
            if wait is not None:
                raise _Refused(
                    429,
                    f"rate limit of {limits.requests_per_minute:g} requests per minute (burst {limits.burst}) "
                    f"reached; retry in {wait:.1f} s",
                    {"Retry-After": str(max(1, math.ceil(wait)))},
                )
            state.forwarded += 1
        forwarded = {key: value for key, value in request.items() if key not in ("stream", "n", "user")}
        forwarded["model"] = model
        asked = forwarded.pop("max_completion_tokens", None)
        asked = request.get("max_tokens") if asked is None else asked
        cap = min(limits.max_completion_tokens, left - prompt)
        if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0:
            cap = min(cap, asked)
        forwarded["max_tokens"] = cap
        return forwarded

    # -- logging -------------------------------------------------------------------------------------
    def _served(
        self,
        session: ToolSession,
        state: ProxySession,
        forwarded: dict[str, Any],
        response: dict[str, Any],
        base: dict[str, Any],
        history: HistoryVerdict,
    ) -> None:
        """Count and log a served request, and offer its tool calls to the episode's ledger: those whose
        product ids all came to the model in verified tool messages of the request."""
        limits = self.limits
        choices = response.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
        prompt, completion = _tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens")
        estimated = prompt is None or completion is None
        if prompt is None:
            prompt = math.ceil(len(jsontext.dumps(forwarded["messages"])) / CHARS_PER_TOKEN)
        if completion is None:
            completion = math.ceil(len(jsontext.dumps(message)) / CHARS_PER_TOKEN)
        calls = response_tool_calls(message)
        texts = _TextBudget(limits, state.text_chars)  # one request in flight: nobody else spends it
        reasoning = texts.keep(message.get("reasoning_content", message.get("reasoning")), "reasoning")
        content = texts.keep(message.get("content"), "content")
        unshown: dict[int, str] = {}
        for index, call in enumerate(calls):
            ids = history.unshown(call.name, call.arguments) if call.error is None else []
            if ids:
                named = ", ".join(clean_text(pid)[:64] for pid in ids[:5]) + (" …" if len(ids) > 5 else "")
                unshown[index] = (
                    f"product id(s) {named} occur in no verified tool result of this request (only in "
                    "text the agent wrote): the call is the code's, not the model's"
                )
        stored: list[InferenceToolCall] = []
        for index, call in enumerate(calls[: limits.max_logged_calls]):
            key = canonical_arguments(call.arguments) if call.error is None else None
            text = texts.keep(key if key is not None else call.raw, "tool call arguments")
            stored.append(
                InferenceToolCall(
                    name=clean_text(call.name)[:128], arguments=text or "", unshown=unshown.get(index)
                )
            )
        cuts = texts.cuts
        if len(calls) > limits.max_logged_calls:
            cuts.append(f"{len(calls) - limits.max_logged_calls} more tool call(s) not stored")
        finish = choice.get("finish_reason")
        entry = InferenceEntry(
            status=200,
            outcome="ok",
            prompt_tokens=prompt,
            completion_tokens=completion,
            usage_estimated=estimated,
            finish_reason=clean_text(finish)[:64] if isinstance(finish, str) else None,
            reasoning=reasoning,
            content=content,
            tool_calls=stored,
            cut="; ".join(c for c in cuts if c) or None,
            **base,
        )
        with state.lock:
            state.served += 1
            state.text_chars = texts.used
            state.prompt_tokens += prompt
            state.completion_tokens += completion
            # offered before the reply leaves: a tool call may follow the instant the agent reads it
            state.unshown_id_calls += len(unshown)
            offered = session.ledger.offer(entry.seq, calls, skip=unshown)
            by_index = {item.index: item for item in offered if item.index < limits.max_logged_calls}
            state.entries.append(_Served(entry, by_index))

    def _refuse(
        self, session: ToolSession, state: ProxySession, request: _Request, refusal: _Refused
    ) -> tuple[int, dict[str, Any], dict[str, str] | None]:
        self._log_refusal(
            session,
            state,
            request.seq,
            request.arrived,
            request.digest,
            request.size,
            refusal.status,
            refusal.message,
            request.model,
            request.messages,
        )
        return refusal.status, {"ok": False, "error": refusal.message}, refusal.headers

    def _log_refusal(
        self,
        session: ToolSession,
        state: ProxySession,
        seq: int,
        arrived: float,
        digest: str | None,
        size: int,
        status: int,
        message: str,
        model: str | None = None,
        messages: int = 0,
    ) -> None:
        entry = InferenceEntry(
            seq=seq,
            at_s=arrived - state.opened_at,
            calls_before=len(session.episode.calls),
            model=clean_text(model)[:200] if model else None,
            status=status,
            outcome="refused",
            error=message,
            request_sha256=digest,
            request_bytes=size,
            request_messages=messages,
        )
        with state.lock:
            state.refused += 1
            if state.refusals_stored >= self.limits.max_refused_entries:
                state.refused_unstored += 1
                return
            state.refusals_stored += 1
            state.entries.append(_Served(entry))


@dataclass
class _Request:
    """What is known of one request as it is handled (for its log entry)."""

    seq: int
    arrived: float
    digest: str | None
    size: int
    model: str | None = None
    messages: int = 0


def settle(session: ToolSession, timeout_s: float) -> bool:
    """Wait for the session's inference request in flight (if any) to be logged; False on timeout."""
    proxy = session.state.get(STATE_KEY)
    if not isinstance(proxy, ProxySession):
        return True
    if not proxy.busy.acquire(timeout=timeout_s):
        return False
    proxy.busy.release()
    return True


def inference_log(session: ToolSession, limits: ProxyLimits | None = None) -> InferenceLog:
    """The verified inference log of a tool session: what its proxy served and refused, and what its
    ledger saw (a session without a proxy has no requests, but still counts the `llm` claims its
    ledger did not verify). `limits` are the proxy's, for the budget it reports."""
    proxy = session.state.get(STATE_KEY)
    if not isinstance(proxy, ProxySession):
        proxy = ProxySession(limits or ProxyLimits())
        budget = limits.token_budget if limits is not None else None
    else:
        budget = proxy.limits.token_budget
    ledger = session.ledger
    with proxy.lock:
        entries = []
        for served in proxy.entries:
            entry = served.entry
            if served.offered:
                calls = [
                    call.model_copy(update={"used_by": served.offered[i].used_by})
                    if i in served.offered
                    else call
                    for i, call in enumerate(entry.tool_calls)
                ]
                entry = entry.model_copy(update={"tool_calls": calls})
            entries.append(entry)
        notes = []
        if proxy.refused_unstored:
            notes.append(
                f"{proxy.refused_unstored} refused request(s) were counted and not stored (only the "
                f"first {proxy.limits.max_refused_entries} refusals are)"
            )
        return InferenceLog(
            requests=proxy.requests,
            served=proxy.served,
            failed=proxy.failed,
            refused=proxy.refused,
            prompt_tokens=proxy.prompt_tokens,
            completion_tokens=proxy.completion_tokens,
            token_budget=budget,
            tool_calls_offered=ledger.offered,
            tool_calls_used=ledger.used,
            unverified_llm_claims=ledger.unverified_claims,
            entries=entries,
            notes=notes,
            unshown_id_calls=proxy.unshown_id_calls,
        )


def _tokens(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


class _TextBudget:
    """Caps the texts of one log entry: each at `max_text_chars`, and once the episode's stored texts
    reach `max_log_chars`, each at `preview_chars`. What was cut is said in `cuts`."""

    def __init__(self, limits: ProxyLimits, used: int):
        self.limits = limits
        self.used = used
        self.cuts: list[str] = []

    def keep(self, value: Any, what: str) -> str | None:
        if value is None:
            return None
        limits = self.limits
        text = clean_text(value if isinstance(value, str) else jsontext.dumps(value))
        room = limits.max_log_chars - self.used
        limit = limits.max_text_chars if room >= limits.max_text_chars else max(room, limits.preview_chars)
        if len(text) > limit:
            why = "" if limit == limits.max_text_chars else " (the log's text budget is spent)"
            self.cuts.append(f"{what} of {len(text):,} characters kept as the first {limit:,}{why}")
            text = text[:limit]
        self.used += len(text)
        return text
