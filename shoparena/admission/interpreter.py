"""A bounded abstract interpreter over a whole submission, for the integrity checks.

It executes the module body, every class body and every function body (parameters UNKNOWN), following
the *constant part* of the program: assignments, loops over known data, branches (run from the same
state, then merged: a name the branches disagree on becomes UNKNOWN), try/with/match, and calls of the
file's own functions with known arguments — so a decoder loop over a key string, or a helper called
with a constant, yields its result. Values reach `observe` through the expression evaluator.

Cost is bounded three ways, all deterministic (operation counts, never wall time): one loop,
comprehension or call may spend at most WORK_LIMIT operations before it is abandoned and treated as
unknown; the file as a whole has a budget proportional to its size, and running out of it is reported
(so padding a file cannot push an assembled answer past the budget unseen); nesting deeper than
MAX_DEPTH is reported the same way.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from shoparena.admission.evaluator import (
    MAX_DEPTH,
    Break,
    BudgetExhausted,
    Continue,
    ControlFlow,
    Evaluator,
    Frame,
    FunctionValue,
    LoopUncertain,
    Raise,
    Return,
    TooDeep,
    WorkLimit,
    truth,
)
from shoparena.admission.syntax import Tree
from shoparena.admission.values import (
    MAX_ITEMS,
    MAX_STR,
    UNKNOWN,
    ModuleRef,
    Seeded,
    TooBig,
    binary,
    is_iterable_value,
    items_of,
)

WORK_LIMIT = 100_000
"""Operations one loop, comprehension or user-function call may spend before it is abandoned."""
PROBE_KEYS = range(256)
"""The keys a decode loop with a key unknown at admission is tried with (lengths, byte XOR keys, shifts)."""
PROBE_WORK = 30_000
PROBE_TOTAL = 150_000
"""Operations one probe (every key over a row of ~10 characters), and all probes of a file, may spend; they
never count against the file's budget. Spending them all is reported, so decoys cannot use them up."""
_DECODE_OPS = (ast.BitXor,)
MAX_CALL_DEPTH = 4
_MISSING = object()


Unfollowed = Callable[[ast.AST, str], None]


