"""`check_submission(code) -> list[Violation]`: the whole admission pipeline for one submitted file.

Order: format (size, encoding, coding cookie, parse, agent_main) → names → security → the doors of
issue 22 (`doors.py`) → integrity (literal shapes, then the evaluator's assembled values). Format failures stop the pipeline (there is
no tree to analyse); security and integrity findings are all reported, so a miner sees every problem
at once. Deterministic: the same bytes give the same list, in (line, col, rule) order.
"""

from __future__ import annotations

import ast
import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from shoparena.admission.doors import DoorCheck
from shoparena.admission.evaluator import BudgetExhausted, TooDeep
from shoparena.admission.integrity import IntegrityCheck
from shoparena.admission.interpreter import Interpreter
from shoparena.admission.models import Violation, violation
from shoparena.admission.names import collect, module_constants
from shoparena.admission.security import SecurityCheck
from shoparena.admission.syntax import Tree

MAX_SOURCE_BYTES = 1 << 20
"""SPEC §6: a submission is one Python file of at most 1 MiB."""
MAX_PER_RULE = 20
"""Findings listed per rule; the rest are summarised in one more finding (a table of 5,000 ids is one
problem, not 5,000)."""
INTERPRET_BASE_BUDGET = 150_000
INTERPRET_BUDGET_PER_NODE = 1.5
"""The evaluator's operation budget. Ordinary code needs about one operation per node (the 1 MiB
benchmark file: 128k for 140k nodes), so this leaves room for constant loops while bounding the
worst case: a file built to exhaust it is rejected (`integrity.unanalysable`) within the 1 s target."""
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


class _Collector:
    """Findings as they are reported, deduplicated; sorted and capped per rule only at the end, so
    what is listed never depends on the order the checks ran in."""

    def __init__(self, source: str = "") -> None:
        raw = source.encode("utf-8", "surrogatepass")
        self.lines = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        self.found: set[tuple[int, int, str, str]] = set()

    def add(self, rule: str, message: str, node: Any = None) -> None:
        line = getattr(node, "lineno", None)
        col = getattr(node, "col_offset", None)
        if line is not None and col is not None and 0 < line <= len(self.lines):
            col = len(self.lines[line - 1][:col].decode("utf-8", "replace"))  # ast counts UTF-8 bytes
        self.found.add((line or 0, -1 if col is None else col, rule, message))

    def result(self) -> list[Violation]:
        """Every finding names its rule and a line: a whole-file finding points at line 1, and the summary
        of a rule's findings past the cap points at the first one it leaves out."""
        kept: list[Violation] = []
        per_rule: dict[str, int] = {}
        first_left_out: dict[str, tuple[int, int]] = {}
        for line, col, rule, message in sorted(self.found):
            per_rule[rule] = per_rule.get(rule, 0) + 1
            if per_rule[rule] <= MAX_PER_RULE:
                kept.append(violation(rule, message, line or 1, None if col < 0 else col + 1))
            else:
                first_left_out.setdefault(rule, (line or 1, col))
        extra = [
            violation(
                rule,
                f"… and {count - MAX_PER_RULE} more findings of this rule, the first here",
                first_left_out[rule][0],
                None if first_left_out[rule][1] < 0 else first_left_out[rule][1] + 1,
            )
            for rule, count in sorted(per_rule.items())
            if count > MAX_PER_RULE
        ]
        return kept + extra


