"""The security rules: what a submission may import, call and reach (SPEC §6, issue 12).

The policy is a closed set of doors. A module or builtin can be reached by naming it (checked here:
imports, member accesses through every alias, builtin names wherever they appear) or by reflection;
every reflective door is itself banned — dynamic attribute names, dunder walks (`().__class__…`),
frames and tracebacks, module attributes that hold modules (`random._os`), code objects, import
machinery, string annotations evaluated later. `getattr(x, "name")` with a constant name is read as
`x.name` and checked like it; a name that is not a constant is refused.
"""

from __future__ import annotations

import ast
import re
import string
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any

from shoparena.admission import policy
from shoparena.admission.evaluator import BudgetExhausted, Evaluator, Frame, TooDeep
from shoparena.admission.names import Names
from shoparena.admission.syntax import Tree
from shoparena.admission.values import UNKNOWN

Report = Callable[[str, str, ast.AST], None]
STATIC_FOLD_BUDGET = 20_000
_DUNDER_TOKEN = re.compile(r"__[A-Za-z0-9_]+?__")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _starred(node: ast.Call) -> bool:
    """Whether a call unpacks `*args` or `**kwargs` (its arguments cannot be read positionally)."""
    return any(type(a) is ast.Starred for a in node.args) or any(k.arg is None for k in node.keywords)


_TYPE_DESCRIPTIONS = frozenset({"__name__", "__qualname__", "__module__", "__doc__"})
_TYPE_READERS = frozenset({"isinstance", "issubclass", "print", "str", "repr", "format", "id", "hash"})
_MODE = re.compile(r"[rwxabtU+]{1,5}")
_INTERNAL_WORDS = policy.FRAME_ATTRIBUTES | policy.IMPORT_BY_NAME_ATTRIBUTES | {"__builtins__"}


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def internal_names_in(text: str) -> list[str]:
    """Interpreter internals a string names: non-ordinary dunders and frame/import internals (NFKC-normalised,
    as Python normalises identifiers)."""
    if "_" not in text:
        return []
    text = unicodedata.normalize("NFKC", text)
    found = [t for t in _DUNDER_TOKEN.findall(text) if t not in policy.ORDINARY_DUNDERS]
    found += [w for w in _WORD.findall(text) if w in _INTERNAL_WORDS]
    return sorted(set(found))


def format_fields_in(text: str, depth: int = 0) -> list[str]:
    """Attribute/index walks in a str.format template's replacement fields (`{0.__class__}` → ['__class__'])."""
    if "{" not in text or depth > 2:
        return []
    walks: list[str] = []
    try:
        parsed = list(string.Formatter().parse(text))
    except (ValueError, IndexError):
        return []
    for _, field, spec, _ in parsed:
        if field:
            walks += [part for part in re.split(r"[.\[\]]", field)[1:] if part]
        if spec:
            walks += format_fields_in(spec, depth + 1)
    return walks


def dangerous_attribute(name: str) -> tuple[str, str] | None:
    """(rule, why) when reaching attribute `name` of anything is banned, else None."""
    name = unicodedata.normalize("NFKC", name)
    if _is_dunder(name) and name not in policy.ORDINARY_DUNDERS:
        return "security.dunder_attribute", f"attribute {name} reaches the interpreter's internals"
    if name in policy.FRAME_ATTRIBUTES or name in policy.IMPORT_BY_NAME_ATTRIBUTES:
        return "security.frame_internals", f"attribute {name} reaches frames, code or the import machinery"
    if name in policy.MODULE_ATTRIBUTES:
        return "security.module_attribute", f"attribute {name} reaches the {name.lstrip('_')} module"
    if name in policy.CODE_CONSTRUCTORS:
        return "security.code_construction", f"{name} builds functions or code objects"
    if name in policy.FILE_WRITE_ATTRIBUTES:
        return "security.file_write", f"{name} writes to the filesystem"
    if name in policy.SHIPPED_DATA_ATTRIBUTES:
        return "integrity.shipped_data", f"{name} looks for files around the agent"
    return None


