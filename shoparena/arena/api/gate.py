"""The signed-request gate every miner and validator route passes: authentication, the body under its
cap, refusals in one shape, and the audit log.

The signature covers the method, the target exactly as it arrived (`raw_path` and the query string,
before any decoding) and the body's exact bytes (`auth.signing`), so a request is good for one endpoint.
Bodies are read raw, never by the framework, because the signature covers their exact bytes and the
size cap must hold while the body streams in (a Content-Length over the cap is refused before any of
it is read; a chunked body is cut off as soon as it passes the cap).

A route takes a `SignedRequest` through the `signed(roles, limit)` dependency, which does what needs
no thread on the event loop — header checks, the metagraph lookup (an in-memory snapshot), reading the
body — and then answers with `await call.answer(endpoint)`: the signature, the nonce store, the
endpoint and the audit row run in one hop to the thread pool, as everything there may block.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from fastapi import Request
from fastapi.responses import Response
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool

from shoparena.arena.arena import Arena
from shoparena.arena.auth.audit import AuditRecord
from shoparena.arena.auth.signing import HOTKEY_HEADER, NONCE_HEADER, body_sha256, request_target
from shoparena.arena.auth.verify import Authenticator, AuthRefused, Identity, SignedHeaders
from shoparena.arena.config import ArenaConfig
from shoparena.arena.errors import ArenaError, JobRefused
from shoparena.arena.models import NeuronInfo, Refusal

log = logging.getLogger("shoparena.arena")
MINER = frozenset({"miner"})
VALIDATOR = frozenset({"validator"})
ANY_ROLE = frozenset({"miner", "validator"})
SMALL_BODY = 64 * 1024
"""Cap for requests that carry no payload (reads)."""
Model = TypeVar("Model", bound=BaseModel)


class Refuse(Exception):
    """A request answered with an error status (the 401s are `AuthRefused`)."""

    def __init__(self, status: int, error: str, message: str, retry_after_s: int | None = None):
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message
        self.retry_after_s = retry_after_s


@dataclass
class Outcome:
    response: Response
    reason: str = "ok"
    submission_id: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class Seen:
    """What the audit row says about a request, whatever became of it."""

    method: str
    path: str
    target: str
    """The path and query as they arrived (what the signature covers)."""
    remote: str | None
    hotkey: str | None
    nonce: str | None


Endpoint = Callable[[Identity, bytes], Outcome]
"""Runs in a worker thread (it may block on the database, the code store, admission)."""


def json_response(model: BaseModel, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        model.model_dump_json(), status_code=status, media_type="application/json", headers=headers
    )


def _refusal(
    status: int, error: str, message: str, reason: str | None = None, retry_after_s: int | None = None
):
    headers = {"Retry-After": str(retry_after_s)} if retry_after_s is not None else None
    body = Refusal(error=error, reason=reason, message=message, retry_after_s=retry_after_s)
    return json_response(body, status, headers)


def refused(exc: BaseException, where: str) -> Outcome:
    """The answer to a request that ended in `exc`."""
    if isinstance(exc, AuthRefused):
        return Outcome(
            _refusal(401, "unauthorized", exc.message, reason=exc.reason), exc.reason, detail=exc.message
        )
    if isinstance(exc, Refuse):
        response = _refusal(exc.status, exc.error, exc.message, retry_after_s=exc.retry_after_s)
        return Outcome(response, exc.error, detail=exc.message)
    if isinstance(exc, JobRefused):
        return Outcome(_refusal(exc.status, exc.error, exc.message), exc.error, detail=exc.message)
    if isinstance(exc, ArenaError):  # the nonce store or code storage is down: refuse, never let through
        log.error("arena unavailable: %s", exc)
        response = _refusal(503, "unavailable", f"the arena cannot serve this now: {exc}")
        return Outcome(response, "unavailable", detail=str(exc))
    log.error("internal error on %s", where, exc_info=exc)
    response = _refusal(500, "internal", "internal error; the operator's log has the details")
    return Outcome(response, "internal", detail=f"{type(exc).__name__}: {exc}")


def validation_message(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors(include_url=False)
    )


def parse_body(body: bytes, model: type[Model]) -> Model:
    """A JSON body as `model` (an empty body is `{}`), refused with 400 naming what is wrong."""
    try:
        return model.model_validate_json(body or b"{}")
    except ValidationError as exc:
        raise Refuse(400, "bad_body", validation_message(exc)) from None


def _first_header(request: Request, name: str) -> str | None:
    """A claimed value for the audit row, whatever its form (cut to size by the audit log)."""
    wanted = name.lower().encode("ascii")
    for key, value in request.headers.raw:
        if key.lower() == wanted:
            return value.decode("latin-1")
    return None


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 once it is known to exceed `limit` — by its declared length before
    reading, else while it streams — so an unbounded body is never held."""
    declared = request.headers.getlist("content-length")
    if len(declared) > 1:
        raise Refuse(400, "bad_body", "Content-Length is given more than once")
    if declared:
        text = declared[0].strip()
        if not (text.isascii() and text.isdigit()):
            raise Refuse(400, "bad_body", "Content-Length is not a number")
        if int(text) > limit:
            raise Refuse(413, "too_large", f"the body is {int(text)} bytes; the limit is {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Refuse(413, "too_large", f"the body passed {limit} bytes, the limit; refused while reading")
        chunks.append(chunk)
    return b"".join(chunks)


class Gate:
    """Authentication and the audit log over one opened arena, on the server's clock."""

    def __init__(self, arena: Arena, clock: Callable[[], float]):
        self.arena = arena
        self.clock = clock
        self.auth = Authenticator(arena.metagraph, arena.nonces, arena.config.skew_s, clock)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    async def admit(self, request: Request, roles: Collection[str], limit: int) -> SignedRequest:
        """The event-loop half: the cheap checks and the body. A refusal here is kept for `answer`."""
        seen = Seen(
            method=request.method,
            path=request.url.path,
            target=request_target(
                request.scope.get("raw_path") or request.url.path.encode(), request.scope["query_string"]
            ),
            remote=request.client.host if request.client else None,
            hotkey=_first_header(request, HOTKEY_HEADER),
            nonce=_first_header(request, NONCE_HEADER),
        )
        try:
            claimed, neuron = self.auth.precheck(request.headers.raw, roles)
            body = await read_body(request, limit)
        except Exception as exc:
            # Refused before the body was read (or while it streamed in): close the connection rather
            # than let the server drain whatever the client still sends.
            outcome = refused(exc, f"{seen.method} {seen.path}")
            outcome.response.headers["Connection"] = "close"
            return SignedRequest(self, seen, refusal=outcome)
        return SignedRequest(self, seen, claimed, neuron, body)

    def run(self, call: SignedRequest, endpoint: Endpoint, audit_success: bool) -> Response:
        """The thread-pool half: signature and nonce, the endpoint, the audit row."""
        outcome = call.refusal
        if outcome is None:
            try:
                seen = call.seen
                identity = self.auth.verify(
                    call.claimed, call.neuron, seen.method, seen.target, body_sha256(call.body)
                )
                outcome = endpoint(identity, call.body)
            except Exception as exc:
                outcome = refused(exc, f"{call.seen.method} {call.seen.path}")
        return self.finish(call.seen, outcome, audit_success)

    def finish(self, seen: Seen, outcome: Outcome, audit_success: bool) -> Response:
        if outcome.response.status_code >= 400 or audit_success:
            record = AuditRecord(
                created_at=self.now(),
                method=seen.method,
                path=seen.path,
                remote=seen.remote,
                hotkey=seen.hotkey,
                nonce=seen.nonce,
                status=outcome.response.status_code,
                reason=outcome.reason,
                detail=outcome.detail,
                submission_id=outcome.submission_id,
            )
            try:
                self.arena.audit.write(record)
            except Exception:
                log.exception("cannot write the audit row for %s %s", seen.method, seen.path)
        return outcome.response


@dataclass
class SignedRequest:
    """A request past the gate's cheap checks with its body read — or the refusal that stopped it."""

    gate: Gate
    seen: Seen
    claimed: SignedHeaders | None = None
    neuron: NeuronInfo | None = None
    body: bytes = b""
    refusal: Outcome | None = None

    async def answer(self, endpoint: Endpoint, audit_success: bool = False) -> Response:
        """Verify, run `endpoint`, audit (failures always; successes when `audit_success`)."""
        return await run_in_threadpool(self.gate.run, self, endpoint, audit_success)


def signed(roles: Collection[str], limit: Callable[[ArenaConfig], int] = lambda _config: SMALL_BODY):
    """The dependency of a signed route: callers of `roles`, bodies up to `limit(config)` bytes."""

    async def signed_request(request: Request) -> SignedRequest:
        gate: Gate = request.app.state.gate
        return await gate.admit(request, roles, limit(gate.arena.config))

    return signed_request
