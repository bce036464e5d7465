"""The arena's HTTP service (FastAPI), run by `shoparena arena serve`: one router per audience, put
together over an opened arena.

- miners (`miners`): signed submissions and their status;
- validators (`validators`): the job layer — claims, heartbeats, code, releases, results;
- everyone (`common`): /v1/health, and /v1/whoami for any signed role;
- the public (`public`): unsigned reads of the competition — /v1/leaderboard, /v1/races, /v1/agents,
  /v1/weights, /v1/trajectories — over a `CompetitionReader`;
- the web (`web`): the leaderboard pages at `/`.

The signed routes pass the gate (`gate`: authentication, body caps, refusals, audit); what they serve
from (`services.ArenaServices`) and the gate sit on `app.state`. With `tick_s` the app's lifespan
runs the race scheduler on the same engine and job board as the routes.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from shoparena import __version__
from shoparena.admission import check_submission
from shoparena.arena.api.common import common_router
from shoparena.arena.api.gate import Gate
from shoparena.arena.api.miners import miner_router
from shoparena.arena.api.public import public_router
from shoparena.arena.api.services import ArenaServices, Checker
from shoparena.arena.api.validators import validator_router
from shoparena.arena.api.web import web_router
from shoparena.arena.arena import Arena
from shoparena.arena.competition.engine import RaceEngine
from shoparena.arena.competition.job_source import CompetitionJobSource
from shoparena.arena.competition.models import CompetitionReader
from shoparena.arena.competition.scheduler import RaceScheduler
from shoparena.arena.competition.view import CompetitionView
from shoparena.arena.errors import ArenaError
from shoparena.arena.jobs.board import JobBoard
from shoparena.arena.jobs.intake import ResultIntake
from shoparena.harness.guarded_http import MAX_HEAD_BYTES, GuardedH11Protocol

MAX_CONNECTIONS = 1000
"""Open connections per worker process; more are answered 503 and closed (below a default 1024-file limit)."""
HEAD_TIMEOUT_S = 10.0
"""A connection must send a whole request head within this of connecting (or of its last reply)."""


class ArenaProtocol(GuardedH11Protocol):
    """The arena's HTTP protocol: h11 with a 16 KiB head cap counted whole, a head deadline and a
    connection cap (`harness.guarded_http`). A module-level class, so `--workers` can pickle it.

    Why: without them 300 slow-loris connections were held for as long as their client liked, and a
    60 KiB head sent in one write was served (issue 22)."""

    max_connections = MAX_CONNECTIONS
    head_timeout_s = HEAD_TIMEOUT_S
    max_head_bytes = MAX_HEAD_BYTES


def create_app(
    arena: Arena,
    *,
    check: Checker = check_submission,
    clock: Callable[[], float] = time.time,
    competition: CompetitionReader | None = None,
    tick_s: float = 0.0,
    owns_arena: bool = False,
) -> FastAPI:
    """The API over an opened arena. `check` is admission (`check_submission` of `admission`); `clock`
    is Unix seconds (tests move it); `competition` is what the public read API and the leaderboard
    page read (default: `CompetitionView` over this arena, on the server's clock); `tick_s` > 0 runs
    the race scheduler every that many seconds while the app is served with its lifespan;
    `owns_arena`: the app closes the arena when it shuts down (a worker process opened it)."""
    board = JobBoard(arena, clock, source=CompetitionJobSource(arena.dir, arena.config, arena.store.engine))
    engine = RaceEngine(arena, clock=clock, board=board)
    scheduler = RaceScheduler(engine, tick_s) if tick_s > 0 else None

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if scheduler is not None:
            scheduler.start()
        try:
            yield
        finally:
            if scheduler is not None:
                await run_in_threadpool(scheduler.stop)
            if owns_arena:
                await run_in_threadpool(arena.close)

    app = FastAPI(
        title="shoparena arena",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    reader = competition if competition is not None else CompetitionView(arena, engine)
    app.state.gate = Gate(arena, clock)
    app.state.services = ArenaServices(
        arena=arena, board=board, intake=ResultIntake(board), check=check, reader=reader, clock=clock
    )
    for router in (validator_router, common_router, miner_router, public_router, web_router):
        app.include_router(router)
    return app


ARENA_UVICORN = {
    "server_header": False,
    "proxy_headers": False,  # the audit's remote address is the peer's, never a header's claim
    "timeout_keep_alive": 5,
    "lifespan": "on",  # the race scheduler starts and stops with the app
    # h11, never httptools: uvicorn's httptools protocol buffers headers without any limit, so one
    # client could send gigabytes of them; the guarded h11 protocol refuses a head over 16 KiB however
    # it arrives, closes a connection whose head is not in within 10 s, and caps open connections.
    "http": ArenaProtocol,
    "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
}


def logging_config() -> dict:
    """uvicorn's logging, plus the arena's own lines (the race scheduler's steps, refused requests the
    operator must see) on stderr whatever `--log-level` says of uvicorn's."""
    from uvicorn.config import LOGGING_CONFIG

    return {
        **LOGGING_CONFIG,
        "formatters": {**LOGGING_CONFIG["formatters"], "plain": {"format": "%(message)s"}},
        "handlers": {
            **LOGGING_CONFIG["handlers"],
            "arena": {"formatter": "plain", "class": "logging.StreamHandler", "stream": "ext://sys.stderr"},
        },
        "loggers": {
            **LOGGING_CONFIG["loggers"],
            "shoparena": {"handlers": ["arena"], "level": "INFO", "propagate": False},
        },
    }


def serve(
    app: FastAPI | str, host: str = "127.0.0.1", port: int = 8742, log_level: str = "info", **options
) -> None:
    """Run until interrupted (Ctrl-C, SIGTERM). `app` is an app, or the import path of a factory (for
    `workers` > 1, each worker process makes its own)."""
    import uvicorn

    settings = {**ARENA_UVICORN, "log_config": logging_config(), **options}
    uvicorn.run(app, host=host, port=port, log_level=log_level, **settings)


@contextmanager
def running(
    app: FastAPI, host: str = "127.0.0.1", port: int = 0, http: type[GuardedH11Protocol] = ArenaProtocol
) -> Iterator[str]:
    """Serve `app` from a background thread on a real socket (port 0: a free one), with the arena's
    uvicorn settings but no lifespan (no race scheduler: callers tick the engine themselves); yields
    its base URL. For tests, benchmarks, demos and the simulated season; `http` is the protocol with
    its limits (tests pass shorter ones, `harness.guarded_http.guarded_protocol`)."""
    from shoparena.harness.loopback import AppThread

    options = {k: v for k, v in ARENA_UVICORN.items() if k not in AppThread.FIXED}
    options["http"] = http
    server = AppThread(app, host, port, name="the arena server", **options)
    try:
        server.start()
    except (OSError, RuntimeError) as exc:
        raise ArenaError(str(exc)) from None
    try:
        yield server.url
    finally:
        server.stop()
