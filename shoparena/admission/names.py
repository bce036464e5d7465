"""Who names what in a submission: import aliases, every bound name, the module's one-shot constants.

One pass over the tree, shared by the security and integrity checks. Scopes are deliberately merged
(a name bound anywhere counts as bound everywhere): that can only make a builtin look shadowed or an
alias look ambiguous, and both make the checks stricter, never looser.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field

from shoparena.admission.evaluator import Evaluator, Frame
from shoparena.admission.syntax import Tree, parameter_names
from shoparena.admission.values import UNKNOWN, is_immutable


@dataclass
class Names:
    module_paths: dict[str, set[str]] = field(default_factory=dict)
    """name → every module path it may refer to (imports, and plain `x = alias` copies)."""
    bindings: Counter = field(default_factory=Counter)
    """name → how many places bind it (assignments, parameters, defs, imports, loop targets, …)."""
    non_import: set[str] = field(default_factory=set)
    """Names bound somewhere other than an import."""
    classes: set[str] = field(default_factory=set)
    """Names of the classes the file defines."""
    assigned: set[str] = field(default_factory=set)
    """Names some statement assigns (stores, deletes, loop and with targets): not only parameters."""
    values: dict[str, list[ast.AST]] = field(default_factory=dict)
    """name → the expressions `name = …` (and `name: T = …`, `(name := …)`) assign it."""
    declared: Counter = field(default_factory=Counter)
    """name → how many class, def and import statements bind it."""

    @property
    def bound(self) -> set[str]:
        return set(self.bindings)

    def evaluator_aliases(self) -> dict[str, str]:
        """Aliases the evaluator may trust: bound only by imports, always to the same module."""
        return {
            name: next(iter(paths))
            for name, paths in self.module_paths.items()
            if len(paths) == 1 and name not in self.non_import
        }

    def is_builtin(self, name: str) -> bool:
        return name not in self.bindings


def _bind(names: Names, name: str, via_import: bool = False) -> None:
    names.bindings[name] += 1
    if not via_import:
        names.non_import.add(name)


def _import(names: Names, node: ast.Import, copies: list) -> None:
    for alias in node.names:
        if alias.asname:
            bound, path = alias.asname, alias.name
        else:
            bound = path = alias.name.split(".")[0]
        _bind(names, bound, via_import=True)
        names.declared[bound] += 1
        names.module_paths.setdefault(bound, set()).add(path)


def _import_from(names: Names, node: ast.ImportFrom, copies: list) -> None:
    for alias in node.names:
        if alias.name == "*":
            continue
        bound = alias.asname or alias.name
        _bind(names, bound, via_import=True)
        names.declared[bound] += 1
        if node.level == 0 and node.module:
            names.module_paths.setdefault(bound, set()).add(f"{node.module}.{alias.name}")


def _named(names: Names, node, copies: list) -> None:
    if node.name:
        _bind(names, node.name)
    if isinstance(node, ast.ClassDef):
        names.classes.add(node.name)
    if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        names.declared[node.name] += 1


def _arguments(names: Names, node: ast.arguments, copies: list) -> None:
    for name in parameter_names(node):
        _bind(names, name)


def _declared(names: Names, node: ast.Global | ast.Nonlocal, copies: list) -> None:
    for name in node.names:
        _bind(names, name)


def _rest(names: Names, node: ast.MatchMapping, copies: list) -> None:
    if node.rest:
        _bind(names, node.rest)


def _copy(names: Names, node: ast.Assign | ast.AnnAssign | ast.NamedExpr, copies: list) -> None:
    if node.value is None:
        return
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        if type(target) is ast.Name:
            names.values.setdefault(target.id, []).append(node.value)
            if type(node.value) is ast.Name:
                copies.append((target.id, node.value.id))


_COLLECTORS = {
    ast.Import: _import,
    ast.ImportFrom: _import_from,
    ast.FunctionDef: _named,
    ast.AsyncFunctionDef: _named,
    ast.ClassDef: _named,
    ast.ExceptHandler: _named,
    ast.MatchAs: _named,
    ast.MatchStar: _named,
    ast.MatchMapping: _rest,
    ast.arguments: _arguments,
    ast.Global: _declared,
    ast.Nonlocal: _declared,
    ast.Assign: _copy,
    ast.AnnAssign: _copy,
    ast.NamedExpr: _copy,
}


def collect(tree: Tree) -> Names:
    names = Names()
    copies: list[tuple[str, str]] = []
    name_type, load = ast.Name, ast.Load
    for node in tree.nodes:
        kind = type(node)
        if kind is name_type:
            if type(node.ctx) is not load:  # type: ignore[attr-defined]
                _bind(names, node.id)  # type: ignore[attr-defined]
                names.assigned.add(node.id)  # type: ignore[attr-defined]
            continue
        collector = _COLLECTORS.get(kind)
        if collector is not None:
            collector(names, node, copies)
    for _ in range(4):  # `o = os; p = o` — a few rounds reach every chain a person writes
        for target, source in copies:
            for path in list(names.module_paths.get(source, ())):
                names.module_paths.setdefault(target, set()).add(path)
    return names


def module_constants(tree: ast.Module, names: Names) -> dict[str, object]:
    """Module-level names bound exactly once, to a value the security fold can compute and that nothing
    can mutate (str, bytes, numbers, tuples of those)."""
    evaluator = Evaluator(aliases=names.evaluator_aliases(), bound_names=names.bound, budget=200_000)
    frame = Frame()
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value_node = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value_node = statement.target, statement.value
        else:
            continue
        if not isinstance(target, ast.Name) or names.bindings[target.id] != 1:
            continue
        try:
            value = evaluator.eval(value_node, frame)
        except Exception:
            continue
        if value is not UNKNOWN and is_immutable(value):
            frame.vars[target.id] = value
    return frame.vars
