"""The competition's public, unsigned read API (SPEC §6): anyone may watch the arena.

    GET /v1/leaderboard                    the ranking, best first (`LeaderboardEntry`); without a race
                                           bank, scored submissions as `provisional` entries
    GET /v1/races?limit=N                  recent races, newest first (`Race`; N is capped at 200)
    GET /v1/races/{race_id}                one race: commitment, seed and problems once revealed, results
    GET /v1/agents/{submission_id}         one submission's standing (`AgentDetail`)
    GET /v1/agents/{submission_id}/code    its code once the embargo lifts (text/x-python, X-Code-Sha256);
                                           403 {"error": "embargoed", "release_at"} + Retry-After before,
                                           403 {"error": "not_released"} for one never crowned, 404 unknown
    GET /v1/weights                        the latest consensus weights (`WeightVector`); 404 before any
    GET /v1/freshness                      fresh held-out problems left, and why the next race is
                                           postponed when too few are (`Freshness`); 404 without a race bank
    GET /v1/trajectories?since=CURSOR&limit=N[&agent=A][&miner=HOTKEY]
                                           the firehose: JSONL of canonical trajectory records,
                                           `X-Next-Cursor` to continue from (see `firehose`);
                                           N defaults to 100 and is capped at 500

Everything here reads; nothing is signed, audited or rate-limited by the arena (put a proxy in front for
that). The handlers are plain functions, so FastAPI runs them in its thread pool, off the event loop;
they read the competition through `services.reader` (a `CompetitionReader`) on `app.state`.
Race secrets are withheld here as well as by the reader: a race still open or running never shows its
seed, problems or race clusters, whatever the reader returns.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime

import orjson
from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import BaseModel, ValidationError

from shoparena.arena.api.services import Services
from shoparena.arena.codestore import code_sha256
from shoparena.arena.competition.firehose import DEFAULT_LIMIT, MAX_LIMIT, BadCursor, read_page
from shoparena.arena.competition.models import AgentDetail, CompetitionReader, Race
from shoparena.arena.errors import ArenaError
from shoparena.arena.models import Refusal
from shoparena.store import RecordFilter

MAX_RACES = 200
SEALED_STATES = frozenset({"QUALIFYING_OPEN", "RACE_RUNNING"})
"""A race in these states has not revealed its seed: its draw stays secret."""
SUBMISSION_ID_CHARS = frozenset("0123456789abcdef")
CODE_SHA256_HEADER = "X-Code-Sha256"
NEXT_CURSOR_HEADER = "X-Next-Cursor"
RECORDS_HEADER = "X-Records"
NDJSON = "application/x-ndjson"


class CodeWithheld(Refusal):
    """403 from the code endpoint: when (if ever) the code becomes public."""

    release_at: datetime | None = None


class Refused(Exception):
    def __init__(self, status: int, body: Refusal, retry_after_s: int | None = None):
        super().__init__(body.message)
        self.status = status
        self.body = body
        self.retry_after_s = retry_after_s


def _json(value: BaseModel | list[BaseModel], status: int = 200, headers: dict | None = None) -> Response:
    if isinstance(value, list):
        data = orjson.dumps([item.model_dump(mode="json") for item in value])
    else:
        data = value.model_dump_json().encode()
    return Response(data, status_code=status, media_type="application/json", headers=headers)


def _refusal_response(exc: Refused) -> Response:
    headers = {"Retry-After": str(exc.retry_after_s)} if exc.retry_after_s is not None else None
    return _json(exc.body, exc.status, headers)


def _answer(make: Callable[[], Response]) -> Response:
    """Run a handler; refusals and an arena that cannot serve (503) answer in the signed API's shape."""
    try:
        return make()
    except Refused as exc:
        return _refusal_response(exc)
    except ArenaError as exc:
        body = Refusal(error="unavailable", message=f"the arena cannot serve this now: {exc}")
        return _json(body, 503)


def not_found(what: str) -> Refused:
    return Refused(404, Refusal(error="not_found", message=what))


def sealed(race: Race) -> Race:
    """`race` as the public may see it now: no seed, problems or race clusters before it closes."""
    if race.state in SEALED_STATES:
        return race.model_copy(update={"seed": None, "problem_ids": None, "race_clusters": None})
    return race


def plausible_submission_id(submission_id: str) -> bool:
    return len(submission_id) == 32 and set(submission_id) <= SUBMISSION_ID_CHARS


