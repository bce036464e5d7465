"""The tool server's ASGI app: the tool routes, the session lookup other routes share, error bodies.

Every reply is JSON; every refusal is `{"ok": false, "error": "..."}` with the status that says what
kind of problem it was (the status table is in `tool_server`). Routes mounted beside the tools (the
inference proxy) authenticate with the same tokens through `current_session` and refuse with
`Refusal`, so an agent sees one kind of error everywhere.

Episode work (a tool call may search the catalogue) runs in the event loop's thread pool, so one slow
call never holds up another session; calls of one session are serialised by the session's lock.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from shoparena.harness import jsontext
from shoparena.harness.tool_session import SessionHost, ToolSession
from shoparena.harness.tool_specs import TOOL_SPECS
from shoparena.records.calls import Origin

log = logging.getLogger("shoparena.harness.tool_server")

RESERVED_KEYS = ("origin", "call_id")
ORIGINS = ("llm", "code")
STATUS_OF_REFUSAL: dict[str | None, int] = {
    None: 200,
    "ended": 409,
    "malformed": 400,
    "unusable": 422,
    "unknown_tool": 404,
    "bad_arguments": 422,
}
"""The status of a recorded call, from the episode's own reason for not running the tool."""

if any(p.name in RESERVED_KEYS for spec in TOOL_SPECS.values() for p in spec.params):
    raise RuntimeError(f"a tool parameter collides with a reserved tool-server request key {RESERVED_KEYS}")


