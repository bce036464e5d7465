"""Tree utilities the checks share: one flattening pass that also records scopes and their bindings.

`ast.walk` re-derives children through generators on every call, and admission looks at every node of
a file of up to 1 MiB; flattening once (skipping the shared context/operator singletons) and noting, on
the way, which scope each binding belongs to keeps the whole check linear and cheap.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_SKIPPED_FIELDS = frozenset({"ctx", "op", "ops", "type_ignores"})
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(kind: type) -> tuple[str, ...]:
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(f for f in kind._fields if f not in _SKIPPED_FIELDS)
    return fields


class Tree:
    """A parsed module, flattened: every node once, parents before children (source order), each node's
    children, every function/lambda/class with its enclosing scope, and each scope's local names."""

    def __init__(self, module: ast.Module):
        self.module = module
        self.nodes: list[ast.AST] = []
        self.scopes: list[tuple[ast.AST, ast.AST]] = []
        """(scope node, enclosing scope node) for every function, lambda and class, in source order."""
        self._children: dict[int, list[ast.AST]] = {}
        self._bound: dict[int, set[str]] = {id(module): set()}
        self._declared: dict[int, set[str]] = {}
        self._binds: dict[tuple[int, bool], frozenset[str]] = {}
        self._flatten(module)

    def _flatten(self, module: ast.Module) -> None:
        nodes, children_of, bound, declared = self.nodes, self._children, self._bound, self._declared
        append, scopes = nodes.append, self.scopes
        ast_type, name_type, store_types = ast.AST, ast.Name, (ast.Store, ast.Del)
        stack: list[tuple[ast.AST, ast.AST]] = [(module, module)]
        while stack:
            node, scope = stack.pop()
            append(node)
            kind = type(node)
            if kind is name_type:
                if isinstance(node.ctx, store_types):  # type: ignore[attr-defined]
                    bound[id(scope)].add(node.id)  # type: ignore[attr-defined]
                continue
            inner = scope
            if kind in _SCOPE_TYPES:
                scopes.append((node, scope))
                if kind is not ast.Lambda:
                    bound[id(scope)].add(node.name)  # type: ignore[attr-defined]
                inner = node
                bound[id(node)] = set(parameter_names(node.args)) if kind is not ast.ClassDef else set()  # type: ignore[attr-defined]
            else:
                own = _OWN.get(kind)
                if own is not None:
                    names = own(node)
                    if kind is ast.Global or kind is ast.Nonlocal:
                        declared.setdefault(id(scope), set()).update(names)
                    else:
                        bound[id(scope)].update(names)
            children: list[ast.AST] = []
            add = children.append
            for field in _fields(kind):
                value = getattr(node, field)
                if type(value) is list:
                    for item in value:
                        if item is not None and type(item) is not str:
                            add(item)
                elif value is not None and isinstance(value, ast_type):
                    add(value)
            if children:
                children_of[id(node)] = children
                if kind in _SCOPE_TYPES and kind is not ast.Lambda:
                    # decorators (and a class's bases) run in the enclosing scope
                    outer = [*node.decorator_list]  # type: ignore[attr-defined]
                    if kind is ast.ClassDef:
                        outer += [*node.bases, *node.keywords]  # type: ignore[attr-defined]
                    outer_ids = {id(d) for d in outer}
                    stack.extend(
                        (child, scope if id(child) in outer_ids else node) for child in reversed(children)
                    )
                else:
                    stack.extend((child, inner) for child in reversed(children))

    def children(self, node: ast.AST) -> list[ast.AST]:
        return self._children.get(id(node), [])

    def walk(self, node: ast.AST) -> Iterable[ast.AST]:
        """`node` and everything under it."""
        stack = [node]
        while stack:
            current = stack.pop()
            yield current
            stack.extend(self._children.get(id(current), ()))

    def scope_locals(self, scope: ast.AST) -> frozenset[str]:
        """The names local to a function (parameters and bindings, minus `global`/`nonlocal` ones), a
        class body, or the module."""
        key = (id(scope), False)
        cached = self._binds.get(key)
        if cached is None:
            names = self._bound.get(id(scope), set()) - self._declared.get(id(scope), set())
            cached = self._binds[key] = frozenset(names)
        return cached

    def binds(self, nodes: Iterable[ast.AST]) -> set[str]:
        """Names these nodes bind in their own scope, or may mutate (method-call receivers, subscript and
        attribute stores), not descending into nested scopes."""
        names: set[str] = set()
        for node in nodes:
            names |= self._binds_of(node)
        return names

    def _binds_of(self, root: ast.AST) -> frozenset[str]:
        key = (id(root), True)
        cached = self._binds.get(key)
        if cached is not None:
            return cached
        names: set[str] = set()
        stack = [root]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is ast.Name:
                if isinstance(node.ctx, ast.Store | ast.Del):  # type: ignore[attr-defined]
                    names.add(node.id)  # type: ignore[attr-defined]
                continue
            own = _OWN.get(kind) or _MUTATES.get(kind)
            if own is not None:
                names.update(own(node))
            if kind in _SCOPE_TYPES:
                if kind is not ast.Lambda:
                    names.add(node.name)  # type: ignore[attr-defined]
                    stack.extend(node.decorator_list)  # type: ignore[attr-defined]
                continue
            stack.extend(self._children.get(id(node), ()))
        result = self._binds[key] = frozenset(names)
        return result


def _import_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    return [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]


def _optional_name(node) -> list[str]:
    return [node.name] if node.name else []


def _rest(node: ast.MatchMapping) -> list[str]:
    return [node.rest] if node.rest else []


def _receiver(node: ast.Call) -> list[str]:
    func = node.func
    return [func.value.id] if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else []


def _store_base(node: ast.Subscript | ast.Attribute) -> list[str]:
    if not isinstance(node.ctx, ast.Store | ast.Del):
        return []
    base = node.value
    while isinstance(base, ast.Subscript | ast.Attribute):
        base = base.value
    return [base.id] if isinstance(base, ast.Name) else []


_SCOPE_TYPES = frozenset(SCOPES)
_OWN = {
    ast.Import: _import_names,
    ast.ImportFrom: _import_names,
    ast.Global: lambda node: list(node.names),
    ast.Nonlocal: lambda node: list(node.names),
    ast.ExceptHandler: _optional_name,
    ast.MatchAs: _optional_name,
    ast.MatchStar: _optional_name,
    ast.MatchMapping: _rest,
}
_MUTATES = {ast.Call: _receiver, ast.Subscript: _store_base, ast.Attribute: _store_base}


def parameter_names(args: ast.arguments) -> list[str]:
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return names