def banned_import(path: str) -> tuple[str, str] | None:
    parts = path.split(".")
    top = parts[0]
    family = policy.FAMILY_MODULES.get(top)
    if family is not None:
        return family, f"module {top} is banned"
    if top in policy.BANNED_MODULES:
        return "security.banned_import", f"module {top} is banned"
    if top.startswith("_") and top != "__future__":
        return "security.banned_import", f"private module {top} is banned"
    for cut in range(2, len(parts) + 1):
        prefix = ".".join(parts[:cut])
        if prefix in policy.BANNED_SUBMODULES:
            return "security.banned_import", f"module {prefix} is banned"
        family = policy.FAMILY_PATHS.get(prefix)
        if family is not None:
            return family, f"{prefix} is banned"
        parent, member = ".".join(parts[: cut - 1]), parts[cut - 1]
        restricted = policy.FAMILY_ALLOWED_MEMBERS.get(parent)
        if restricted is not None and member not in restricted[0]:
            return restricted[1], f"{parent}.{member} is not allowed ({restricted[2]})"
        allowed = policy.ALLOWED_MEMBERS.get(parent)
        if allowed is not None and member not in allowed:
            return (
                "security.banned_member",
                f"{parent}.{member} is not allowed ({policy.ALLOWED_HINTS[parent]})",
            )
    if top in policy.SHIPPED_DATA_MODULES:
        return "integrity.shipped_data", f"module {top} lists files around the agent"
    return None


def banned_member(module: str, member: str) -> tuple[str, str] | None:
    """(rule, why) for `module.member` (also `from module import member`), else None."""
    member = unicodedata.normalize("NFKC", member)
    imported = banned_import(f"{module}.{member}")
    if imported is not None:
        return imported
    if member in policy.BANNED_MEMBERS.get(module, ()):
        return "security.banned_member", f"{module}.{member} is banned"
    if member in policy.SHIPPED_DATA_MEMBERS.get(module, ()):
        return "integrity.shipped_data", f"{module}.{member} points at the agent's own file"
    if member.startswith("_") and not _is_dunder(member):
        return "security.private_attribute", f"{module}.{member} is a private attribute of a module"
    return None


