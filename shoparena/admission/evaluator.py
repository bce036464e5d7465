"""Constant evaluation of expressions: what a submission's expressions produce when their inputs are known.

Hard-coded answers are rarely written as plain literals by someone hiding them; they are assembled:
`"503" + "5687794"`, `"".join(chr(c) for c in CODES)`, `bytes.fromhex(...)`, `str(10**9 + 35687794)`.
`Evaluator` computes expressions over literals, names with known values and the pure operations of
`values.py`; everything else is UNKNOWN, which propagates — it never guesses. Every str/bytes value an
*operation* produces (not a literal) goes to an `observe` callback, which is where assembled answers
are caught.

Used two ways: by the security checks as a strict folder (names resolve only to module constants bound
exactly once, no user code runs: is this `getattr` name a constant?), and as the base of `interpreter.py`,
which adds statements, loops, branches and calls of the file's own functions for the integrity checks.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from shoparena.admission.values import (
    COMPARE,
    MAX_ITEMS,
    MODULE_CONSTANTS,
    PURE_BUILTINS,
    UNARY,
    UNKNOWN,
    BoundMethod,
    BuiltinRef,
    Hashed,
    ModuleRef,
    Seeded,
    TooBig,
    binary,
    call_method,
    check_size,
    convert,
    format_value,
    is_immutable,
    is_iterable_value,
    items_of,
    seeded_call,
    static_call,
)

MAX_DEPTH = 120
"""Deepest nesting evaluated (expressions and statements together); deeper code is unanalysable."""
Observer = Callable[[Any, ast.AST], None]


class BudgetExhausted(Exception):
    """The whole file's operation budget is spent."""


class TooDeep(Exception):
    pass


class WorkLimit(Exception):
    """One loop, comprehension or call spent its share of the budget; it is abandoned, not the file."""


class ControlFlow(Exception):
    """return/break/continue/raise inside interpreted code."""


class Return(ControlFlow):
    def __init__(self, value: Any):
        self.value = value


class Break(ControlFlow):
    pass


class Continue(ControlFlow):
    pass


class Raise(ControlFlow):
    pass


class LoopUncertain(ControlFlow):
    """A break/continue ran in a branch whose test was unknown: the loop's iteration count is unknown."""


_PASS_THROUGH = (BudgetExhausted, TooDeep, WorkLimit, ControlFlow)


class Frame:
    """One scope: its known values, the names it binds somewhere (unknown until bound), its parent."""

    __slots__ = ("local_names", "maybe_returned", "parent", "vars")

    def __init__(self, parent: Frame | None = None, local_names: frozenset[str] = frozenset(), values=None):
        self.parent = parent
        self.local_names = local_names
        self.vars: dict[str, Any] = dict(values or {})
        self.maybe_returned = False


class FunctionValue:
    """A function or lambda of the file itself, with the frame it closes over."""

    __slots__ = ("closure", "node")

    def __init__(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, closure: Frame):
        self.node, self.closure = node, closure


_OPAQUE = (FunctionValue, ModuleRef, BuiltinRef, BoundMethod)
_PURE_CONTAINER_METHODS = frozenset(
    {"index", "count", "get", "keys", "values", "items", "copy", "hexdigest", "digest"}
)


def _converts_to_int(node: ast.Call) -> bool:
    """`int(...)`/`round(...)`: an int made from something else (a float, a string) is read like a string."""
    return isinstance(node.func, ast.Name) and node.func.id in ("int", "round")


def truth(value: Any) -> bool | None:
    """The truth value of a known value; None when unknown or not decidable here."""
    if value is UNKNOWN or isinstance(value, _OPAQUE):
        return None
    try:
        return bool(value)
    except Exception:
        return None


