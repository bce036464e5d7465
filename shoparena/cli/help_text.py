"""Help text that reads well at any terminal width.

Docstrings in this package are hard-wrapped at 100 columns for the source's sake. Typer (0.29) keeps
those line breaks, and Rich then wraps each line again at the terminal's width, so an 80-column
`--help` showed a long line, then a two-word stub, then a long line. `reflow` joins the hard-wrapped
lines of each prose paragraph back into one line for Rich to wrap, and leaves alone the lines that are
laid out on purpose: indented examples, command lines, bullets, numbered items, the line after a colon
and paragraphs that start with click's no-rewrap marker (`\\b`).

`keep_indents` works around a second Typer habit: it runs `inspect.cleandoc` over the text after the
first paragraph, which strips the indent that lines 2.. share. When that text is "Examples:" and the
indented command lines, the examples came out flush left.
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


def keep_indents(text: str) -> str:
    """`text` with one more line break before its second paragraph, so that Typer's `cleandoc` of the
    rest starts with an empty line and measures the indent on every line of it (see the module)."""
    head, gap, rest = text.partition("\n\n")
    return f"{head}\n\n\n{rest.lstrip(chr(10))}" if gap else text


def tidy(text: str) -> str:
    """The help Typer should be given for a docstring or help string."""
    return keep_indents(reflow(inspect.cleandoc(text)))


def reflow_app(app: typer.Typer) -> None:
    """Reflow the help of every command and group under `app`, in place (call after registering)."""
    if app.info.help:
        app.info.help = tidy(str(app.info.help))
    for command in app.registered_commands:
        text = command.help or (inspect.getdoc(command.callback) if command.callback else None)
        if text:
            command.help = tidy(text)
    for group in app.registered_groups:
        if group.help:
            group.help = tidy(str(group.help))
        if group.typer_instance is not None:
            reflow_app(group.typer_instance)
