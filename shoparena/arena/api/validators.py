"""The validators' routes (signed, role validator): the job layer over HTTP.

    GET  /v1/validator/arena              catalogue fingerprint, bank, settings
    POST /v1/validator/claim              {} → 200 a job under a new lease | 204 no work
    POST /v1/validator/heartbeat          {"lease_id"} → the lease's new expiry | 409 lapsed or ended
    POST /v1/validator/code               {"lease_id"} → the submission's code (X-Code-Sha256)
    POST /v1/validator/release            {"lease_id", "reason"} → the job goes back to the queue
    POST /v1/validator/result             {"lease_id", "job_id", "outcomes", "records"} → 201 | 200 again

Claims, releases and results are audited even when they succeed: they are who did what to which job.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import Response

from shoparena.arena.api.gate import (
    VALIDATOR,
    Endpoint,
    Outcome,
    Refuse,
    SignedRequest,
    json_response,
    parse_body,
    signed,
)
from shoparena.arena.api.services import ArenaServices, Services
from shoparena.arena.auth.verify import Identity
from shoparena.arena.jobs.board import JobBoard
from shoparena.arena.jobs.intake import ResultIntake
from shoparena.arena.models import LeaseRequest, ReleaseRequest

CODE_SHA256_HEADER = "X-Code-Sha256"
validator_router = APIRouter()
ValidatorCall = Annotated[SignedRequest, Depends(signed(VALIDATOR))]
ValidatorResult = Annotated[
    SignedRequest, Depends(signed(VALIDATOR, lambda config: config.jobs.max_result_bytes))
]


@validator_router.get("/v1/validator/arena")
async def arena_route(call: ValidatorCall, services: Services) -> Response:
    return await call.answer(on_board(services, arena_info))


@validator_router.post("/v1/validator/claim")
async def claim_route(call: ValidatorCall, services: Services) -> Response:
    return await call.answer(on_board(services, claim), audit_success=True)


@validator_router.post("/v1/validator/heartbeat")
async def heartbeat_route(call: ValidatorCall, services: Services) -> Response:
    return await call.answer(on_board(services, heartbeat))


@validator_router.post("/v1/validator/code")
async def code_route(call: ValidatorCall, services: Services) -> Response:
    return await call.answer(on_board(services, code))


@validator_router.post("/v1/validator/release")
async def release_route(call: ValidatorCall, services: Services) -> Response:
    return await call.answer(on_board(services, release), audit_success=True)


@validator_router.post("/v1/validator/result")
async def result_route(call: ValidatorResult, services: Services) -> Response:
    return await call.answer(
        lambda identity, body: result(services.intake, identity, body), audit_success=True
    )


BoardAction = Callable[[JobBoard, Identity, bytes], Outcome]


def on_board(services: ArenaServices, action: BoardAction) -> Endpoint:
    return lambda identity, body: action(services.board, identity, body)


def arena_info(board: JobBoard, _identity: Identity, _body: bytes) -> Outcome:
    return Outcome(json_response(board.info()))


def claim(board: JobBoard, identity: Identity, body: bytes) -> Outcome:
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


def heartbeat(board: JobBoard, identity: Identity, body: bytes) -> Outcome:
    lease = parse_body(body, LeaseRequest)
    return Outcome(json_response(board.heartbeat(identity.hotkey, lease.lease_id)))


def code(board: JobBoard, identity: Identity, body: bytes) -> Outcome:
    lease = parse_body(body, LeaseRequest)
    data, sha256 = board.code(identity.hotkey, lease.lease_id)
    headers = {CODE_SHA256_HEADER: sha256}
    return Outcome(Response(data, media_type="text/x-python; charset=utf-8", headers=headers))


def release(board: JobBoard, identity: Identity, body: bytes) -> Outcome:
    request = parse_body(body, ReleaseRequest)
    view = board.release(identity.hotkey, request.lease_id, request.reason)
    return Outcome(json_response(view), detail=f"lease {request.lease_id}: {request.reason}")


def result(intake: ResultIntake, identity: Identity, body: bytes) -> Outcome:
    accepted, created = intake.post(identity.hotkey, body)
    detail = f"job {accepted.result.job_id}: {'stored' if created else 'posted again, nothing new'}"
    return Outcome(json_response(accepted, 201 if created else 200), detail=detail)