def _decode(code: bytes) -> tuple[str | None, list[Violation]]:
    if len(code) > MAX_SOURCE_BYTES:
        return None, [
            violation("format.size", f"{len(code):,} bytes; the limit is {MAX_SOURCE_BYTES:,} (1 MiB)", 1)
        ]
    try:
        text = code.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = code[: exc.start].count(b"\n") + 1
        col = exc.start - (code.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, [
            violation("format.encoding", f"not UTF-8: byte 0x{code[exc.start]:02x} is invalid", line, col)
        ]
    for number, raw in enumerate(code.split(b"\n", 2)[:2], start=1):
        match = _CODING.match(raw.lstrip(b"\xef\xbb\xbf"))
        if match:
            declared = match.group(1).decode("ascii", "replace").lower().replace("_", "-")
            if declared not in ("utf-8", "utf8") and not declared.startswith("utf-8-"):
                message = f"declares source encoding {declared!r}: Python would decode it differently"
                return None, [violation("format.encoding", message, number, 1)]
    return text.removeprefix("\ufeff"), []


def _parse(text: str) -> tuple[ast.Module | None, list[Violation]]:
    try:
        return ast.parse(text, filename="<agent>"), []
    except SyntaxError as exc:
        message = f"does not parse: {exc.msg}"
        line = exc.lineno if exc.lineno and exc.lineno > 0 else 1
        col = exc.offset if exc.lineno and exc.offset and exc.offset > 0 else None
        return None, [violation("format.syntax", message, line, col)]
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, [violation("format.syntax", f"does not parse: {type(exc).__name__}: {exc}", 1)]


def _callable_with_one(args: ast.arguments) -> bool:
    positional = len(args.posonlyargs) + len(args.args)
    required = positional - len(args.defaults)
    kwonly_required = sum(default is None for default in args.kw_defaults)
    takes_one = positional >= 1 or args.vararg is not None
    return takes_one and required <= 1 and kwonly_required == 0


def _agent_main(tree: ast.Module) -> list[Violation]:
    definitions = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "agent_main"
    ]
    if not definitions:
        return [violation("format.agent_main", "no module-level `def agent_main(problem_data)`", 1)]
    last = definitions[-1]
    if isinstance(last, ast.AsyncFunctionDef):
        return [
            violation("format.agent_main", "agent_main must be a plain function, not async", last.lineno, 1)
        ]
    if not _callable_with_one(last.args):
        return [
            violation(
                "format.agent_main", "agent_main must accept exactly one positional argument", last.lineno, 1
            )
        ]
    return []


def _require_bytes(code: object) -> None:
    if not isinstance(code, bytes | bytearray | memoryview):
        raise TypeError(f"check_submission takes the file's bytes, not {type(code).__name__}")


@contextmanager
def _without_cyclic_gc() -> Iterator[None]:
    """Parsing 1 MiB makes ~10^5 objects and the analysis as many again, none of them in reference
    cycles that matter for the few seconds admission runs; the cyclic collector re-scanning them all
    cost a third of the time (benchmarked: 1.23 s → 0.85 s CPU for 1 MiB of code). Restored after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def analyse(code: bytes) -> list[Violation]:
    """The pipeline without the fail-closed guard (tests call this to see the checker's own errors)."""
    _require_bytes(code)
    with _without_cyclic_gc():
        return _analyse(code)


def _analyse(code: bytes) -> list[Violation]:
    text, problems = _decode(bytes(code))
    if text is None:
        return problems
    module, problems = _parse(text)
    if module is None:
        return problems
    found = _Collector(text)
    for item in _agent_main(module):
        found.found.add((item.line or 0, (item.col or 0) - 1, item.rule, item.message))
    tree = Tree(module)
    names = collect(tree)
    constants = module_constants(module, names)
    security = SecurityCheck(names, constants, found.add)
    security.run(tree)
    DoorCheck(names, security.fold, security.module_paths, found.add).run(tree)
    integrity = IntegrityCheck(found.add, names.is_builtin, text)
    integrity.run(tree)

    def observe(value: str | bytes, node: ast.AST) -> None:
        if not integrity.assembled(value, node) and isinstance(value, str):
            security.check_string(value, node, assembled=True)

    def unfollowed(node: ast.AST, why: str) -> None:
        found.add("integrity.unanalysable", why, node)

    interpreter = Interpreter(
        tree,
        on_unfollowed=unfollowed,
        on_keyed=integrity.keyed,
        aliases=names.evaluator_aliases(),
        bound_names=names.bound,
        budget=INTERPRET_BASE_BUDGET + int(INTERPRET_BUDGET_PER_NODE * len(tree.nodes)),
        observe=observe,
    )
    try:
        interpreter.run_module()
    except BudgetExhausted:
        found.add(
            "integrity.unanalysable",
            "constant computations exceed the analysis budget (long loops over constant data?): "
            "it ran out here",
            interpreter.statement,
        )
    except TooDeep:
        found.add("integrity.unanalysable", "code nested too deeply to analyse", interpreter.statement)
    return found.result()


def check_submission(code: bytes) -> list[Violation]:
    """Admission's verdict on one submitted file: the violations found (an empty list: admitted).

    Never raises for any input bytes: if the checker itself fails, the file is rejected with
    `format.unanalysable` (admission fails closed)."""
    _require_bytes(code)
    try:
        return analyse(code)
    except Exception as exc:
        return [
            violation("format.unanalysable", f"the checker failed on this file ({type(exc).__name__})", 1)
        ]