class Interpreter(Evaluator):
    def __init__(
        self,
        tree: Tree,
        *,
        on_unfollowed: Unfollowed | None = None,
        on_keyed: Callable[[str, ast.AST, int], bool] | None = None,
        **options: Any,
    ):
        super().__init__(**options)
        self.tree = tree
        self.on_unfollowed = on_unfollowed
        self.call_depth = 0
        self.loop_depth = 0
        """How many loops being followed iteration by iteration enclose the current statement."""
        self._generators: dict[int, bool] = {}
        self.statement: ast.AST | None = None
        """The statement being executed: where a run out of budget or depth is reported."""
        self.on_keyed = on_keyed
        self.key: int | None = None
        """While probing a decode loop: the key every unknown name and call stands for."""
        self.probe_spent = 0
        self.keyed_found = False
        self._decoders: dict[int, bool] = {}

    def unfollowed(self, node: ast.AST, why: str) -> None:
        """Constant computation that was cut short: reported, so that making a decoder expensive (or
        its data long) cannot hide what it decodes (not while probing keys: that is not the program)."""
        if self.on_unfollowed is not None and self.key is None:
            self.on_unfollowed(node, why)

    # -- functions -----------------------------------------------------------------------------------------
    def make_function(self, node, frame: Frame) -> Any:
        return FunctionValue(node, frame)

    def call_user(self, function: FunctionValue, args: list, kwargs: dict) -> Any:
        node = function.node
        if self.call_depth >= MAX_CALL_DEPTH or isinstance(node, ast.AsyncFunctionDef):
            return UNKNOWN
        if not isinstance(node, ast.Lambda) and self._is_generator(node):
            return UNKNOWN
        bound = self._bind_parameters(node.args, args, kwargs, function.closure)
        if bound is None:
            return UNKNOWN
        frame = Frame(function.closure, self.tree.scope_locals(node), bound)
        saved = self.limited(WORK_LIMIT)
        self.call_depth += 1
        loops, self.loop_depth = self.loop_depth, 0
        try:
            if isinstance(node, ast.Lambda):
                return self.eval(node.body, frame)
            try:
                self.exec_block(node.body, frame)
            except Return as done:
                return UNKNOWN if frame.maybe_returned else done.value
            except ControlFlow:
                return UNKNOWN
            return UNKNOWN if frame.maybe_returned else None
        except WorkLimit:
            if self.budget < saved:
                raise
            if frame.vars and all(value is not UNKNOWN for value in frame.vars.values()):
                name = getattr(node, "name", "a lambda")
                self.unfollowed(
                    node, f"a call of {name} with constant arguments does too much work to follow"
                )
            return UNKNOWN
        finally:
            self.call_depth -= 1
            self.loop_depth = loops
            self.floor = saved

    def _is_generator(self, node: ast.AST) -> bool:
        found = self._generators.get(id(node))
        if found is None:
            found = any(isinstance(n, ast.Yield | ast.YieldFrom | ast.Await) for n in self.tree.walk(node))
            self._generators[id(node)] = found
        return found

    def _bind_parameters(self, spec: ast.arguments, args: list, kwargs: dict, closure: Frame) -> dict | None:
        kwargs = dict(kwargs)
        positional = [*spec.posonlyargs, *spec.args]
        bound: dict[str, Any] = {}
        defaults = [self.eval(d, closure) for d in spec.defaults]
        for position, parameter in enumerate(positional):
            if position < len(args):
                bound[parameter.arg] = args[position]
            elif parameter.arg in kwargs and parameter not in spec.posonlyargs:
                bound[parameter.arg] = kwargs.pop(parameter.arg)
            else:
                offset = position - (len(positional) - len(defaults))
                if offset < 0:
                    return None
                bound[parameter.arg] = defaults[offset]
        extra = args[len(positional) :]
        if extra and spec.vararg is None:
            return None
        if spec.vararg is not None:
            bound[spec.vararg.arg] = tuple(extra)
        for parameter, default in zip(spec.kwonlyargs, spec.kw_defaults, strict=True):
            if parameter.arg in kwargs:
                bound[parameter.arg] = kwargs.pop(parameter.arg)
            elif default is not None:
                bound[parameter.arg] = self.eval(default, closure)
            else:
                return None
        if kwargs and spec.kwarg is None:
            return None
        if spec.kwarg is not None:
            bound[spec.kwarg.arg] = dict(kwargs)
        return bound

    def _comprehension(self, node, frame: Frame):
        saved = self.limited(WORK_LIMIT)
        try:
            value = super()._comprehension(node, frame)
        except WorkLimit:
            if self.budget < saved:
                raise
            self.unfollowed(node, "a comprehension over constant data does too much work to follow")
            return UNKNOWN
        finally:
            self.floor = saved
        if (
            value is UNKNOWN
            and self.on_keyed is not None
            and self.key is None
            and not self.keyed_found  # one keyed table rejects the file: the rest need not be tried
            and self._decodes(node)
        ):
            self._probe_comprehension(node, frame)
        return value

    # -- decode loops whose key is known only at run time ----------------------------------------------
    def _name(self, node: ast.Name, frame: Frame) -> Any:
        value = self.lookup(node.id, frame)
        return self.key if value is UNKNOWN and self.key is not None else value

    def _call(self, node: ast.Call, frame: Frame) -> Any:
        value = super()._call(node, frame)
        return self.key if value is UNKNOWN and self.key is not None else value

    def _decodes(self, node: ast.AST) -> bool:
        """A comprehension or loop that works on character codes: chr/ord or XOR in its element or body."""
        found = self._decoders.get(id(node))
        if found is None:
            found = any(
                (
                    isinstance(part, ast.Call)
                    and isinstance(part.func, ast.Name)
                    and part.func.id in ("chr", "ord")
                )
                or (isinstance(part, ast.BinOp) and isinstance(part.op, _DECODE_OPS))
                for root in (node.body if isinstance(node, ast.For) else [getattr(node, "elt", node)])
                for part in self.tree.walk(root)
            )
            self._decoders[id(node)] = found
        return found

    def _probe_comprehension(self, node, frame: Frame) -> None:
        observe, self.observe = self.observe, None
        try:
            iterable = self.eval(node.generators[0].iter, frame)
        finally:
            self.observe = observe
        if items_of(iterable) is not None:  # a comprehension over literal data
            self._probe(
                node,
                lambda: (
                    [text] if (text := _decoded_text(Evaluator._comprehension(self, node, frame))) else []
                ),
            )

    def _probe(self, node: ast.AST, run: Callable[[], list[str]]) -> None:
        """Run a decode loop again with every unknown name and call taken as one key, for each key in
        PROBE_KEYS: literal data that decodes to a product id under some key hides answers, whatever the
        key turns out to be at run time. Probes spend their own bounded work, never the file's budget,
        and observe nothing (a value seen under a guessed key is not the program's)."""
        if self.probe_spent >= PROBE_TOTAL:
            self.unfollowed(node, "more decode loops with a run-time key than admission can try every key of")
            return
        budget, floor, observe, generator = self.budget, self.floor, self.observe, self.generator
        self.observe = None
        self.budget = PROBE_WORK + 1
        self.floor = 1
        try:
            for key in PROBE_KEYS:
                self.key = key
                if any(self.on_keyed(text, node, key) for text in run()):  # type: ignore[misc]
                    self.keyed_found = True
                    break
        except (WorkLimit, BudgetExhausted, TooDeep, ControlFlow):
            pass
        finally:
            self.probe_spent += PROBE_WORK + 1 - self.budget
            self.key = None
            self.budget, self.floor, self.observe, self.generator = budget, floor, observe, generator

    # -- statements ------------------------------------------------------------------------------------
    def forget_all(self, names: Iterable[str], frame: Frame) -> None:
        for name in names:
            if name not in self.aliases:  # import-only names keep their module
                frame.vars[name] = UNKNOWN

    def exec_block(self, body: list[ast.stmt], frame: Frame) -> None:
        for statement in body:
            self.exec(statement, frame)

    def exec(self, node: ast.stmt, frame: Frame) -> None:
        self.statement = node
        self.tick()
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise TooDeep
            handler = _STATEMENTS.get(type(node))
            if handler is not None:
                handler(self, node, frame)
            else:
                self._other(node, frame)
        finally:
            self.depth -= 1

    def _assign(self, node: ast.Assign, frame: Frame) -> None:
        value = self.eval(node.value, frame)
        for target in node.targets:
            self.bind(target, value, frame)

    def _annassign(self, node: ast.AnnAssign, frame: Frame) -> None:
        self.eval(node.annotation, frame)
        if node.value is not None:
            self.bind(node.target, self.eval(node.value, frame), frame)

    def _augassign(self, node: ast.AugAssign, frame: Frame) -> None:
        value = self.eval(node.value, frame)
        if not isinstance(node.target, ast.Name):
            self.bind(node.target, UNKNOWN, frame)
            return
        current = self.lookup(node.target.id, frame)
        result = UNKNOWN
        if current is not UNKNOWN and value is not UNKNOWN:
            try:
                result = binary(type(node.op).__name__, current, value)
            except TooBig:
                self.unfollowed(node, "a constant computation builds a value too large to follow")
            except Exception:
                result = UNKNOWN
        if isinstance(result, str | bytes) and self.observe is not None:
            self.seen(result, node)
        frame.vars[node.target.id] = result

    def _expression_statement(self, node: ast.Expr, frame: Frame) -> None:
        call = node.value
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
            and call.func.attr in ("append", "extend")
            and len(call.args) == 1
            and not call.keywords
            and not isinstance(call.args[0], ast.Starred)
        ):
            target = self.lookup(call.func.value.id, frame)
            argument = self.eval(call.args[0], frame)
            grown = items_of(argument) if call.func.attr == "extend" else [argument]
            known = isinstance(target, list) and argument is not UNKNOWN and grown is not None
            if known and len(target) + len(grown) <= MAX_ITEMS:
                target.extend(grown)
                return
            self.forget(call.func.value.id, frame)
            return
        self.eval(call, frame)
        method = call.func if isinstance(call, ast.Call) else None
        if isinstance(method, ast.Attribute) and isinstance(method.value, ast.Name):
            self.forget(method.value.id, frame)  # a method call may have changed its receiver

    def _return(self, node: ast.Return, frame: Frame) -> None:
        raise Return(self.eval(node.value, frame))

    def _break(self, node: ast.Break, frame: Frame) -> None:
        raise Break

    def _continue(self, node: ast.Continue, frame: Frame) -> None:
        raise Continue

    def _raise(self, node: ast.Raise, frame: Frame) -> None:
        self.eval(node.exc, frame)
        self.eval(node.cause, frame)
        raise Raise

    def _assert(self, node: ast.Assert, frame: Frame) -> None:
        decided = truth(self.eval(node.test, frame))
        self.eval(node.msg, frame)
        if decided is False:
            raise Raise

    def _function_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef, frame: Frame) -> None:
        for expression in (*node.decorator_list, *node.args.defaults, *node.args.kw_defaults):
            self.eval(expression, frame)
        plain = not node.decorator_list and isinstance(node, ast.FunctionDef)
        frame.vars[node.name] = FunctionValue(node, frame) if plain else UNKNOWN

    def _class_def(self, node: ast.ClassDef, frame: Frame) -> None:
        for expression in (*node.decorator_list, *node.bases, *(k.value for k in node.keywords)):
            self.eval(expression, frame)
        self._uncertain(node.body, Frame(frame, self.tree.scope_locals(node)))
        frame.vars[node.name] = UNKNOWN

    def _with(self, node: ast.With | ast.AsyncWith, frame: Frame) -> None:
        for item in node.items:
            self.eval(item.context_expr, frame)
            if item.optional_vars is not None:
                self.bind(item.optional_vars, UNKNOWN, frame)
        self.exec_block(node.body, frame)

    def _match(self, node: ast.Match, frame: Frame) -> None:
        self.eval(node.subject, frame)
        for case in node.cases:
            self.forget_all(self.tree.binds([case.pattern]), frame)
            self.eval(case.guard, frame)
        self._branches([case.body for case in node.cases], frame, exhaustive=False)

    def _bindings_only(self, node: ast.stmt, frame: Frame) -> None:
        self.forget_all(self.tree.binds([node]), frame)

    def _import(self, node: ast.Import | ast.ImportFrom, frame: Frame) -> None:
        for name in self.tree.binds([node]):
            path = self.aliases.get(name)
            frame.vars[name] = ModuleRef(path) if path is not None else UNKNOWN

    def _other(self, node: ast.AST, frame: Frame) -> Any:
        for child in self.tree.children(node):
            if isinstance(child, ast.expr):
                self.eval(child, frame)
        return UNKNOWN

    # -- control flow ----------------------------------------------------------------------------------
    def _if(self, node: ast.If, frame: Frame) -> None:
        decided = truth(self.eval(node.test, frame))
        if decided is not None:
            self.exec_block(node.body if decided else node.orelse, frame)
            return
        self._branches([node.body, node.orelse], frame, exhaustive=True)

    def _branches(self, bodies: list[list[ast.stmt]], frame: Frame, exhaustive: bool) -> None:
        """Run each branch from the same state, then keep only the values every branch agrees on."""
        start = dict(frame.vars)
        outcomes = []
        try:
            for body in bodies:
                frame.vars = dict(start)
                self._uncertain(body, frame)
                outcomes.append(frame.vars)
        except WorkLimit:
            frame.vars = start
            self.forget_all(self.tree.binds([s for body in bodies for s in body]), frame)
            raise
        if not exhaustive:
            outcomes.append(start)
        merged = dict(start)
        for name in set().union(*outcomes):
            values = [outcome.get(name, _MISSING) for outcome in outcomes]
            first = values[0]
            same = first is not _MISSING and all(v is first for v in values[1:])
            merged[name] = first if same else UNKNOWN
        for name in self.tree.binds([s for body in bodies for s in body]):
            if isinstance(merged.get(name), list | dict | Seeded):
                merged[name] = UNKNOWN  # mutated in place in a branch that may not have run
        frame.vars = merged
        self.generator = None  # draws in a branch that may not have run: the sequence is unknown

    def _uncertain(self, body: list[ast.stmt], frame: Frame) -> None:
        """Run a block that may or may not run (or may stop early): control flow out of it is noted,
        not followed."""
        try:
            self.exec_block(body, frame)
        except Return:
            frame.maybe_returned = True
            if self.loop_depth:
                raise LoopUncertain from None  # the loop may end here: its iterations are unknown
        except (Break, Continue):
            raise LoopUncertain from None
        except Raise:
            if self.loop_depth:
                raise LoopUncertain from None

    def _for(self, node: ast.For | ast.AsyncFor, frame: Frame) -> None:
        iterable = self.eval(node.iter, frame)
        items = None if isinstance(node, ast.AsyncFor) else items_of(iterable)
        if items is None or self._suspends(node):
            if items is None and is_iterable_value(iterable):
                self.unfollowed(node, f"a loop over {len(iterable):,} known elements: too many to follow")
            self._havoc_loop(node, frame)
            return
        probe = (
            self.on_keyed is not None
            and self.key is None
            and not self.keyed_found
            and self.loop_depth == 0
            and self._decodes(node)
        )
        before = _copied(frame.vars) if probe else None
        self._follow_loop(node, frame, items)
        if before is not None:
            bound = sorted(self.tree.binds(node.body) - self.aliases.keys())
            if any(frame.vars.get(name) is UNKNOWN for name in bound):
                self._probe(node, lambda: self._loop_texts(node, frame, before, items, bound))

    def _loop_texts(
        self, node: ast.For | ast.AsyncFor, frame: Frame, before: dict, items: list, bound: list
    ) -> list[str]:
        """One key's run of a decode loop from the state before it: the texts it leaves in its names."""
        after = frame.vars
        frame.vars = _copied(before)
        try:
            self._follow_loop(node, frame, items)
            return [text for name in bound if (text := _decoded_text(frame.vars.get(name))) is not None]
        finally:
            frame.vars = after

    def _follow_loop(self, node: ast.For | ast.AsyncFor, frame: Frame, items: list) -> None:
        saved = self.limited(WORK_LIMIT)
        abandoned = False
        self.loop_depth += 1
        try:
            for item in items:
                self.tick()
                self.bind(node.target, item, frame)
                try:
                    self.exec_block(node.body, frame)
                except Continue:
                    continue
            else:
                self.exec_block(node.orelse, frame)
        except Break:
            pass
        except LoopUncertain:
            abandoned = True
        except WorkLimit:
            abandoned = True
            if self.budget >= saved and self._state_known(node, frame):
                self.unfollowed(node, "a loop over constant data does too much work to follow")
        finally:
            self.floor = saved
            self.loop_depth -= 1
        if abandoned:
            self._havoc_loop(node, frame)

    def _while(self, node: ast.While, frame: Frame) -> None:
        if self._suspends(node):
            self._havoc_loop(node, frame)
            return
        saved = self.limited(WORK_LIMIT)
        self.loop_depth += 1
        try:
            for _ in range(MAX_STR):
                self.tick()
                decided = truth(self.eval(node.test, frame))
                if decided is None:
                    break
                if not decided:
                    self.exec_block(node.orelse, frame)
                    return
                with contextlib.suppress(Continue):
                    self.exec_block(node.body, frame)
                if not self._any_state_known(node, frame):
                    break  # nothing it computes is known any more: further rounds cannot add anything
            else:
                if self._state_known(node, frame):
                    self.unfollowed(node, f"a loop with a constant condition ran {MAX_STR:,} times")
        except Break:
            return
        except LoopUncertain:
            pass
        except WorkLimit:
            if self.budget >= saved and self._state_known(node, frame):
                self.unfollowed(node, "a loop over constant data does too much work to follow")
        finally:
            self.floor = saved
            self.loop_depth -= 1
        self._havoc_loop(node, frame)

    def _state_known(self, node: ast.For | ast.AsyncFor | ast.While, frame: Frame) -> bool:
        """Whether a loop cut short was computing from constants alone: it binds something, and all it
        binds is still known. A loop that reads tool results or other unknowns hides nothing."""
        parts: list[ast.AST] = [*node.body]
        if isinstance(node, ast.For | ast.AsyncFor):
            parts.append(node.target)
        names = self.tree.binds(parts) - self.aliases.keys()
        return bool(names) and all(self.lookup(name, frame) is not UNKNOWN for name in names)

    def _any_state_known(self, node: ast.While, frame: Frame) -> bool:
        names = self.tree.binds(node.body) - self.aliases.keys()
        return any(self.lookup(name, frame) is not UNKNOWN for name in names)

    def _suspends(self, node: ast.AST) -> bool:
        """A loop that yields or awaits can stop at any iteration: never followed step by step."""
        found = self._generators.get(-id(node))
        if found is None:
            found = any(isinstance(n, ast.Yield | ast.YieldFrom | ast.Await) for n in self.tree.walk(node))
            self._generators[-id(node)] = found
        return found

    def _havoc_loop(self, node: ast.For | ast.AsyncFor | ast.While, frame: Frame) -> None:
        """A loop whose iterations are unknown: every name it binds is unknown before and after, and its
        body is evaluated once in that state (for what it assembles from constants alone)."""
        parts: list[ast.AST] = [*node.body, *node.orelse]
        if isinstance(node, ast.For | ast.AsyncFor):
            parts.append(node.target)
        changed = self.tree.binds(parts)
        self.forget_all(changed, frame)
        self.generator = None
        if isinstance(node, ast.For | ast.AsyncFor):
            self.bind(node.target, UNKNOWN, frame)
        else:
            self.eval(node.test, frame)
        with contextlib.suppress(LoopUncertain):
            self._uncertain(node.body, frame)
        self._uncertain(node.orelse, frame)
        self.forget_all(changed, frame)

    def _try(self, node: ast.Try | ast.TryStar, frame: Frame) -> None:
        changed = self.tree.binds([*node.body, *node.handlers, *node.orelse])
        with contextlib.suppress(Raise):
            self.exec_block(node.body, frame)
        handlers = []
        for handler in node.handlers:
            self.eval(handler.type, frame)
            handlers.append(handler.body)
        self._branches([*handlers, node.orelse], frame, exhaustive=False)
        self.forget_all(changed, frame)
        self.exec_block(node.finalbody, frame)

    # -- whole programs ----------------------------------------------------------------------------------
    def run_module(self) -> Frame:
        """Execute the module body, then every function and lambda body with unknown parameters."""
        module = Frame()
        with contextlib.suppress(ControlFlow):
            self.exec_block(self.tree.module.body, module)
        for node in self.tree.nodes:
            if isinstance(node, ast.Global):
                self.forget_all(node.names, module)
        self._run_functions(module)
        return module

    def _run_functions(self, module: Frame) -> None:
        """Every function body once, parameters unknown, free names resolved through the enclosing
        functions' (unknown) locals to the module's final values; class scopes are skipped, as Python
        skips them when resolving names inside methods."""
        contexts: dict[int, Frame] = {id(self.tree.module): module}
        for node, enclosing in self.tree.scopes:
            outer = contexts.get(id(enclosing), module)
            if isinstance(node, ast.ClassDef):
                contexts[id(node)] = outer
                continue
            contexts[id(node)] = Frame(outer, self.tree.scope_locals(node))
            inner = Frame(outer, self.tree.scope_locals(node))
            self.loop_depth = 0
            try:
                if isinstance(node, ast.Lambda):
                    self.eval(node.body, inner)
                else:
                    self.exec_block(node.body, inner)
            except ControlFlow:
                pass