class Evaluator:
    def __init__(
        self,
        *,
        aliases: dict[str, str],
        bound_names: set[str],
        budget: int,
        observe: Observer | None = None,
    ):
        self.aliases = aliases
        self.bound_names = bound_names
        self.budget = budget
        self.floor = 0
        """The budget value at which the innermost limited construct is abandoned (WorkLimit)."""
        self.observe = observe
        self.generator: Seeded | None = None
        """The random module's hidden generator, while a constant `random.seed(…)` determines it."""
        self.depth = 0
        self._expr: dict[type, Callable[[Any, Frame], Any]] = {
            ast.Constant: self._constant,
            ast.Name: self._name,
            ast.BinOp: self._binop,
            ast.UnaryOp: self._unaryop,
            ast.BoolOp: self._boolop,
            ast.Compare: self._compare,
            ast.IfExp: self._ifexp,
            ast.JoinedStr: self._joinedstr,
            ast.FormattedValue: self._formatted,
            ast.Tuple: self._sequence,
            ast.List: self._sequence,
            ast.Set: self._set,
            ast.Dict: self._dict,
            ast.Subscript: self._subscript,
            ast.Attribute: self._attribute,
            ast.Call: self._call,
            ast.ListComp: self._comprehension,
            ast.GeneratorExp: self._comprehension,
            ast.SetComp: self._comprehension,
            ast.DictComp: self._comprehension,
            ast.Lambda: self._lambda,
            ast.NamedExpr: self._namedexpr,
            ast.Starred: self._starred,
        }
        self._silent = (ast.Constant, ast.Name)

    # -- bookkeeping ---------------------------------------------------------------------------------------
    def tick(self) -> None:
        self.budget -= 1
        if self.budget < self.floor:
            if self.budget < 0:
                raise BudgetExhausted
            raise WorkLimit

    def limited(self, work: int) -> int:
        """Start a construct that may spend at most `work` operations; returns the floor to restore."""
        saved = self.floor
        self.floor = max(saved, self.budget - work)
        return saved

    def seen(self, value: str | bytes, node: ast.AST) -> None:
        """Hand an assembled value to `observe`; reading it costs budget by its size, so building ever
        longer strings in a loop runs out of budget instead of time."""
        self.budget -= len(value) >> 12
        self.tick()
        self.observe(value, node)  # type: ignore[misc]

    def _resolve_free(self, name: str) -> Any:
        if name in self.aliases:
            return ModuleRef(self.aliases[name])
        if name not in self.bound_names and (name in PURE_BUILTINS or name in ("map", "filter")):
            return BuiltinRef(name)
        return UNKNOWN

    def lookup(self, name: str, frame: Frame) -> Any:
        current: Frame | None = frame
        while current is not None:
            if name in current.vars:
                return current.vars[name]
            if name in current.local_names:
                return UNKNOWN
            current = current.parent
        return self._resolve_free(name)

    def forget(self, name: str, frame: Frame) -> None:
        """A name whose value may have changed in a way not followed: it is unknown from now on."""
        if name in self.aliases:
            return  # bound by imports only: calling its functions cannot rebind it
        current: Frame | None = frame
        while current is not None:
            if name in current.vars:
                current.vars[name] = UNKNOWN
                return
            if name in current.local_names:
                return
            current = current.parent

    # -- expressions -------------------------------------------------------------------------------------
    def eval(self, node: ast.AST | None, frame: Frame) -> Any:
        if node is None:
            return None
        self.budget -= 1
        if self.budget < self.floor:
            self.budget += 1
            self.tick()
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise TooDeep
            handler = self._expr.get(type(node))
            if handler is None:
                return self._other(node, frame)
            try:
                value = handler(node, frame)
            except _PASS_THROUGH:
                raise
            except RecursionError:
                raise TooDeep from None
            except TooBig:
                self.unfollowed(node, "a constant computation builds a value too large to follow")
                return UNKNOWN
            except Exception:  # Unsupported, TypeError, ValueError, …: not a known value
                return UNKNOWN
            if self.observe is not None and not isinstance(node, self._silent):
                if isinstance(value, str | bytes):
                    self.seen(value, node)
                elif type(value) is int and isinstance(node, ast.Call) and _converts_to_int(node):
                    self.seen(str(value) if value.bit_length() < 14_000 else "", node)
            return value
        finally:
            self.depth -= 1

    def _other(self, node: ast.AST, frame: Frame) -> Any:
        """An expression kind with no known value (await, yield, slices, …): its parts still run."""
        for name in node._fields:
            value = getattr(node, name, None)
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.expr):
                    self.eval(child, frame)
        return UNKNOWN

    def _constant(self, node: ast.Constant, frame: Frame) -> Any:
        value = node.value
        return UNKNOWN if value is ... or isinstance(value, complex) else value

    def _name(self, node: ast.Name, frame: Frame) -> Any:
        return self.lookup(node.id, frame)

    def _binop(self, node: ast.BinOp, frame: Frame) -> Any:
        spine: list[ast.BinOp] = []
        left: ast.AST = node
        while isinstance(left, ast.BinOp):  # long `a + b + c + …` chains: iterate, do not recurse
            spine.append(left)
            left = left.left
        value = self.eval(left, frame)
        for step in reversed(spine):
            right = self.eval(step.right, frame)
            if value is UNKNOWN or right is UNKNOWN:
                value = UNKNOWN
                continue
            try:
                value = binary(type(step.op).__name__, value, right)
            except TooBig:
                self.unfollowed(step, "a constant computation builds a value too large to follow")
                value = UNKNOWN
            except Exception:
                value = UNKNOWN
            if step is not node and self.observe is not None and isinstance(value, str | bytes):
                self.seen(value, step)
        return value

    def _unaryop(self, node: ast.UnaryOp, frame: Frame) -> Any:
        operand = self.eval(node.operand, frame)
        if operand is UNKNOWN or not isinstance(operand, int | float | bool | str | bytes | type(None)):
            return UNKNOWN
        return UNARY[type(node.op).__name__](operand)

    def _boolop(self, node: ast.BoolOp, frame: Frame) -> Any:
        values = [self.eval(value, frame) for value in node.values]
        is_and = isinstance(node.op, ast.And)
        for value in values:
            decided = truth(value)
            if decided is None:
                return UNKNOWN
            if decided != is_and:
                return value
        return values[-1]

    def _compare(self, node: ast.Compare, frame: Frame) -> Any:
        left = self.eval(node.left, frame)
        rights = [self.eval(c, frame) for c in node.comparators]
        result: Any = True
        for op, right in zip(node.ops, rights, strict=True):
            if left is UNKNOWN or right is UNKNOWN or isinstance(left, _OPAQUE) or isinstance(right, _OPAQUE):
                return UNKNOWN
            outcome = COMPARE[type(op).__name__](left, right)
            if outcome is UNKNOWN:
                return UNKNOWN
            result = result and bool(outcome)
            left = right
        return result

    def _ifexp(self, node: ast.IfExp, frame: Frame) -> Any:
        decided = truth(self.eval(node.test, frame))
        body, orelse = self.eval(node.body, frame), self.eval(node.orelse, frame)
        if decided is None:
            return UNKNOWN
        return body if decided else orelse

    def _joinedstr(self, node: ast.JoinedStr, frame: Frame) -> Any:
        parts = [self.eval(value, frame) for value in node.values]
        if any(not isinstance(part, str) for part in parts):
            return UNKNOWN
        return check_size("".join(parts))

    def _formatted(self, node: ast.FormattedValue, frame: Frame) -> Any:
        value = self.eval(node.value, frame)
        spec = self.eval(node.format_spec, frame) if node.format_spec is not None else ""
        if value is UNKNOWN or spec is UNKNOWN or isinstance(value, _OPAQUE):
            return UNKNOWN
        value = convert(value, node.conversion)
        return UNKNOWN if value is UNKNOWN else format_value(value, spec)

    def elements(self, nodes: list[ast.expr], frame: Frame) -> list | None:
        """The values of a display's or call's elements, `*x` expanded; None if any is unknown."""
        out: list = []
        known = True
        for element in nodes:
            if isinstance(element, ast.Starred):
                items = items_of(self.eval(element.value, frame))
                if items is None:
                    known = False
                else:
                    out.extend(items)
            else:
                value = self.eval(element, frame)
                known = known and value is not UNKNOWN
                out.append(value)
            if len(out) > MAX_ITEMS:
                known = False
        return out if known else None

    def _sequence(self, node: ast.Tuple | ast.List, frame: Frame) -> Any:
        if not isinstance(node.ctx, ast.Load):
            return UNKNOWN
        items = self.elements(node.elts, frame)
        if items is None:
            return UNKNOWN
        return tuple(items) if isinstance(node, ast.Tuple) else items

    def _set(self, node: ast.Set, frame: Frame) -> Any:
        self.elements(node.elts, frame)
        return UNKNOWN  # iteration order of a set of strings depends on the hash seed: never a known value

    def _dict(self, node: ast.Dict, frame: Frame) -> Any:
        result: dict = {}
        known = True
        for key, value in zip(node.keys, node.values, strict=True):
            v = self.eval(value, frame)
            if key is None:
                known = known and isinstance(v, dict)
                if known:
                    result.update(v)
                continue
            k = self.eval(key, frame)
            if k is UNKNOWN or v is UNKNOWN or not is_immutable(k):
                known = False
            elif known:
                result[k] = v
        return check_size(result) if known else UNKNOWN

    def _subscript(self, node: ast.Subscript, frame: Frame) -> Any:
        value = self.eval(node.value, frame)
        if isinstance(node.slice, ast.Slice):
            parts = [self.eval(p, frame) for p in (node.slice.lower, node.slice.upper, node.slice.step)]
            if value is UNKNOWN or any(p is UNKNOWN for p in parts) or not isinstance(node.ctx, ast.Load):
                return UNKNOWN
            if not isinstance(value, str | bytes | list | tuple | range):
                return UNKNOWN
            result = value[slice(*parts)]
            return list(result) if isinstance(result, range) and len(result) <= MAX_ITEMS else result
        index = self.eval(node.slice, frame)
        if value is UNKNOWN or index is UNKNOWN or not isinstance(node.ctx, ast.Load):
            return UNKNOWN
        if not isinstance(value, str | bytes | list | tuple | dict | range) or not is_immutable(index):
            return UNKNOWN
        return value[index]

    def _attribute(self, node: ast.Attribute, frame: Frame) -> Any:
        base = self.eval(node.value, frame)
        if isinstance(base, ModuleRef):
            path = f"{base.path}.{node.attr}"
            return MODULE_CONSTANTS.get(path, ModuleRef(path))
        if isinstance(base, BuiltinRef) and base.name in ("str", "bytes", "int"):
            return ModuleRef(f"{base.name}.{node.attr}")
        if isinstance(base, FunctionValue) and node.attr == "__name__":
            return getattr(base.node, "name", "<lambda>")
        if base is UNKNOWN or isinstance(base, _OPAQUE):
            return UNKNOWN
        return BoundMethod(base, node.attr)

    def _starred(self, node: ast.Starred, frame: Frame) -> Any:
        self.eval(node.value, frame)
        return UNKNOWN

    def _lambda(self, node: ast.Lambda, frame: Frame) -> Any:
        for default in (*node.args.defaults, *node.args.kw_defaults):
            self.eval(default, frame)
        return self.make_function(node, frame)

    def make_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, frame: Frame) -> Any:
        """A callable value for the file's own function; the folder runs no user code, so UNKNOWN."""
        return UNKNOWN

    def _namedexpr(self, node: ast.NamedExpr, frame: Frame) -> Any:
        value = self.eval(node.value, frame)
        self.bind(node.target, value, frame)
        return value

    # -- calls -------------------------------------------------------------------------------------------
    def _arguments(self, node: ast.Call, frame: Frame) -> tuple[list, dict] | None:
        args = self.elements(node.args, frame)
        kwargs: dict = {}
        known = args is not None
        for keyword in node.keywords:
            value = self.eval(keyword.value, frame)
            if keyword.arg is None:
                if isinstance(value, dict) and all(isinstance(k, str) for k in value):
                    kwargs.update(value)
                else:
                    known = False
            elif value is UNKNOWN:
                known = False
            else:
                kwargs[keyword.arg] = value
        return (args, kwargs) if known and args is not None else None

    def _call(self, node: ast.Call, frame: Frame) -> Any:
        function = self.eval(node.func, frame)
        arguments = self._arguments(node, frame)
        if (
            isinstance(function, BoundMethod)
            and isinstance(function.receiver, list | dict | Hashed)
            and function.name not in _PURE_CONTAINER_METHODS
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
        ):
            self.forget(node.func.value.id, frame)  # a mutating method: the container is unknown now
            return UNKNOWN
        if arguments is None or function is UNKNOWN:
            return UNKNOWN
        args, kwargs = arguments
        return self.apply(function, args, kwargs)

    def apply(self, function: Any, args: list, kwargs: dict) -> Any:
        if isinstance(function, BuiltinRef):
            if function.name == "map":
                return self._map(args)
            if function.name == "filter":
                return self._filter(args)
            pure = PURE_BUILTINS.get(function.name)
            return check_size(pure(*args, **kwargs)) if pure is not None else UNKNOWN
        if isinstance(function, BoundMethod):
            return call_method(function.receiver, function.name, args, kwargs)
        if isinstance(function, ModuleRef):
            if function.path == "functools.reduce":
                return self._reduce(args)
            if function.path.startswith("random."):
                value, self.generator = seeded_call(function.path, args, kwargs, self.generator)
                return value
            return static_call(function.path, args, kwargs)
        if isinstance(function, FunctionValue):
            return self.call_user(function, args, kwargs)
        return UNKNOWN

    def call_user(self, function: FunctionValue, args: list, kwargs: dict) -> Any:
        return UNKNOWN

    def unfollowed(self, node: ast.AST, why: str) -> None:
        """A computation over known values that is not followed to its end; the folder ignores these."""

    def _map(self, args: list) -> Any:
        if len(args) < 2:
            return UNKNOWN
        columns = [items_of(a) for a in args[1:]]
        if any(c is None for c in columns):
            return UNKNOWN
        out = []
        for row in zip(*columns, strict=False):  # type: ignore[call-overload]
            self.tick()
            value = self.apply(args[0], list(row), {})
            if value is UNKNOWN:
                return UNKNOWN
            out.append(value)
        return out

    def _filter(self, args: list) -> Any:
        items = items_of(args[1]) if len(args) == 2 else None
        if items is None:
            return UNKNOWN
        out = []
        for item in items:
            self.tick()
            keep = truth(item if args[0] is None else self.apply(args[0], [item], {}))
            if keep is None:
                return UNKNOWN
            if keep:
                out.append(item)
        return check_size(out)

    def _reduce(self, args: list) -> Any:
        items = items_of(args[1]) if len(args) >= 2 else None
        if items is None:
            return UNKNOWN
        if len(args) >= 3:
            items = [args[2], *items]
        if not items:
            return UNKNOWN
        value = items[0]
        for item in items[1:]:
            self.tick()
            value = self.apply(args[0], [value, item], {})
            if value is UNKNOWN:
                return UNKNOWN
        return value

    # -- comprehensions ------------------------------------------------------------------------------------
    def comprehension_scope(self, node: ast.AST, frame: Frame) -> Frame:
        targets: set[str] = set()
        for generator in node.generators:  # type: ignore[attr-defined]
            stack = [generator.target]
            while stack:
                target = stack.pop()
                if isinstance(target, ast.Name):
                    targets.add(target.id)
                elif isinstance(target, ast.Tuple | ast.List):
                    stack.extend(target.elts)
                elif isinstance(target, ast.Starred):
                    stack.append(target.value)
        return Frame(frame, frozenset(targets))

    def _comprehension(
        self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp, frame: Frame
    ):
        scope = self.comprehension_scope(node, frame)
        results: list = []
        known = self._generate(node, node.generators, scope, results)
        if not known or isinstance(node, ast.SetComp):
            return UNKNOWN
        if isinstance(node, ast.DictComp):
            return check_size(dict(results))
        return results

    def _generate(self, node, generators: list[ast.comprehension], scope: Frame, out: list) -> bool:
        """Fill `out` with the comprehension's elements; False once anything about them is unknown (the
        element expressions are still evaluated once, so values they assemble are still observed)."""
        if not generators:
            if isinstance(node, ast.DictComp):
                key, value = self.eval(node.key, scope), self.eval(node.value, scope)
                out.append((key, value))
                return key is not UNKNOWN and value is not UNKNOWN and is_immutable(key)
            element = self.eval(node.elt, scope)
            out.append(element)
            return element is not UNKNOWN and len(out) <= MAX_ITEMS
        first, rest = generators[0], generators[1:]
        iterable = self.eval(first.iter, scope)
        items = items_of(iterable)
        if items is None and is_iterable_value(iterable):
            self.unfollowed(node, f"iterates {len(iterable):,} known elements: too many to follow")
        if items is None or first.is_async:
            self.bind(first.target, UNKNOWN, scope)
            for condition in first.ifs:
                self.eval(condition, scope)
            self._generate(node, rest, scope, [])
            return False
        known = True
        for item in items:
            self.tick()
            self.bind(first.target, item, scope)
            tests = [truth(self.eval(condition, scope)) for condition in first.ifs]
            if any(t is None for t in tests):
                self._generate(node, rest, scope, [])
                known = False
                continue
            if all(tests) and not self._generate(node, rest, scope, out):
                known = False
            if len(out) > MAX_ITEMS:
                return False
        return known

    # -- binding -------------------------------------------------------------------------------------------
    def bind(self, target: ast.AST, value: Any, frame: Frame) -> None:
        if isinstance(target, ast.Name):
            frame.vars[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            items = items_of(value) if value is not UNKNOWN else None
            starred = [i for i, t in enumerate(target.elts) if isinstance(t, ast.Starred)]
            if items is not None and not starred and len(items) != len(target.elts):
                items = None
            if items is not None and starred:
                head, tail = starred[0], len(target.elts) - starred[0] - 1
                if len(items) < head + tail:
                    items = None
                else:
                    items = [
                        *items[:head],
                        list(items[head : len(items) - tail]),
                        *items[len(items) - tail :],
                    ]
            for position, element in enumerate(target.elts):
                element = element.value if isinstance(element, ast.Starred) else element
                self.bind(element, UNKNOWN if items is None else items[position], frame)
        elif isinstance(target, ast.Subscript | ast.Attribute):
            self.eval(target.value, frame)
            if isinstance(target, ast.Subscript):
                self.eval(target.slice, frame)
            base = target.value
            while isinstance(base, ast.Subscript | ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name):
                self.forget(base.id, frame)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, UNKNOWN, frame)
