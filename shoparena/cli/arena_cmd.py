"""`shoparena arena`: the arena's operator commands (one Typer sub-app; each command lives in its own
module and registers itself here)."""

from __future__ import annotations

import typer

from shoparena.cli import arena_check_cmd

arena_app = typer.Typer(
    name="arena",
    help="The arena: admission checks for submitted agents, and the server that takes submissions.",
    no_args_is_help=True,
)

arena_check_cmd.register(arena_app)


def register(app: typer.Typer) -> None:
    app.add_typer(arena_app, name="arena")
