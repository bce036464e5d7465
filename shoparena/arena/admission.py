"""Admission (static analysis) of a miner's file — a placeholder holding the interface only.

The real rule set (issue 12, "Admission") is written separately and replaces this module at merge; the
server depends on nothing but `check_submission(code) -> list[Violation]` and `Violation`. Until then
this checks the format rules and one obvious security rule, so the API can be exercised end to end.
"""

from __future__ import annotations

import ast
from typing import Literal

from pydantic import BaseModel

MAX_CODE_BYTES = 1024 * 1024
ENTRY_POINT = "agent_main"


class Violation(BaseModel):
    rule: str
    kind: Literal["security", "integrity", "format"]
    line: int | None = None
    col: int | None = None
    message: str


def check_submission(code: bytes) -> list[Violation]:
    """Every violation found (empty: admitted)."""
    if len(code) > MAX_CODE_BYTES:
        return [
            Violation(
                rule="format.size",
                kind="format",
                message=f"the file is {len(code)} bytes; the limit is {MAX_CODE_BYTES} (1 MiB)",
            )
        ]
    try:
        text = code.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = code[: exc.start].count(b"\n") + 1
        return [
            Violation(
                rule="format.utf8",
                kind="format",
                line=line,
                col=exc.start - (code.rfind(b"\n", 0, exc.start) + 1),
                message=f"not UTF-8: byte 0x{code[exc.start]:02x} at offset {exc.start}",
            )
        ]
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return [
            Violation(
                rule="format.syntax",
                kind="format",
                line=exc.lineno,
                col=exc.offset,
                message=f"does not parse: {exc.msg}",
            )
        ]
    violations = []
    entry = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == ENTRY_POINT]
    if not entry or len(entry[-1].args.args) + len(entry[-1].args.posonlyargs) != 1:
        violations.append(
            Violation(
                rule="format.agent_main",
                kind="format",
                message=f"the file must define `def {ENTRY_POINT}(problem_data)` at module level",
            )
        )
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        if any(name.split(".")[0] == "subprocess" for name in names):
            violations.append(
                Violation(
                    rule="security.banned_import",
                    kind="security",
                    line=node.lineno,
                    col=node.col_offset,
                    message="import of subprocess is not allowed",
                )
            )
    return violations