class SecurityCheck:
    def __init__(self, names: Names, constants: dict[str, Any], report: Report):
        self.names = names
        self.report = report
        self.constants = constants
        self.folder = Evaluator(aliases=names.evaluator_aliases(), bound_names=names.bound, budget=0)
        self.called: set[int] = set()
        """ids of nodes in call position (the `func` of a Call), filled as the walk meets the calls."""
        self.attribute_bases: set[int] = set()
        self.type_ok: set[int] = set()
        """ids of `type(x)` calls whose result is only compared, looked up or printed."""

    # -- helpers -----------------------------------------------------------------------------------------
    def fold(self, node: ast.AST | None) -> Any:
        """The node's value when it is a constant expression over literals and one-shot module constants."""
        if node is None:
            return UNKNOWN
        self.folder.budget = STATIC_FOLD_BUDGET
        self.folder.depth = 0
        try:
            return self.folder.eval(node, Frame(values=self.constants))
        except (BudgetExhausted, TooDeep):
            return UNKNOWN

    def module_paths(self, node: ast.AST) -> set[str]:
        """The module paths an expression may name: `os.path` → {'os.path'} (aliases followed)."""
        suffix: list[str] = []
        while isinstance(node, ast.Attribute):
            suffix.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return set()
        tail = "".join(f".{part}" for part in reversed(suffix))
        return {path + tail for path in self.names.module_paths.get(node.id, ())}

    def _is_called(self, node: ast.AST) -> bool:
        return id(node) in self.called

    def _is_attribute_base(self, node: ast.AST) -> bool:
        return id(node) in self.attribute_bases

    def _builtin(self, node: ast.AST, *names: str) -> bool:
        return isinstance(node, ast.Name) and node.id in names and self.names.is_builtin(node.id)

    # -- the walk ----------------------------------------------------------------------------------------
    def run(self, tree: Tree) -> None:
        """Check every node; the walk is in source pre-order, so a call or attribute is always met
        before the name inside it."""
        self._dispatch(tree.nodes)

    def _dispatch(self, nodes: Iterable[ast.AST]) -> None:
        handlers = {
            ast.Import: self._import,
            ast.ImportFrom: self._import_from,
            ast.Name: self._name,
            ast.Attribute: self._attribute,
            ast.Call: self._call,
            ast.Constant: self._constant,
            ast.Global: self._global,
            ast.Nonlocal: self._global,
            ast.MatchClass: self._match_class,
            ast.Compare: self._type_context,
            ast.Subscript: self._type_context,
            ast.FormattedValue: self._type_context,
            ast.arg: self._annotation_holder,
            ast.AnnAssign: self._annotation_holder,
            ast.FunctionDef: self._annotation_holder,
            ast.AsyncFunctionDef: self._annotation_holder,
        }
        for node in nodes:
            handler = handlers.get(type(node))
            if handler is not None:
                handler(node)

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            found = banned_import(alias.name)
            if found:
                self.report(found[0], f"import {alias.name}: {found[1]}", node)

    def _import_from(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            self.report("security.relative_import", "relative imports have no package to come from", node)
            return
        found = banned_import(node.module)
        if found:
            self.report(found[0], f"from {node.module} import …: {found[1]}", node)
            return
        for alias in node.names:
            if alias.name == "*":
                if node.module in policy.RESTRICTED_MODULES:
                    self.report(
                        "security.banned_member",
                        f"from {node.module} import *: the members of {node.module} are checked one by one",
                        node,
                    )
                continue
            member = banned_member(node.module, alias.name) or dangerous_attribute(alias.name)
            if member:
                self.report(member[0], f"from {node.module} import {alias.name}: {member[1]}", node)

    def _name(self, node: ast.Name) -> None:
        name = node.id
        if not isinstance(node.ctx, ast.Load):
            return
        if name in policy.BANNED_CALLS:
            self.report("security.banned_call", f"{name} is banned (called, aliased or passed)", node)
        elif name in policy.DYNAMIC_ATTRIBUTE_BUILTINS and not self._is_called(node):
            self.report("security.dynamic_attribute", f"{name} used as a value", node)
        elif name == "open" and self.names.is_builtin(name) and not self._is_called(node):
            self.report("security.open_write", "open used as a value: its mode cannot be checked", node)
        elif _is_dunder(name) and name not in policy.ALLOWED_DUNDER_NAMES:
            if name in policy.SHIPPED_DATA_NAMES:
                self.report("integrity.shipped_data", f"{name} points at the agent's own file", node)
            else:
                self.report("security.dunder_name", f"{name} reaches the interpreter's internals", node)
        if not self._is_attribute_base(node):
            for path in self.names.module_paths.get(name, ()):
                if path in policy.RESTRICTED_MODULES:
                    self.report(
                        "security.module_as_value",
                        f"module {path} used as a value: only its allowed members may be used",
                        node,
                    )
                elif path in ("operator.attrgetter", "operator.methodcaller") and not self._is_called(node):
                    self.report("security.dynamic_attribute", f"{path} used as a value", node)

    def _global(self, node: ast.Global | ast.Nonlocal) -> None:
        for name in node.names:
            if _is_dunder(name) and name not in policy.ALLOWED_DUNDER_NAMES:
                self.report("security.dunder_name", f"{name} reaches the interpreter's internals", node)

    def _check_attribute_name(self, base: ast.AST | None, name: str, node: ast.AST, via: str = "") -> None:
        found = dangerous_attribute(name)
        if found:
            self.report(found[0], f"{via}{found[1]}", node)
            return
        if name in ("__init__", "__new__") and not self._may_initialise(base):
            self.report(
                "security.dunder_attribute",
                f"{via}{name} of an arbitrary object re-initialises it (a file re-opened on another descriptor)",
                node,
            )
        if base is None:
            return
        paths = sorted(self.module_paths(base))
        if paths and name in policy.MODULE_NAMES_AS_ATTRIBUTES:
            self.report(
                "security.module_attribute", f"{via}{paths[0]}.{name} reaches the {name} module", node
            )
            return
        for path in paths:
            member = banned_member(path, name)
            if (
                member
                and member[0] in ("security.banned_import", policy.FAMILY_MODULES.get(path.split(".")[0]))
                and path.split(".")[0] in policy.BANNED_MODULES | policy.FAMILY_MODULES.keys()
            ):
                continue  # the import itself was reported
            if member:
                self.report(member[0], f"{via}{member[1]}", node)
        if (
            isinstance(base, ast.Name)
            and self.names.is_builtin(base.id)
            and name.startswith("_")
            and not _is_dunder(name)
        ):
            self.report("security.private_attribute", f"{via}{base.id}.{name} is private", node)
        if self._builtin(base, "type", "object") and name in ("__new__", "__call__", "__init_subclass__"):
            self.report("security.type_creation", f"{via}{base.id}.{name} builds classes from values", node)

    def _may_initialise(self, base: ast.AST | None) -> bool:
        """`__init__`/`__new__` are fine on super(), self/cls, the file's own classes and builtin types."""
        if isinstance(base, ast.Call):
            return self._builtin(base.func, "super")
        if isinstance(base, ast.Name):
            if base.id in ("self", "cls"):  # a method's own parameter, unless the file rebinds the name
                return base.id not in self.names.assigned
            return base.id in self.names.classes or self.names.is_builtin(base.id)
        return False

    def _attribute(self, node: ast.Attribute) -> None:
        self.attribute_bases.add(id(node.value))
        if node.attr in _TYPE_DESCRIPTIONS:
            self.type_ok.add(id(node.value))
        self._check_attribute_name(node.value, node.attr, node)

    def _type_context(self, node: ast.AST) -> None:
        """Places where `type(x)` is only looked at, never called: comparisons, lookups, formatting."""
        if isinstance(node, ast.Compare):
            self.type_ok.update(id(n) for n in (node.left, *node.comparators))
        elif isinstance(node, ast.Subscript):
            self.type_ok.add(id(node.slice))
        elif isinstance(node, ast.FormattedValue):
            self.type_ok.add(id(node.value))

    def _match_class(self, node: ast.MatchClass) -> None:
        for name in node.kwd_attrs:
            self._check_attribute_name(None, name, node, via="match pattern: ")

    def _constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            self.check_string(node.value, node)

    def check_string(self, text: str, node: ast.AST, assembled: bool = False) -> None:
        what = "assembled string" if assembled else "string"
        if text.startswith(policy.HOST_PATH_STRINGS):
            self.report("security.host_path", f"{what} {text[:60]!r} names a host path", node)
        for name in internal_names_in(text):
            self.report("security.internal_name_string", f"{what} names {name}", node)
        for walk in format_fields_in(text):
            found = dangerous_attribute(walk)
            if found and found[0] != "integrity.shipped_data":
                self.report("security.internal_name_string", f"format template walks into {walk}", node)

    def _annotation_holder(self, node: ast.AST) -> None:
        annotations = []
        if isinstance(node, ast.arg | ast.AnnAssign):
            annotations.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotations.append(node.returns)
        for annotation in annotations:
            if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
                self._string_annotation(annotation)

    def _string_annotation(self, node: ast.Constant) -> None:
        """`x: "expr"` is code that typing.get_type_hints evaluates: check it as code, reported here."""
        try:
            inner = ast.parse(node.value.strip(), mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        nested = SecurityCheck(self.names, self.constants, lambda rule, msg, _: self.report(rule, msg, node))
        nested.run(Tree(inner))  # type: ignore[arg-type]

    # -- calls -------------------------------------------------------------------------------------------
    def _call(self, node: ast.Call) -> None:
        func = node.func
        self.called.add(id(func))
        if type(func) is ast.Name:
            self._call_by_name(node, func)
        elif type(func) is ast.Attribute:
            if func.attr == "open" and not self.module_paths(func.value):
                self._open(node, mode=self._argument(node, 0, "mode"), path=None, starred=_starred(node))
            elif func.attr == "basicConfig" and any(
                k.arg in ("filename", "handlers") or k.arg is None for k in node.keywords
            ):
                self.report("security.file_write", "logging.basicConfig(filename=…) writes a file", node)
        else:
            return
        for path in self.module_paths(func):
            if path in ("operator.attrgetter", "operator.methodcaller"):
                self._getter(node, path, _starred(node))
            elif path in ("pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath"):
                self._path_literal(self._argument(node, 0, None), node)

    def _call_by_name(self, node: ast.Call, func: ast.Name) -> None:
        name = func.id
        if name in policy.DYNAMIC_ATTRIBUTE_BUILTINS:
            self._dynamic_attribute(node, name, _starred(node))
            return
        if not self.names.is_builtin(name):
            return
        if name in _TYPE_READERS:
            self.type_ok.update(id(a) for a in node.args)
        if name == "type":
            if len(node.args) == 3 or _starred(node):
                self.report("security.type_creation", "type() with three arguments builds a class", node)
            elif len(node.args) == 1 and id(node) not in self.type_ok:
                subject = node.args[0]
                if not (isinstance(subject, ast.Name) and subject.id in ("self", "cls")):
                    self.report(
                        "security.type_creation",
                        "type(x) used as a class builds objects of classes the file never names",
                        node,
                    )
        elif name == "open":
            self._open(node, mode=self._argument(node, 1, "mode"), path=self._argument(node, 0, "file"))
            if _starred(node):
                self.report("security.open_write", "open() with unpacked arguments: mode unknown", node)

    @staticmethod
    def _argument(node: ast.Call, position: int, keyword: str | None) -> ast.AST | None:
        if len(node.args) > position and not any(
            isinstance(a, ast.Starred) for a in node.args[: position + 1]
        ):
            return node.args[position]
        for item in node.keywords:
            if item.arg == keyword:
                return item.value
        return None

    def _dynamic_attribute(self, node: ast.Call, function: str, starred: bool) -> None:
        name_node = self._argument(node, 1, None)
        name = self.fold(name_node) if name_node is not None and not starred else UNKNOWN
        if not isinstance(name, str):
            self.report(
                "security.dynamic_attribute", f"{function}() with a name that is not a constant", node
            )
            return
        self._check_attribute_name(node.args[0], name, node, via=f"{function}(…, {name!r}): ")

    def _getter(self, node: ast.Call, path: str, starred: bool) -> None:
        arguments = node.args if path.endswith("attrgetter") else node.args[:1]
        if starred or not arguments:
            self.report("security.dynamic_attribute", f"{path}() with names that are not constants", node)
            return
        for argument in arguments:
            name = self.fold(argument)
            if not isinstance(name, str):
                self.report(
                    "security.dynamic_attribute", f"{path}() with a name that is not a constant", node
                )
                continue
            for part in name.split("."):
                self._check_attribute_name(None, part, node, via=f"{path}({name!r}): ")

    def _open(
        self, node: ast.Call, mode: ast.AST | None, path: ast.AST | None, starred: bool = False
    ) -> None:
        if mode is not None or starred:
            value = self.fold(mode) if not starred else UNKNOWN
            if not isinstance(value, str):
                self.report("security.open_write", "open() with a mode that is not a constant", node)
            elif _MODE.fullmatch(value) and set(value) & policy.WRITE_MODE_CHARS:
                self.report("security.open_write", f"open() in mode {value!r} writes", node)
        if path is not None:
            self._path_literal(path, node)

    def _path_literal(self, path_node: ast.AST | None, node: ast.AST) -> None:
        path = self.fold(path_node)
        if not isinstance(path, str) or not path.strip():
            return
        path = path.strip()
        if path.startswith(policy.SENSITIVE_PATH_PREFIXES):
            self.report("security.host_path", f"opens the host path {path[:80]!r}", node)
        elif not path.startswith("/"):
            self.report("integrity.shipped_data", f"opens {path[:80]!r} relative to the agent", node)
