"""Routes every caller shares: unsigned liveness, and whoami for any signed role.

GET  /v1/whoami                       the caller's registration (miner or validator)
GET  /v1/health                       unsigned liveness
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import Response

from shoparena import __version__
from shoparena.arena.api.gate import ANY_ROLE, Outcome, SignedRequest, json_response, signed
from shoparena.arena.auth.verify import Identity
from shoparena.arena.models import WhoAmI

common_router = APIRouter()


@common_router.get("/v1/health")
async def health() -> dict:
    return {"status": "ok", "version": __version__}


@common_router.get("/v1/whoami")
async def whoami_route(call: Annotated[SignedRequest, Depends(signed(ANY_ROLE))]) -> Response:
    return await call.answer(whoami)


def whoami(identity: Identity, _body: bytes) -> Outcome:
    me = WhoAmI(hotkey=identity.hotkey, role=identity.role, stake=identity.stake, uid=identity.uid)
    return Outcome(json_response(me))
