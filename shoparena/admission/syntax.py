"""Tree utilities the checks share: one flattening pass that also records scopes and their bindings.

`ast.walk` re-derives children through generators on every call, and admission looks at every node of
a file of up to 1 MiB; flattening once (skipping the shared context/operator singletons) and noting, on
the way, which scope each binding belongs to keeps the whole check linear and cheap.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_SKIPPED_FIELDS = frozenset({"ctx", "op", "ops", "type_ignores"})


_SCOPE = object()
_PLANS: dict[type, tuple] = {}
"""node type → (its child fields, what binding it makes: None, _SCOPE, or a function of the node)."""


def _plan(kind: type) -> tuple:
    fields = tuple(f for f in kind._fields if f not in _SKIPPED_FIELDS)
    special = _SCOPE if kind in _SCOPE_TYPES else _OWN.get(kind)
    plan = _PLANS[kind] = (fields, special)
    return plan


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
        """Depth-first, parents first. The current scope changes through ENTER/EXIT markers pushed
        around a scope's own children (its decorators, and a class's bases, run outside it), so plain
        nodes travel the stack without a scope attached."""
        nodes, children_of, bound, declared = self.nodes, self._children, self._bound, self._declared
        append, scopes, plan_of = nodes.append, self.scopes, _PLANS.get
        ast_type, name_type, load, constant, marker = ast.AST, ast.Name, ast.Load, ast.Constant, tuple
        stack: list = [module]
        pop, push = stack.pop, stack.append
        scope: ast.AST = module
        while stack:
            node = pop()
            kind = type(node)
            if kind is marker:
                scope = node[1]
                continue
            append(node)
            if kind is name_type:
                if type(node.ctx) is not load:
                    bound[id(scope)].add(node.id)
                continue
            if kind is constant:
                continue
            plan = plan_of(kind) or _plan(kind)
            children: list[ast.AST] = []
            add = children.append
            for field in plan[0]:
                value = getattr(node, field)
                if type(value) is list:
                    for item in value:
                        if item is not None and type(item) is not str:
                            add(item)
                elif value is not None and isinstance(value, ast_type):
                    add(value)
            if children:
                children_of[id(node)] = children
            special = plan[1]
            if special is None:
                for child in reversed(children):
                    push(child)
            elif special is _SCOPE:
                scopes.append((node, scope))
                if kind is not ast.Lambda:
                    bound[id(scope)].add(node.name)
                bound[id(node)] = set(parameter_names(node.args)) if kind is not ast.ClassDef else set()
                outer = [] if kind is ast.Lambda else [*node.decorator_list]
                if kind is ast.ClassDef:
                    outer += [*node.bases, *node.keywords]
                outer_ids = {id(n) for n in outer}
                push(("exit", scope))
                for child in reversed(children):
                    if id(child) not in outer_ids:
                        push(child)
                push(("enter", node))
                for child in reversed(outer):
                    push(child)
            else:
                names = special(node)
                if kind is ast.Global or kind is ast.Nonlocal:
                    declared.setdefault(id(scope), set()).update(names)
                else:
                    bound[id(scope)].update(names)
                for child in reversed(children):
                    push(child)

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
        cache = self._binds
        while stack:
            node = stack.pop()
            if node is not root:
                known = cache.get((id(node), True))
                if known is not None:  # an inner statement already done (inner blocks run first)
                    names |= known
                    continue
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
