"""`arena serve --workers N`: N uvicorn worker processes behind one port, each making its own app over
its own opened arena (a worker cannot inherit open database connections), told what to open through
the environment, as uvicorn starts workers from an import path.

Only on PostgreSQL. There every write the routes make is safe from several processes at once (the
job board and the ledger take PostgreSQL locks, nonces are claimed atomically), and the race scheduler
each worker runs ticks only while it holds the arena's ticker lock, so one process ticks at a time.
SQLite is refused: it lets one process write at a time, so more workers would only queue on its lock.
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI
from pydantic import BaseModel

from shoparena.arena.api.app import create_app, serve
from shoparena.arena.arena import Arena, open_arena
from shoparena.arena.errors import ArenaError

SETTINGS_ENV = "SHOPARENA_ARENA_WORKER"
FACTORY = "shoparena.arena.api.workers:worker_app"
STARTUP_S = 120
"""How long a worker may take to answer uvicorn's health check while it starts: it imports the package
and opens the arena first (uvicorn's 5 s default kills a worker on a loaded machine before it serves)."""


class WorkerSettings(BaseModel):
    """What each worker opens and runs."""

    arena_dir: Path
    nonce_store: str | None = None
    tick_s: float = 0.0


def check_workers(arena: Arena, workers: int) -> None:
    """Refuse several workers on an arena whose state is not on PostgreSQL."""
    dialect = arena.store.engine.dialect.name
    if workers > 1 and dialect != "postgresql":
        raise ArenaError(
            f"--workers {workers} needs the arena's state on PostgreSQL; {arena.dir} keeps it in {dialect}, "
            "which lets one process write at a time (serve with --workers 1, or init the arena with "
            "--store postgresql://…)"
        )


def worker_app() -> FastAPI:
    settings = WorkerSettings.model_validate_json(os.environ[SETTINGS_ENV])
    arena = open_arena(settings.arena_dir, nonce_store=settings.nonce_store)
    return create_app(arena, tick_s=settings.tick_s, owns_arena=True)


def serve_workers(settings: WorkerSettings, workers: int, host: str, port: int, log_level: str) -> None:
    """Run `workers` worker processes until interrupted."""
    os.environ[SETTINGS_ENV] = settings.model_dump_json()
    serve(
        FACTORY,
        host=host,
        port=port,
        log_level=log_level,
        factory=True,
        workers=workers,
        timeout_worker_healthcheck=STARTUP_S,
    )
