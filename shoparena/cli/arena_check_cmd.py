"""`shoparena arena check AGENT.py [--json]`: run admission on a file, exactly as the server does.

Exit status: 0 admitted, 1 rejected (the violations are printed), 2 usage errors (no such file, …).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from shoparena.admission import Violation, check_submission
from shoparena.cli.common import console, fail, print_json

EXIT_REJECTED = 1


def render(path: Path, violations: list[Violation]) -> Table:
    table = Table(title=f"{path} · rejected: {len(violations)} violation(s)", title_justify="left")
    table.add_column("line:col", justify="right", no_wrap=True)
    table.add_column("kind")
    table.add_column("rule", no_wrap=True)
    table.add_column("message")
    for item in violations:
        where = "-" if item.line is None else f"{item.line}:{item.col or 0}"
        table.add_row(where, item.kind, item.rule, item.message)
    return table


def register(arena_app: typer.Typer) -> None:
    @arena_app.command("check")
    def check(
        agent: Annotated[Path, typer.Argument(help="The agent file a miner would submit.")],
        json_output: Annotated[
            bool, typer.Option("--json", help='Print {"status", "violations"} as JSON (the server\'s shape).')
        ] = False,
    ) -> None:
        """Admission's static analysis of one agent file: format, security and integrity rules.

        Examples:
          shoparena arena check agent.py
          shoparena arena check agent.py --json
        """
        if not agent.is_file():
            raise fail(f"{agent}: no such file")
        try:
            code = agent.read_bytes()
        except OSError as exc:
            raise fail(f"{agent}: cannot read: {exc.strerror or exc}") from None
        violations = check_submission(code)
        if json_output:
            print_json(
                {
                    "status": "rejected" if violations else "admitted",
                    "violations": [item.model_dump() for item in violations],
                }
            )
        elif violations:
            console.print(render(agent, violations))
        else:
            console.print(f"[green]admitted[/]: {agent} passes every admission rule")
        if violations:
            raise typer.Exit(EXIT_REJECTED)
