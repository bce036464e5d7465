"""The arena's HTTP API (FastAPI): signed miner endpoints, run by `shoparena arena serve`.

Bodies are read raw, never by the framework, because the signature covers their exact bytes and the
size cap must hold while the body streams in (a Content-Length over the cap is refused before any of
it is read; a chunked body is cut off as soon as it passes the cap). Blocking work — database, nonce
store, admission, code storage — runs in the thread pool, off the event loop.

    POST /v1/miner/submit                 {"name", "code"} → 202 admitted | 422 rejected | 400 | 413 | 429
    GET  /v1/miner/submissions            the caller's submissions, newest first
    GET  /v1/miner/submissions/{id}       status, events, violations, results (the caller's own only)
    GET  /v1/whoami                       the caller's registration (any role)
    GET  /v1/health                       unsigned liveness

    The competition's public, unsigned reads (`competition.public_api`: /v1/leaderboard, /v1/races,
    /v1/agents, /v1/weights, /v1/trajectories) and the leaderboard page at `/` (`competition.web`) are
    mounted beside these, reading a `CompetitionReader` (`CompetitionView` unless one is given).

    GET  /v1/validator/arena              catalogue fingerprint, bank, settings (validators)
    POST /v1/validator/claim              {} → 200 a job under a new lease | 204 no work
    POST /v1/validator/heartbeat          {"lease_id"} → the lease's new expiry | 409 lapsed or ended
    POST /v1/validator/code               {"lease_id"} → the submission's code (X-Code-Sha256)
    POST /v1/validator/release            {"lease_id", "reason"} → the job goes back to the queue
    POST /v1/validator/result             {"lease_id", "job_id", "outcomes", "records"} → 201 | 200 again
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool

from shoparena import __version__
from shoparena.admission import Violation, check_submission
from shoparena.arena.arena import Arena
from shoparena.arena.auth.audit import AuditRecord
from shoparena.arena.auth.signing import HOTKEY_HEADER, NONCE_HEADER, body_sha256
from shoparena.arena.auth.verify import Authenticator, AuthRefused, Identity
from shoparena.arena.competition.job_source import CompetitionJobSource
from shoparena.arena.competition.models import CompetitionReader
from shoparena.arena.errors import ArenaError, JobRefused
from shoparena.arena.jobs.board import JobBoard
from shoparena.arena.jobs.intake import ResultIntake
from shoparena.arena.ledger import CooldownActive
from shoparena.arena.models import (
    LeaseRequest,
    Refusal,
    ReleaseRequest,
    SubmitAccepted,
    SubmitRejected,
    SubmitRequest,
    WhoAmI,
)

log = logging.getLogger("shoparena.arena")
MINER = frozenset({"miner"})
VALIDATOR = frozenset({"validator"})
CODE_SHA256_HEADER = "X-Code-Sha256"
ANY_ROLE = frozenset({"miner", "validator"})
MAX_HEAD_BYTES = 16 * 1024
"""Request line + headers: a signed request needs well under 1 KiB."""
SMALL_BODY = 64 * 1024
"""Cap for requests that carry no payload (reads)."""
SUBMISSION_ID_CHARS = frozenset("0123456789abcdef")
Checker = Callable[[bytes], list[Violation]]


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
    remote: str | None
    hotkey: str | None
    nonce: str | None


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


def _first_header(request: Request, name: str) -> str | None:
    """A claimed value for the audit row, whatever its form (cut to size by the audit log)."""
    wanted = name.lower().encode("ascii")
    for key, value in request.headers.raw:
        if key.lower() == wanted:
            return value.decode("latin-1")
    return None


def _validation_message(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors(include_url=False)
    )


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


Endpoint = Callable[[Identity, bytes], Outcome]
"""Runs in a worker thread (it may block on the database, the code store, admission)."""


class Gate:
    """Authenticate, run the endpoint, answer refusals in one shape, and keep the audit log.

    On the event loop: the header checks, the metagraph lookup (an in-memory snapshot) and reading the
    body. Everything that blocks — the signature, the nonce store, the endpoint, the audit row — then
    runs in one hop to the thread pool."""

    def __init__(self, arena: Arena, clock: Callable[[], float]):
        self.arena = arena
        self.clock = clock
        self.auth = Authenticator(arena.metagraph, arena.nonces, arena.config.skew_s, clock)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    async def handle(
        self,
        request: Request,
        roles: Collection[str],
        limit: int,
        endpoint: Endpoint,
        audit_success: bool = False,
    ) -> Response:
        seen = Seen(
            method=request.method,
            path=request.url.path,
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
            return await run_in_threadpool(self.finish, seen, outcome, audit_success)
        return await run_in_threadpool(self.run, seen, claimed, neuron, body, endpoint, audit_success)

    def run(
        self, seen: Seen, claimed, neuron, body: bytes, endpoint: Endpoint, audit_success: bool
    ) -> Response:
        try:
            identity = self.auth.verify(claimed, neuron, body_sha256(body))
            outcome = endpoint(identity, body)
        except Exception as exc:
            outcome = refused(exc, f"{seen.method} {seen.path}")
        return self.finish(seen, outcome, audit_success)

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


def create_app(
    arena: Arena,
    *,
    check: Checker = check_submission,
    clock: Callable[[], float] = time.time,
    competition: CompetitionReader | None = None,
) -> FastAPI:
    """The API over an opened arena. `check` is admission (`check_submission` of `arena.admission`);
    `clock` is Unix seconds (tests move it); `competition` is what the public read API and the
    leaderboard page read (default: `CompetitionView` over this arena, on the server's clock)."""
    app = FastAPI(
        title="shoparena arena", version=__version__, docs_url=None, redoc_url=None, openapi_url=None
    )
    gate = Gate(arena, clock)
    config = arena.config
    ledger = arena.ledger

    def parse_submission(body: bytes) -> tuple[str, bytes]:
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise Refuse(400, "bad_body", f"the body is not JSON: {exc}") from None
        if not isinstance(payload, dict):
            raise Refuse(400, "bad_body", 'the body must be a JSON object {"name": str, "code": str}')
        try:
            submitted = SubmitRequest.model_validate(payload)
        except ValidationError as exc:
            raise Refuse(400, "bad_body", _validation_message(exc)) from None
        try:
            code = submitted.code.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise Refuse(
                400, "bad_body", f"code is not text: {exc.reason} at character {exc.start}"
            ) from None
        if len(code) > config.max_code_bytes:
            raise Refuse(413, "too_large", f"code is {len(code)} bytes; the limit is {config.max_code_bytes}")
        return submitted.name, code

    def submit(identity: Identity, body: bytes) -> Outcome:
        name, code = parse_submission(body)
        now = gate.now()
        active = ledger.cooldown(identity.hotkey, now)
        if active is not None:  # before admission: a barred hotkey costs no analysis and stores nothing
            raise _cooldown_refusal(active)
        violations = check(code)
        cooldown_s = config.cooldown.for_violations(violations)
        sha256 = arena.code.put(code)
        try:
            submission_id = ledger.record(
                hotkey=identity.hotkey,
                name=name,
                code_sha256=sha256,
                code_size=len(code),
                violations=violations,
                cooldown_s=cooldown_s,
                now=now,
            )
        except CooldownActive as exc:
            raise _cooldown_refusal(exc.cooldown) from None
        next_at = now + timedelta(seconds=cooldown_s)
        if violations:
            rejected = SubmitRejected(
                submission_id=submission_id, violations=violations, next_submission_at=next_at
            )
            return Outcome(json_response(rejected, 422), "rejected", submission_id)
        accepted = SubmitAccepted(submission_id=submission_id, code_sha256=sha256, next_submission_at=next_at)
        return Outcome(json_response(accepted, 202), "ok", submission_id)

    def whoami(identity: Identity, _body: bytes) -> Outcome:
        me = WhoAmI(hotkey=identity.hotkey, role=identity.role, stake=identity.stake, uid=identity.uid)
        return Outcome(json_response(me))

    def own_submissions(identity: Identity, _body: bytes) -> Outcome:
        listed = ledger.list_for(identity.hotkey)
        return Outcome(
            Response(orjson.dumps([s.model_dump(mode="json") for s in listed]), media_type="application/json")
        )

    def one_submission(submission_id: str) -> Endpoint:
        def endpoint(identity: Identity, _body: bytes) -> Outcome:
            view = None
            if len(submission_id) == 32 and set(submission_id) <= SUBMISSION_ID_CHARS:
                view = ledger.get(submission_id)
            if view is None or view.miner_hotkey != identity.hotkey:  # another's looks like none at all
                raise Refuse(
                    404, "not_found", f"no submission {submission_id[:40]} of hotkey {identity.hotkey}"
                )
            return Outcome(json_response(view))

        return endpoint

    board = JobBoard(arena, clock, source=CompetitionJobSource(arena.dir, arena.config))
    intake = ResultIntake(board)

    def parse_body(body: bytes, model: type[BaseModel]):
        try:
            return model.model_validate_json(body or b"{}")
        except ValidationError as exc:
            raise Refuse(400, "bad_body", _validation_message(exc)) from None

    def arena_info(_identity: Identity, _body: bytes) -> Outcome:
        return Outcome(json_response(board.info()))

    def claim(identity: Identity, body: bytes) -> Outcome:
        if body.strip() not in (b"", b"{}"):
            raise Refuse(400, "bad_body", "a claim's body is empty or {}")
        offer = board.claim(identity.hotkey)
        if offer is None:
            return Outcome(Response(status_code=204), "no_work")
        return Outcome(
            json_response(offer),
            submission_id=offer.submission_id,
            detail=f"job {offer.job_id} lease {offer.lease_id}",
        )

    def heartbeat(identity: Identity, body: bytes) -> Outcome:
        request = parse_body(body, LeaseRequest)
        return Outcome(json_response(board.heartbeat(identity.hotkey, request.lease_id)))

    def release(identity: Identity, body: bytes) -> Outcome:
        request = parse_body(body, ReleaseRequest)
        view = board.release(identity.hotkey, request.lease_id, request.reason)
        return Outcome(json_response(view), detail=f"lease {request.lease_id}: {request.reason}")

    def code(identity: Identity, body: bytes) -> Outcome:
        request = parse_body(body, LeaseRequest)
        data, sha256 = board.code(identity.hotkey, request.lease_id)
        headers = {CODE_SHA256_HEADER: sha256}
        return Outcome(Response(data, media_type="text/x-python; charset=utf-8", headers=headers))

    def result(identity: Identity, body: bytes) -> Outcome:
        accepted, created = intake.post(identity.hotkey, body)
        detail = f"job {accepted.result.job_id}: {'stored' if created else 'posted again, nothing new'}"
        return Outcome(json_response(accepted, 201 if created else 200), detail=detail)

    @app.get("/v1/validator/arena")
    async def arena_route(request: Request) -> Response:
        return await gate.handle(request, VALIDATOR, SMALL_BODY, arena_info)

    @app.post("/v1/validator/claim")
    async def claim_route(request: Request) -> Response:
        return await gate.handle(request, VALIDATOR, SMALL_BODY, claim, audit_success=True)

    @app.post("/v1/validator/heartbeat")
    async def heartbeat_route(request: Request) -> Response:
        return await gate.handle(request, VALIDATOR, SMALL_BODY, heartbeat)

    @app.post("/v1/validator/code")
    async def code_route(request: Request) -> Response:
        return await gate.handle(request, VALIDATOR, SMALL_BODY, code)

    @app.post("/v1/validator/release")
    async def release_route(request: Request) -> Response:
        return await gate.handle(request, VALIDATOR, SMALL_BODY, release, audit_success=True)

    @app.post("/v1/validator/result")
    async def result_route(request: Request) -> Response:
        return await gate.handle(request, VALIDATOR, config.jobs.max_result_bytes, result, audit_success=True)

    @app.get("/v1/health")
    async def health() -> dict:
        return {"status": "ok", "version": __version__}

    @app.get("/v1/whoami")
    async def whoami_route(request: Request) -> Response:
        return await gate.handle(request, ANY_ROLE, SMALL_BODY, whoami)

    @app.post("/v1/miner/submit")
    async def submit_route(request: Request) -> Response:
        return await gate.handle(request, MINER, config.max_body_bytes, submit, audit_success=True)

    @app.get("/v1/miner/submissions")
    async def submissions_route(request: Request) -> Response:
        return await gate.handle(request, MINER, SMALL_BODY, own_submissions)

    @app.get("/v1/miner/submissions/{submission_id}")
    async def submission_route(request: Request, submission_id: str) -> Response:
        return await gate.handle(request, MINER, SMALL_BODY, one_submission(submission_id))

    if competition is None:
        from shoparena.arena.competition.engine import RaceEngine
        from shoparena.arena.competition.view import CompetitionView

        competition = CompetitionView(arena, RaceEngine(arena, clock=clock, board=board))
    mount_public(app, competition, arena, clock)
    return app


def mount_public(app: FastAPI, reader: CompetitionReader, arena: Arena, clock: Callable[[], float]) -> None:
    """The competition's public reads (`/v1/leaderboard`, `/v1/races`, …) and the leaderboard page."""
    from shoparena.arena.api.public import public_router
    from shoparena.arena.api.web import web_router

    app.include_router(public_router(reader, arena, clock))
    app.include_router(web_router(reader, arena, clock))


def _cooldown_refusal(cooldown) -> Refuse:
    return Refuse(
        429,
        "cooldown",
        f"one submission per cooldown: this hotkey may submit again in {cooldown.retry_after_s} s "
        f"(at {cooldown.until.isoformat(timespec='seconds')}; started by submission {cooldown.submission_id})",
        retry_after_s=cooldown.retry_after_s,
    )


ARENA_UVICORN = {
    "server_header": False,
    "proxy_headers": False,  # the audit's remote address is the peer's, never a header's claim
    "timeout_keep_alive": 5,
    "lifespan": "off",
    # h11, never httptools: uvicorn's httptools protocol buffers headers without any limit, so one
    # client could send gigabytes of them; h11 refuses a request head once it passes this size.
    "http": "h11",
    "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
}


def uvicorn_config(app: FastAPI, **options):
    import uvicorn

    return uvicorn.Config(app, **{**ARENA_UVICORN, **options})


def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 8742, log_level: str = "info") -> None:
    """Run until interrupted (Ctrl-C, SIGTERM)."""
    import uvicorn

    uvicorn.Server(uvicorn_config(app, host=host, port=port, log_level=log_level)).run()


@contextmanager
def running(app: FastAPI, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve `app` from a background thread on a real socket (port 0: a free one), with the arena's
    uvicorn settings; yields its base URL. For tests, benchmarks, demos and the simulated season."""
    from shoparena.harness.loopback import AppThread

    options = {k: v for k, v in ARENA_UVICORN.items() if k not in AppThread.FIXED}
    server = AppThread(app, host, port, name="the arena server", **options)
    try:
        server.start()
    except (OSError, RuntimeError) as exc:
        raise ArenaError(str(exc)) from None
    try:
        yield server.url
    finally:
        server.stop()
