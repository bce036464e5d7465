"""What admission reports: one `Violation` per finding, each naming a rule from the fixed catalogue.

Rule ids are part of the arena's API (a rejected submission's 422 body lists them, cooldowns depend on
their kind), so they are stable: add rules, never rename them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Kind = Literal["security", "integrity", "format"]


class Violation(BaseModel):
    """One finding. `line`/`col` are 1-based and point into the submitted file; a finding about the whole
    file (its size, a missing agent_main, the checker failing) points at line 1 with no column."""

    model_config = ConfigDict(frozen=True)

    rule: str
    kind: Kind
    line: int | None = None
    col: int | None = None
    message: str


class Rule(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    kind: Kind
    summary: str


_RULES = [
    # -- format ----------------------------------------------------------------------------------------
    Rule(id="format.size", kind="format", summary="the file is larger than 1 MiB"),
    Rule(
        id="format.encoding",
        kind="format",
        summary="the file is not UTF-8, or declares another source encoding in a coding cookie",
    ),
    Rule(id="format.syntax", kind="format", summary="the file does not parse as Python"),
    Rule(
        id="format.agent_main",
        kind="format",
        summary="no module-level `def agent_main(problem_data)` callable with one positional argument",
    ),
    Rule(
        id="format.unanalysable",
        kind="format",
        summary="the checker could not finish analysing the file (it fails closed)",
    ),
    # -- security --------------------------------------------------------------------------------------
    Rule(
        id="security.banned_import",
        kind="security",
        summary="imports a module that reaches the OS, the network, code loading, serialisation or "
        "the interpreter's internals (os beyond os.path, subprocess, socket, importlib, ctypes, pickle, …)",
    ),
    Rule(
        id="security.relative_import",
        kind="security",
        summary="a relative import: a submission is one file and has no package to import from",
    ),
    Rule(
        id="security.banned_member",
        kind="security",
        summary="uses a forbidden member of a partly allowed module (os.system, sys.modules, io.open, "
        "types.FunctionType, …), including via `from M import name` or `from M import *`",
    ),
    Rule(
        id="security.module_as_value",
        kind="security",
        summary="passes or binds a partly allowed module (os, sys, io, …) as a value, where its "
        "members can no longer be checked",
    ),
    Rule(
        id="security.module_attribute",
        kind="security",
        summary="reaches a dangerous module through another object's attribute (os.path.os, "
        "logging.sys, json.codecs, …)",
    ),
    Rule(
        id="security.private_attribute",
        kind="security",
        summary="a private attribute of a module or builtin (random._os, sys._getframe, "
        "license._Printer__filenames)",
    ),
    Rule(
        id="security.banned_call",
        kind="security",
        summary="eval, exec, compile, __import__, vars, globals, locals, breakpoint or help, called or "
        "used as a value (aliases, decorators and default arguments included)",
    ),
    Rule(
        id="security.dynamic_attribute",
        kind="security",
        summary="getattr/setattr/delattr/hasattr (or operator.attrgetter/methodcaller) with a name that is "
        "not a constant, or these functions used as values",
    ),
    Rule(
        id="security.dunder_attribute",
        kind="security",
        summary="a dunder attribute that reaches the interpreter's internals (__class__, __globals__, "
        "__subclasses__, __dict__, …) by attribute, getattr, attrgetter or a match-class pattern, or "
        "__init__/__new__ on an object other than super(), self/cls, the file's classes and builtin types",
    ),
    Rule(
        id="security.dunder_name",
        kind="security",
        summary="a dunder name that reaches the interpreter's internals (__builtins__, __import__, "
        "__loader__, __spec__, …)",
    ),
    Rule(
        id="security.internal_name_string",
        kind="security",
        summary="a string (literal or assembled) naming an interpreter internal (e.g. '__globals__', "
        "'f_globals'), or a format template that walks into one ('{0.__class__}')",
    ),
    Rule(
        id="security.frame_internals",
        kind="security",
        summary="frame, generator, coroutine, traceback, code or cell internals (f_globals, f_back, "
        "gi_frame, tb_frame, co_code, cell_contents, …)",
    ),
    Rule(
        id="security.type_creation",
        kind="security",
        summary="three-argument type(...), type.__new__ or types.new_class (classes built from strings), "
        "or type(x) called as a class (objects of classes the file never names)",
    ),
    Rule(
        id="security.code_construction",
        kind="security",
        summary="function or code object constructors (FunctionType, CodeType, LambdaType, …)",
    ),
    Rule(
        id="security.open_write",
        kind="security",
        summary="open() (or Path.open) in a write/append/create/update mode, with a mode that is not a "
        "constant, or open used as a value",
    ),
    Rule(
        id="security.file_write",
        kind="security",
        summary="filesystem writes through any stdlib writer: pathlib (write_text, write_bytes, touch, "
        "mkdir, unlink, rename, replace, symlink_to, …), logging (FileHandler, basicConfig(filename=…)), "
        "xml.etree's ElementTree.write, tempfile, zipfile, tarfile, sqlite3, dbm, shelve",
    ),
    Rule(
        id="security.host_path",
        kind="security",
        summary="a host path by literal (/proc, /etc, /dev, /sys, home directories): opened, or a string "
        "(f-string parts included) that starts with one",
    ),
    # -- issue 22: doors that run code or reach state without naming a banned module --------------------
    Rule(
        id="security.evaluated_annotation",
        kind="security",
        summary="an annotation something evaluates later (typing.get_type_hints, ForwardRef, "
        "singledispatch's register, dataclasses): a string annotation, or one that is not a plain type "
        "expression (a name bound to a value, a call, an attribute of the file's own objects)",
    ),
    Rule(
        id="security.runtime_dunder",
        kind="security",
        summary="defines or assigns a hook Python calls behind the code's back (__subclasshook__, "
        "__init_subclass__, __class_getitem__, __set_name__, __instancecheck__, …) or sets "
        "__match_args__ to anything but a literal tuple of names",
    ),
    Rule(
        id="security.frame_access",
        kind="security",
        summary="reaches live frames or their locals: inspect, faulthandler, tracemalloc, and traceback "
        "beyond formatting an exception (walk_stack, extract_stack, StackSummary, capture_locals, …)",
    ),
    Rule(
        id="security.dynamic_format",
        kind="security",
        summary="str.format/format_map on a template that is not a literal (a field name arriving at run "
        "time reads attributes and items by string)",
    ),
    Rule(
        id="security.process_pool",
        kind="security",
        summary="a process pool (concurrent.futures.ProcessPoolExecutor, concurrent.futures.process): "
        "other interpreters, fed pickled callables",
    ),
    Rule(
        id="security.computed_setattr",
        kind="security",
        summary="setattr/delattr with a computed name (even one that folds to an ordinary attribute), or "
        "setting, deleting or setattr-ing an attribute of a module (monkeypatching)",
    ),
    # -- integrity -------------------------------------------------------------------------------------
    Rule(
        id="integrity.product_id_literal",
        kind="integrity",
        summary="more distinct product-id-like values (runs of 9-15 digits, in literals, hex literals, "
        "identifiers or comments) than the small allowance for examples",
    ),
    Rule(
        id="integrity.assembled_id",
        kind="integrity",
        summary="a product-id-like string assembled from pieces (concatenation, join, slicing, "
        "reversal, character codes, arithmetic, decoding)",
    ),
    Rule(
        id="integrity.encoded_blob",
        kind="integrity",
        summary="an encoded blob: base64/hex text, a binary bytes literal or a long digit string",
    ),
    Rule(
        id="integrity.char_codes",
        kind="integrity",
        summary="text written as character codes (chr(49)+chr(50)…, bytes([...]), lists of digit codes)",
    ),
    Rule(
        id="integrity.answer_table",
        kind="integrity",
        summary="a constant lookup table keyed by query text, hashes or numbers; a table of digit strings; "
        "a list/table of product-title-like strings; or a table of id-length strings over at most ten "
        "symbols (digits under a substitution: a decode loop with a key known only at run time)",
    ),
    Rule(
        id="integrity.shipped_data",
        kind="integrity",
        summary="reads files shipped beside the agent (__file__, sys.argv, relative paths, the working "
        "directory, globbing)",
    ),
    Rule(
        id="integrity.unanalysable",
        kind="integrity",
        summary="constant computation the checker cannot follow to its end (too much work, too many "
        "elements, a value too large, the file's analysis budget spent), so assembled answers could "
        "not be ruled out",
    ),
]

RULES: dict[str, Rule] = {rule.id: rule for rule in _RULES}
"""Every rule admission can report, by id."""


def violation(rule: str, message: str, line: int | None = None, col: int | None = None) -> Violation:
    """A Violation of a catalogued rule (its kind comes from the catalogue, so it cannot disagree)."""
    return Violation(rule=rule, kind=RULES[rule].kind, line=line, col=col, message=message)
