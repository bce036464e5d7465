"""Commands that are imported only when they run.

`shoparena --help` used to import every command module, and with them torch, transformers, SQLAlchemy,
FastAPI and the rest: 2 s before the help appeared. The top-level group here knows each command by
name, by the module that defines it and by its one-line help, and imports the module only when that
command (or its own `--help`) is asked for. `shoparena --help` renders the one-liners without importing
anything.

A command module for this scheme has a `register(app: typer.Typer)` that adds its commands and groups
to `app` (as every `shoparena/cli/*_cmd.py` does), and each name it adds is listed in `COMMANDS` in
`shoparena/cli/__init__.py` with that module and the first paragraph of its help
(tests/cli/test_lazy_cli.py checks the list against the modules). A module that `register` imports
should keep its own top-level imports cheap: torch, transformers, SQLAlchemy and the like belong
inside the functions that use them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from difflib import get_close_matches
from typing import Any, ClassVar

import typer
from typer import _click
from typer.core import TyperCommand, TyperGroup

from shoparena.cli.help_text import reflow_app

PACKAGE = "shoparena.cli"
# module name -> the Typer its `register` filled (registered once per process, as at import before).
_REGISTERED: dict[str, typer.Typer] = {}


def registered(module_name: str) -> typer.Typer:
    """The Typer that `shoparena.cli.<module_name>.register` filled, made on first use."""
    if module_name not in _REGISTERED:
        module = importlib.import_module(f"{PACKAGE}.{module_name}")
        holder = typer.Typer()
        module.register(holder)
        reflow_app(holder)
        _REGISTERED[module_name] = holder
    return _REGISTERED[module_name]


class LazyGroup(TyperGroup):
    """A Typer group whose commands listed in `lazy` (name -> (module, one-line help)) are built from
    their module on first use; help listings show the one-liners without importing anything."""

    lazy: ClassVar[dict[str, tuple[str, str]]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self._listing = False

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return [*self.commands, *(name for name in self.lazy if name not in self.commands)]

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        if cmd_name in self.commands or cmd_name not in self.lazy:
            return self.commands.get(cmd_name)
        module_name, short_help = self.lazy[cmd_name]
        if self._listing:
            return TyperCommand(name=cmd_name, help=short_help)
        built = typer.main.get_group(registered(module_name))
        for name, command in built.commands.items():
            if name in self.lazy:
                self.commands.setdefault(name, command)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: _click.Context, args: list[str]) -> Any:
        """As Typer's, whose "Did you mean" looks only at the commands already built."""
        try:
            return super().resolve_command(ctx, args)
        except _click.exceptions.UsageError as exc:
            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if matches and "Did you mean" not in exc.message:
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {', '.join(map(repr, matches))}?"
            raise

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        self._listing = True
        try:
            return super().format_help(ctx, formatter)
        finally:
            self._listing = False


def walk_commands(
    command: _click.Command, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, click command) for `command` and every command and group below it, loading lazy ones."""
    yield path, command
    if isinstance(command, TyperGroup):
        ctx = _click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                yield from walk_commands(sub, (*path, name))
