"""Miner files made from another miner file: a variant is its template with other constants, and with
the source of project modules it includes.

Why render rather than keep the files: the season's step-budget and wider-search miners, and the loop's
distilled miner, differ from their template in a few top-level constants (and their docstring); a
second file would be a second copy of the whole policy to keep in step. A miner still reaches the
arena as one self-contained file (the sandbox has only the standard library and `miner_sdk`), so the
variant is rendered to text when it is submitted, tried or checked. A variant's docstring keeps the
template's explanation and says first what the variant changes. A template may include a module of
the project (`# include: MODULE` on a line of its own, the module kept to the standard library): the
season's reference miner reads queries by the reference agents' own rules that way, not by a copy.
"""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

Constant = bool | int | float | str


class Variant(BaseModel):
    """How a miner file is made from another: its template's constants it sets, and its own docstring."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    template: str
    """Stem of the miner file it is made from (in the season's `miners/`)."""
    constants: dict[str, Constant] = {}
    """Top-level `NAME = value` assignments of the template to replace; each must exist there once."""
    summary: str | None = None
    """The first paragraph of its module docstring (None: the template's); the rest is the template's."""
    includes: tuple[str, ...] = ()
    """Modules whose source replaces the template's `# include: MODULE` line (docstring and imports
    dropped: the template imports what they need)."""


def literal(value: Constant) -> str:
    """`value` as the template's author writes it: strings in double quotes."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def render(template_name: str, source: str, variant: Variant) -> str:
    """`source` (the template's text) with the variant's constants, docstring summary and included
    modules in place."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits: dict[str, tuple[int, int, str]] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in variant.constants
        ):
            name = node.targets[0].id
            if name in edits:
                raise ValueError(f"miner template {template_name}: constant {name} is assigned twice")
            edits[name] = (
                node.lineno,
                node.end_lineno or node.lineno,
                f"{name} = {literal(variant.constants[name])}\n",
            )
    missing = sorted(set(variant.constants) - set(edits))
    if missing:
        raise ValueError(f"miner template {template_name}: no top-level constant {', '.join(missing)}")
    if variant.summary is not None:
        first = tree.body[0] if tree.body else None
        if not (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
            and lines[first.lineno - 1].startswith('"""')
        ):
            raise ValueError(f"miner template {template_name}: no module docstring to rewrite")
        end = first.end_lineno or first.lineno
        body = "".join(lines[first.lineno - 1 : end])[3:]
        cut = body.find("\n\n")
        rest = body[cut:] if cut >= 0 else body[body.rindex('"""') :]
        edits["__doc__"] = (first.lineno, end, f'"""{variant.summary}{rest}')
    for module in variant.includes:
        marker = f"# include: {module}\n"
        at = [number for number, line in enumerate(lines, 1) if line == marker]
        if len(at) != 1:
            raise ValueError(f"miner template {template_name}: {len(at)} lines {marker.strip()!r}, not one")
        edits[module] = (at[0], at[0], included_source(template_name, source, module))
    for start, end, text in sorted(edits.values(), reverse=True):
        lines[start - 1 : end] = [text]
    return "".join(lines)


def included_source(template_name: str, template: str, module: str) -> str:
    """`module`'s source as a template includes it: without its docstring and imports, each of which
    the template must itself import (a miner file has no project to import from)."""
    path = importlib.import_module(module).__file__
    if path is None:
        raise ValueError(f"miner template {template_name}: {module} has no source file")
    source = Path(path).read_text(encoding="utf-8")
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    dropped: set[int] = set()
    for index, node in enumerate(tree.body):
        is_doc = index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if isinstance(node, ast.Import | ast.ImportFrom):
            statement = ast.get_source_segment(source, node)
            if statement not in template.splitlines():
                raise ValueError(f"miner template {template_name}: {module} needs `{statement}`")
        elif not is_doc:
            continue
        dropped.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    body = "".join(line for number, line in enumerate(lines, 1) if number not in dropped).strip("\n")
    return f"# -- rendered from {module} (edit it there) --\n{body}\n"