def _copied(variables: dict) -> dict:
    """A frame's values with their lists and dicts copied (a loop run under a guessed key mutates them)."""

    def copy(value: Any, depth: int = 0) -> Any:
        if depth > 8:
            return UNKNOWN
        if isinstance(value, list):
            return [copy(item, depth + 1) for item in value]
        if isinstance(value, dict):
            return {key: copy(item, depth + 1) for key, item in value.items()}
        if isinstance(value, Seeded):
            return UNKNOWN  # its draws under a guessed key must not advance the real generator
        return value

    return {name: copy(value) for name, value in variables.items()}


def _decoded_text(value: Any) -> str | None:
    """What a decoder leaves: a string, bytes, or elements that join into one (characters, byte values)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if not isinstance(value, list) or not value:
        return None
    if all(isinstance(item, str) for item in value):
        return "".join(value)
    if all(type(item) is int and 0 <= item < 256 for item in value):
        return bytes(value).decode("latin-1")
    return None


_STATEMENTS = {
    ast.Assign: Interpreter._assign,
    ast.AnnAssign: Interpreter._annassign,
    ast.AugAssign: Interpreter._augassign,
    ast.Expr: Interpreter._expression_statement,
    ast.If: Interpreter._if,
    ast.For: Interpreter._for,
    ast.AsyncFor: Interpreter._for,
    ast.While: Interpreter._while,
    ast.Return: Interpreter._return,
    ast.Break: Interpreter._break,
    ast.Continue: Interpreter._continue,
    ast.Raise: Interpreter._raise,
    ast.Assert: Interpreter._assert,
    ast.FunctionDef: Interpreter._function_def,
    ast.AsyncFunctionDef: Interpreter._function_def,
    ast.ClassDef: Interpreter._class_def,
    ast.Try: Interpreter._try,
    ast.TryStar: Interpreter._try,
    ast.With: Interpreter._with,
    ast.AsyncWith: Interpreter._with,
    ast.Match: Interpreter._match,
    ast.Import: Interpreter._import,
    ast.ImportFrom: Interpreter._import,
    ast.Global: Interpreter._bindings_only,
    ast.Nonlocal: Interpreter._bindings_only,
    ast.Delete: Interpreter._bindings_only,
}
