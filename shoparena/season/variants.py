"""Miner files made from another miner file: a variant is its template with other constants.

Why render rather than keep the files: the season's step-budget and wider-search miners, and the loop's
distilled miner, differ from their template in a few top-level constants (and their docstring); a
second file would be a second copy of the whole policy to keep in step. A miner still reaches the
arena as one self-contained file (the sandbox has only the standard library and `miner_sdk`), so the
variant is rendered to text when it is submitted, tried or checked. A variant's docstring keeps the
template's explanation and says first what the variant changes.
"""

from __future__ import annotations

import ast
import json

from pydantic import BaseModel, ConfigDict

Constant = bool | int | float | str


class Variant(BaseModel):
    """How a miner file is made from another: its template's constants it sets, and its own docstring."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    template: str
    """Stem of the miner file it is made from (in the season's `miners/`)."""
    constants: dict[str, Constant]
    """Top-level `NAME = value` assignments of the template to replace; each must exist there once."""
    summary: str | None = None
    """The first paragraph of its module docstring (None: the template's); the rest is the template's."""


def literal(value: Constant) -> str:
    """`value` as the template's author writes it: strings in double quotes."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def render(template_name: str, source: str, variant: Variant) -> str:
    """`source` (the template's text) with the variant's constants and docstring summary in place."""
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
    for start, end, text in sorted(edits.values(), reverse=True):
        lines[start - 1 : end] = [text]
    return "".join(lines)
