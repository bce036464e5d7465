"""What the routers serve from: built once by `create_app`, kept on `app.state`, handed to each route
by the `Services` dependency (so routes are module-level functions, not closures)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

from fastapi import Depends, Request

from shoparena.admission import Violation
from shoparena.arena.arena import Arena
from shoparena.arena.competition.models import CompetitionReader
from shoparena.arena.jobs.board import JobBoard
from shoparena.arena.jobs.intake import ResultIntake

Checker = Callable[[bytes], list[Violation]]


@dataclass(frozen=True)
class ArenaServices:
    """The opened arena, its job board (the one the race engine makes race jobs on) and the intake of
    results posted to its leases, admission, what the public reads of the competition, and the
    server's clock (Unix seconds; tests move it)."""

    arena: Arena
    board: JobBoard
    intake: ResultIntake
    check: Checker
    reader: CompetitionReader
    clock: Callable[[], float]

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)


async def arena_services(request: Request) -> ArenaServices:
    return request.app.state.services


Services = Annotated[ArenaServices, Depends(arena_services)]