def code_release(detail: AgentDetail, now: datetime) -> Refused | None:
    """Why the code of `detail` may not be served at `now` (None: it may)."""
    release_at = detail.code_release_at
    if release_at is None:
        body = CodeWithheld(
            error="not_released",
            message=f"submission {detail.submission_id} was never crowned: its code is not released",
        )
        return Refused(403, body)
    if now < release_at:
        wait = math.ceil((release_at - now).total_seconds())
        body = CodeWithheld(
            error="embargoed",
            message=f"submission {detail.submission_id}'s code is embargoed until "
            f"{release_at.isoformat(timespec='seconds')}",
            release_at=release_at,
            retry_after_s=wait,
        )
        return Refused(403, body, retry_after_s=wait)
    return None


public_router = APIRouter()


@public_router.get("/v1/leaderboard")
def leaderboard(services: Services) -> Response:
    return _answer(lambda: _json(services.reader.leaderboard()))


@public_router.get("/v1/races")
def races(services: Services, limit: int = Query(50, ge=1)) -> Response:
    return _answer(lambda: _json([sealed(race) for race in services.reader.races(min(limit, MAX_RACES))]))


@public_router.get("/v1/races/{race_id}")
def race(services: Services, race_id: str) -> Response:
    def make() -> Response:
        found = services.reader.race(race_id)
        if found is None:
            raise not_found(f"no race {race_id[:80]!r} in this arena")
        return _json(sealed(found))

    return _answer(make)


def agent_detail(reader: CompetitionReader, submission_id: str) -> AgentDetail:
    found = reader.agent(submission_id) if plausible_submission_id(submission_id) else None
    if found is None:
        raise not_found(f"no submission {submission_id[:80]!r} in this arena")
    return found


@public_router.get("/v1/agents/{submission_id}")
def agent(services: Services, submission_id: str) -> Response:
    return _answer(lambda: _json(agent_detail(services.reader, submission_id)))


@public_router.get("/v1/agents/{submission_id}/code")
def agent_code(services: Services, submission_id: str) -> Response:
    def make() -> Response:
        detail = agent_detail(services.reader, submission_id)
        withheld = code_release(detail, services.now())
        if withheld is not None:
            raise withheld
        arena = services.arena
        view = arena.ledger.get(submission_id)
        if view is None:
            raise not_found(f"submission {submission_id} is not in this arena's ledger")
        data = arena.code.get(view.code_sha256)  # checked against its name by the code store
        if code_sha256(data) != view.code_sha256:
            raise ArenaError(f"code of submission {submission_id} does not match its sha256")
        headers = {CODE_SHA256_HEADER: view.code_sha256}
        return Response(data, media_type="text/x-python; charset=utf-8", headers=headers)

    return _answer(make)


@public_router.get("/v1/weights")
def weights(services: Services) -> Response:
    def make() -> Response:
        found = services.reader.weights()
        if found is None:
            raise not_found("no weights yet: they are set from the first complete race")
        return _json(found)

    return _answer(make)


@public_router.get("/v1/freshness")
def freshness(services: Services) -> Response:
    def make() -> Response:
        found = services.reader.freshness()
        if found is None:
            raise not_found("no race bank yet: the competition starts with `shoparena arena bank add`")
        return _json(found)

    return _answer(make)


@public_router.get("/v1/trajectories")
def trajectories(
    services: Services,
    since: str | None = None,
    limit: int = DEFAULT_LIMIT,
    agent: str | None = None,
    miner: str | None = None,
) -> Response:
    def make() -> Response:
        if limit < 1:
            body = Refusal(error="bad_limit", message=f"limit={limit}: a page holds 1 to {MAX_LIMIT} records")
            raise Refused(400, body)
        try:
            where = RecordFilter(agent=agent, miner=miner)
            page = read_page(services.arena.store, since, min(limit, MAX_LIMIT), where)
        except BadCursor as exc:
            raise Refused(400, Refusal(error="bad_cursor", message=str(exc))) from None
        except ValidationError as exc:
            raise Refused(400, Refusal(error="bad_filter", message=str(exc))) from None
        headers = {
            NEXT_CURSOR_HEADER: page.next_cursor,
            RECORDS_HEADER: str(page.records),
            "X-More": "true" if page.more else "false",
        }
        return Response(page.body, media_type=NDJSON, headers=headers)

    return _answer(make)
