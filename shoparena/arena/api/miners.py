"""The miners' routes (signed, role miner):

    POST /v1/miner/submit                 {"name", "code"} → 202 admitted | 422 rejected | 400 | 413 | 429
    GET  /v1/miner/submissions            the caller's submissions, newest first
    GET  /v1/miner/submissions/{id}       status, events, violations, results (the caller's own only)

A hotkey in cooldown is refused before admission runs, so a barred hotkey costs no analysis and
stores nothing; another miner's submission answers exactly as a missing one does.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

import orjson
from fastapi import APIRouter, Depends
from fastapi.responses import Response
from pydantic import ValidationError

from shoparena.arena.api.gate import (
    MINER,
    Outcome,
    Refuse,
    SignedRequest,
    json_response,
    signed,
    validation_message,
)
from shoparena.arena.api.services import ArenaServices, Services
from shoparena.arena.auth.verify import Identity
from shoparena.arena.ledger import Cooldown, CooldownActive
from shoparena.arena.models import SubmitAccepted, SubmitRejected, SubmitRequest

SUBMISSION_ID_CHARS = frozenset("0123456789abcdef")
miner_router = APIRouter()
MinerRead = Annotated[SignedRequest, Depends(signed(MINER))]
MinerSubmit = Annotated[SignedRequest, Depends(signed(MINER, lambda config: config.max_body_bytes))]


@miner_router.post("/v1/miner/submit")
async def submit_route(call: MinerSubmit, services: Services) -> Response:
    return await call.answer(lambda identity, body: submit(services, identity, body), audit_success=True)


@miner_router.get("/v1/miner/submissions")
async def submissions_route(call: MinerRead, services: Services) -> Response:
    return await call.answer(lambda identity, _body: own_submissions(services, identity))


@miner_router.get("/v1/miner/submissions/{submission_id}")
async def submission_route(call: MinerRead, services: Services, submission_id: str) -> Response:
    return await call.answer(lambda identity, _body: one_submission(services, identity, submission_id))


def parse_submission(body: bytes, max_code_bytes: int) -> tuple[str, bytes]:
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise Refuse(400, "bad_body", f"the body is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise Refuse(400, "bad_body", 'the body must be a JSON object {"name": str, "code": str}')
    try:
        submitted = SubmitRequest.model_validate(payload)
    except ValidationError as exc:
        raise Refuse(400, "bad_body", validation_message(exc)) from None
    try:
        code = submitted.code.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Refuse(400, "bad_body", f"code is not text: {exc.reason} at character {exc.start}") from None
    if len(code) > max_code_bytes:
        raise Refuse(413, "too_large", f"code is {len(code)} bytes; the limit is {max_code_bytes}")
    return submitted.name, code


def submit(services: ArenaServices, identity: Identity, body: bytes) -> Outcome:
    arena = services.arena
    config, ledger = arena.config, arena.ledger
    name, code = parse_submission(body, config.max_code_bytes)
    now = services.now()
    active = ledger.cooldown(identity.hotkey, now)
    if active is not None:
        raise cooldown_refusal(active)
    violations = services.check(code)
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
        raise cooldown_refusal(exc.cooldown) from None
    next_at = now + timedelta(seconds=cooldown_s)
    if violations:
        rejected = SubmitRejected(
            submission_id=submission_id, violations=violations, next_submission_at=next_at
        )
        return Outcome(json_response(rejected, 422), "rejected", submission_id)
    accepted = SubmitAccepted(submission_id=submission_id, code_sha256=sha256, next_submission_at=next_at)
    return Outcome(json_response(accepted, 202), "ok", submission_id)


def own_submissions(services: ArenaServices, identity: Identity) -> Outcome:
    listed = services.arena.ledger.list_for(identity.hotkey)
    return Outcome(
        Response(orjson.dumps([s.model_dump(mode="json") for s in listed]), media_type="application/json")
    )


def one_submission(services: ArenaServices, identity: Identity, submission_id: str) -> Outcome:
    view = None
    if len(submission_id) == 32 and set(submission_id) <= SUBMISSION_ID_CHARS:
        view = services.arena.ledger.get(submission_id)
    if view is None or view.miner_hotkey != identity.hotkey:
        raise Refuse(404, "not_found", f"no submission {submission_id[:40]} of hotkey {identity.hotkey}")
    detail = services.reader.agent(submission_id)
    if detail is not None and detail.qualifying is not None:
        view = view.model_copy(update={"qualifying": detail.qualifying})
    return Outcome(json_response(view))


def cooldown_refusal(cooldown: Cooldown) -> Refuse:
    return Refuse(
        429,
        "cooldown",
        f"one submission per cooldown: this hotkey may submit again in {cooldown.retry_after_s} s "
        f"(at {cooldown.until.isoformat(timespec='seconds')}; started by submission {cooldown.submission_id})",
        retry_after_s=cooldown.retry_after_s,
    )