class Refusal(Exception):
    """A request answered with an error and no call: raise it from any route of the app.

    `close` ends the connection after the reply (the body was not read, so it must not be parsed as
    the next request)."""

    def __init__(
        self, status: int, message: str, *, close: bool = False, headers: dict[str, str] | None = None
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.close = close
        self.headers = headers
        """Extra response headers (e.g. `Retry-After` of a rate limit)."""


def reply(
    status: int, payload: dict[str, Any], *, close: bool = False, headers: dict[str, str] | None = None
) -> Response:
    """A JSON response (orjson; what orjson refuses still encodes, never raises)."""
    body = jsontext.dumps(payload).encode("utf-8", "replace")
    headers = dict(headers or {})
    if close:
        headers["connection"] = "close"
    return Response(body, status_code=status, media_type="application/json", headers=headers or None)


def error_body(message: str) -> dict[str, Any]:
    return {"ok": False, "error": message}


def tool_server_of(request: Request) -> SessionHost:
    return request.app.state.tool_server


def session_token(headers: Headers) -> str | None:
    """The token a request carries: `Authorization: Bearer TOKEN`, else `X-Session: TOKEN`."""
    header = headers.get("authorization", "")
    return header[7:].strip() if header[:7].lower() == "bearer " else headers.get("x-session")


async def current_session(request: Request) -> ToolSession:
    """The session of the request's token (`Authorization: Bearer` or `X-Session`), else a 401.

    Usable as a FastAPI dependency by any router mounted on the tool server."""
    token = session_token(request.headers)
    session = tool_server_of(request).session_of(token)
    if session is None:
        what = "unknown or expired session token" if token else "missing session token"
        raise Refusal(401, f"{what}; send 'Authorization: Bearer TOKEN' or 'X-Session: TOKEN'", close=True)
    return session


async def read_body(request: Request, limit: int, timeout_s: float | None = None) -> bytes:
    """The request body, refused without reading it when it is chunked or over `limit` bytes, and
    refused (408) when it has not all arrived within `timeout_s` (by default the server's
    `request_timeout_s`; a trickled body would hold its connection and task forever)."""
    if "chunked" in request.headers.get("transfer-encoding", "").lower():
        raise Refusal(411, "chunked bodies are not accepted; send Content-Length", close=True)
    try:
        length = int(request.headers.get("content-length") or 0)
    except ValueError:
        length = -1
    if length < 0:
        raise Refusal(400, "Content-Length is not a non-negative integer", close=True)
    if length > limit:
        raise Refusal(413, f"request body of {length} bytes exceeds the limit of {limit} bytes", close=True)
    if timeout_s is None:
        timeout_s = tool_server_of(request).request_timeout_s
    try:
        return await asyncio.wait_for(request.body(), timeout_s)
    except TimeoutError:
        raise Refusal(408, f"the request body did not arrive within {timeout_s:g} s", close=True) from None


def client_gone(request: Request, what: str) -> Response:
    """One log line for a client that went away (no traceback: it is the client's choice)."""
    client = request.client
    peer = f"{client.host}:{client.port}" if client else "a Unix-socket client"
    log.info("tool server: %s disconnected %s (%s %s)", peer, what, request.method, request.url.path)
    return Response(status_code=499)


# -- the tools ---------------------------------------------------------------------------------------
def describe_tools(session: ToolSession) -> dict[str, Any]:
    episode = session.episode
    with session.lock:
        return {
            "profile": episode.profile,
            "tools": episode.tools,
            "step_cap": episode.step_cap,
            "steps_used": episode.steps_used,
            "ended": episode.ended,
        }


def call_tool(session: ToolSession, name: str, body: bytes) -> tuple[int, dict[str, Any]]:
    """Run one call on the session's episode; the status says which kind of problem a failed call had."""
    text = body.decode("utf-8", errors="replace")
    arguments: dict[str, Any] | str
    origin, call_id = "code", None
    try:
        value = jsontext.loads(text) if text.strip() else {}
    except ValueError:
        value = None
    if isinstance(value, dict):
        origin = value.pop("origin", "code")
        call_id = value.pop("call_id", None)
        if origin not in ORIGINS:
            return 400, error_body(f"origin must be one of {', '.join(ORIGINS)}, got {origin!r}")
        if call_id is not None and not isinstance(call_id, str):
            return 400, error_body(f"call_id must be a string, got {type(call_id).__name__}")
        arguments = value
    else:
        arguments = text  # Episode.call records why it is not an argument object

    episode = session.episode
    with session.lock:
        # the claim is not evidence: only a tool call an inference response offered makes it `llm`
        offered = session.ledger.consume(name, arguments) if isinstance(arguments, dict) else None
        verified: Origin = "llm" if offered is not None else "code"
        if origin == "llm" and offered is None:
            session.ledger.note_unverified_claim()
        observation = episode.call(name, arguments, origin=verified, call_id=call_id)
        if offered is not None:
            offered.used_by = observation.call_id
        step = (
            episode.steps_used
        )  # a direct call is one step: the one just used, or the last one after the end
        ended = episode.ended
    return STATUS_OF_REFUSAL[observation.refused], {
        "ok": observation.ok,
        "result": observation.result,
        "error": observation.error,
        "text": observation.text,
        "call_id": observation.call_id,
        "step": step,
        "ended": ended,
        "origin": verified,
    }


tools_router = APIRouter()


@tools_router.get("/v1/health")
async def health() -> Response:
    return reply(200, {"ok": True})


@tools_router.get("/v1/tools")
async def list_tools(request: Request) -> Response:
    session = await current_session(request)
    return reply(200, await run_in_threadpool(describe_tools, session))


@tools_router.post("/v1/tools/{name:path}")
async def post_tool(request: Request, name: str) -> Response:
    if not name:
        raise Refusal(404, "no tool named in the path; use POST /v1/tools/NAME", close=True)
    session = await current_session(request)
    try:
        body = await read_body(request, tool_server_of(request).max_body_bytes)
    except ClientDisconnect:
        return client_gone(request, "before sending the whole body; no call was made")
    status, payload = await run_in_threadpool(call_tool, session, name, body)
    if await request.is_disconnected():
        return client_gone(request, f"before the reply; the call was recorded as step {payload['step']}")
    return reply(status, payload)


# -- the body budget --------------------------------------------------------------------------------
class BodyBudget:
    """ASGI middleware: all of one session's open requests may declare at most `max_open_body_bytes`
    of body at once. A request of a live session is charged its Content-Length from before its body is
    read until its reply is sent; one that would pass the budget is answered 503 (`Retry-After: 1`),
    or 413 when it alone is over it, and closed without its body being read.

    Why: each connection used to hold up to `max_body_bytes` (1 MiB) while its body trickled in, so a
    sandboxed miner with ~960 connections of half-sent bodies grew its validator's memory by ~830 MiB,
    outside the sandbox's cgroup (issue 22). Requests without a live session pass uncharged: every
    route refuses them (401) before reading a byte of body. Runs on the event loop only, so the
    counter needs no lock."""

    def __init__(self, app: ASGIApp, server: SessionHost):
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        length = headers.get("content-length", "")
        size = int(length) if length.isascii() and length.isdigit() else 0  # else the route refuses it
        session = self.server.session_of(session_token(headers)) if size else None
        if session is None:
            await self.app(scope, receive, send)
            return
        budget = self.server.max_open_body_bytes
        if size > budget or session.open_body_bytes + size > budget:
            await self._refuse(session, size, budget, scope, send)
            return
        session.open_body_bytes += size
        try:
            await self.app(scope, receive, send)
        finally:
            session.open_body_bytes -= size

    @staticmethod
    async def _refuse(session: ToolSession, size: int, budget: int, scope: Scope, send: Send) -> None:
        if size > budget:
            status = 413
            message = (
                f"request body of {size} bytes exceeds this episode's open-request budget of {budget} bytes"
            )
            extra: dict[str, str] = {}
        else:
            status = 503
            message = (
                f"this episode's open requests already hold {session.open_body_bytes} bytes of body; "
                f"{size} more would pass the budget of {budget} bytes (finish or close a request first)"
            )
            extra = {"Retry-After": "1"}
        response = reply(status, error_body(message), close=True, headers=extra)
        await response(scope, _nothing, send)  # the body is never read


async def _nothing() -> dict:
    return {"type": "http.disconnect"}


# -- the app ---------------------------------------------------------------------------------------
def build_app(server: SessionHost, routers: list[APIRouter]) -> FastAPI:
    """The ASGI app of one tool server: the tool routes plus `routers` (mounted beside them), inside
    the body budget (`BodyBudget`)."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, redirect_slashes=False)
    app.add_middleware(BodyBudget, server=server)
    app.state.tool_server = server
    app.include_router(tools_router)
    for router in routers:
        app.include_router(router)

    @app.exception_handler(Refusal)
    async def _refused(request: Request, exc: Refusal) -> Response:
        return reply(exc.status, error_body(exc.message), close=exc.close, headers=exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def _no_route(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code in (404, 405):  # a wrong method is as much "no such endpoint" as a wrong path
            message = f"no such endpoint: {request.method} {request.url.path}"
            return reply(404, error_body(message + "; use GET /v1/tools or POST /v1/tools/NAME"), close=True)
        return reply(exc.status_code, error_body(str(exc.detail)), close=True)

    return app
