"""`shoparena tools`: the tool schemas of a harness profile, as a table or as the OpenAI `tools` JSON."""

from __future__ import annotations

import typer
from rich.table import Table

from shoparena.cli.common import console, fail, print_json
from shoparena.harness.tool_specs import DEFAULT_STEP_CAPS, PROFILES, TOOL_SPECS, profile_tools, tool_schemas


def tools(
    profile: str = typer.Option("oro7", "--profile", "-p", help=f"One of: {', '.join(PROFILES)}."),
    as_json: bool = typer.Option(False, "--json", help="Print the OpenAI function schemas as a JSON list."),
) -> None:
    """Show the tools a profile gives the agent, with their parameters.

    Examples:
      shoparena tools
      shoparena tools --profile upstream4
      shoparena tools --profile full --json > tools.json
    """
    if profile not in PROFILES:
        raise fail(f"unknown profile {profile!r}; use one of {', '.join(PROFILES)}")
    if as_json:
        print_json(tool_schemas(profile))
        return
    table = Table(
        title=f"profile {profile}: {len(PROFILES[profile])} tools, step cap {DEFAULT_STEP_CAPS[profile]}",
        show_lines=True,
    )
    table.add_column("tool", style="bold cyan", no_wrap=True)
    table.add_column("parameters")
    table.add_column("description")
    for name in profile_tools(profile):
        spec = TOOL_SPECS[name]
        params = "\n".join(
            f"{p.name}{'' if p.required else '?'}: {p.type}"
            + (f" ({'|'.join(p.enum)})" if p.enum else "")
            + (f" = {p.default!r}" if p.default is not None else "")
            for p in spec.params
        )
        table.add_row(name, params or "-", spec.description)
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("tools")(tools)
