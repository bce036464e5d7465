"""Help text that reads well at any terminal width.

Docstrings in this package are hard-wrapped at 100 columns for the source's sake. Typer (0.29) keeps
those line breaks, and Rich then wraps each line again at the terminal's width, so an 80-column
`--help` showed a long line, then a two-word stub, then a long line. `reflow` joins the hard-wrapped
lines of each prose paragraph back into one line for Rich to wrap, and leaves alone the lines that are
laid out on purpose: indented examples, command lines, bullets, numbered items, the line after a colon
and paragraphs that start with click's no-rewrap marker (`\\b`).
"""

from __future__ import annotations

import inspect
import re

import typer

NO_REWRAP = "\b"
_OWN_LINE = re.compile(r"(\s|shoparena |\$ |[-*•] |\d+[.)] |\|)")


def stands_alone(line: str) -> bool:
    """A line laid out on purpose: it keeps its line break."""
    return bool(_OWN_LINE.match(line))


def reflow(text: str) -> str:
    """`text` with each prose paragraph's soft line breaks turned into spaces (see the module)."""
    paragraphs = []
    for paragraph in text.split("\n\n"):
        if paragraph.startswith(NO_REWRAP):
            paragraphs.append(paragraph)
            continue
        lines: list[str] = []
        for line in paragraph.split("\n"):
            if lines and not stands_alone(line) and not lines[-1].rstrip().endswith(":") and line.strip():
                lines[-1] = f"{lines[-1].rstrip()} {line.strip()}"
            else:
                lines.append(line)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def reflow_app(app: typer.Typer) -> None:
    """Reflow the help of every command and group under `app`, in place (call after registering)."""
    if app.info.help:
        app.info.help = reflow(inspect.cleandoc(str(app.info.help)))
    for command in app.registered_commands:
        text = command.help or (inspect.getdoc(command.callback) if command.callback else None)
        if text:
            command.help = reflow(inspect.cleandoc(text))
    for group in app.registered_groups:
        if group.help:
            group.help = reflow(inspect.cleandoc(str(group.help)))
        if group.typer_instance is not None:
            reflow_app(group.typer_instance)
