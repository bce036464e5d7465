"""The doors issue 22 found open: code that runs or reads state without naming anything banned.

Each is a family with its own rule:
- evaluated annotations: `typing.get_type_hints` (which singledispatch's bare `register` calls) evaluates
  an annotation that is a string, or that *holds* one (a name bound to a runtime-built string), so every
  annotation must be a plain type expression: builtins, the file's classes, imported names, type aliases,
  subscripts and unions of those, literals inside `Literal[...]` only;
- runtime hooks: dunders Python calls behind the code's back (`__subclasshook__`, `__init_subclass__`,
  `__class_getitem__`, `__set_name__`, …) may not be defined or assigned, and `__match_args__` only as a
  literal tuple of names (set at run time, it turns a class pattern into a getattr by string);
- `setattr`/`delattr` with a computed name, even one that folds to an ordinary attribute, and any attribute
  set on a module (monkeypatching);
- `str.format`/`format_map` on a template that is not a literal (a field name arriving at run time walks
  attributes by string);
- `p.replace(target)`, `p.copy(target)`, `p.move(target)`: with one argument these are pathlib's renames
  and copies (str.replace needs two).
The module-level doors (process pools, frame access, stdlib writers) are policy data (`policy.py`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from shoparena.admission import policy
from shoparena.admission.names import Names
from shoparena.admission.syntax import Tree

Report = Callable[[str, str, ast.AST], None]
_FORMAT_CONSUMERS: dict[str, tuple[int | None, frozenset[str]]] = {
    "logging.Formatter": (0, frozenset({"fmt"})),
    "logging.basicConfig": (None, frozenset({"format"})),
}
"""Stdlib calls that run str.format on a template they are given: (its position, its keyword names)."""
_FORMAT_CONSUMER_NAMES = frozenset(path.rsplit(".", 1)[1] for path in _FORMAT_CONSUMERS)
_LITERAL_SUBSCRIPTS = frozenset({"Literal"})
_METADATA_SUBSCRIPTS = frozenset({"Annotated"})


def _tail_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


class DoorCheck:
    def __init__(
        self,
        names: Names,
        fold: Callable[[ast.AST | None], Any],
        module_paths: Callable[[ast.AST], set[str]],
        report: Report,
    ):
        self.names = names
        self.fold = fold
        self.module_paths = module_paths
        self.report = report
        self._strings = True

    def run(self, tree: Tree) -> None:
        self.tree = tree
        self._type_names: dict[str, bool] = {}
        self._template_names: dict[str, bool] = {}
        self._called: set[int] = set()
        """The `func` of every call met so far (a call is met before its function, in pre-order)."""
        self._class_fields: set[int] = set()
        """A class's field annotations, noted when the class is met (before its body, in pre-order)."""
        handlers = {
            ast.Call: self._call,
            ast.Attribute: self._attribute,
            ast.ClassDef: self._class_body,
            ast.AnnAssign: self._field_annotation,
            ast.arg: self._argument_annotation,
            ast.FunctionDef: self._return_annotation,
            ast.AsyncFunctionDef: self._return_annotation,
        }
        for node in tree.nodes:
            handler = handlers.get(type(node))
            if handler is not None:
                handler(node)

    def _field_annotation(self, node: ast.AnnAssign) -> None:
        self._annotation(node.annotation, strings=id(node) not in self._class_fields)

    def _argument_annotation(self, node: ast.arg) -> None:
        if node.annotation is not None:
            self._annotation(node.annotation)

    def _return_annotation(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.returns is not None:
            self._annotation(node.returns)

    # -- bindings (judged only for the names an annotation or a format call uses) -------------------------
    def _assignments(self, name: str) -> list[ast.AST]:
        return self.names.values.get(name, [])

    def _type_name(self, name: str) -> bool:
        """Whether every binding of `name` makes it a type: a class, a def, an import, a type alias."""
        if name not in self.names.non_import:
            return True  # a builtin, or bound by imports only
        known = self._type_names.get(name)
        if known is None and name in self.names.classes and self.names.bindings[name] == 1:
            known = self._type_names[name] = True  # one class statement, nothing else
        if known is None:
            self._type_names[name] = False  # while deciding (an alias defined through itself is not a type)
            bindings = self.names.bindings[name]
            typed = bindings - len(self._assignments(name)) == self._declared(name)
            known = typed and all(self._type_alias_value(value) for value in self._assignments(name))
            self._type_names[name] = known
        return known

    def _declared(self, name: str) -> int:
        """Bindings of `name` by class, def and import statements."""
        return self.names.declared[name]

    def _type_alias_value(self, value: ast.AST) -> bool:
        if isinstance(value, ast.Call):
            return _tail_name(value.func) in policy.TYPE_FACTORIES
        return self._not_a_type(value) is None

    def _template_name(self, name: str) -> bool:
        """Whether every binding of `name` is an assignment of a literal template."""
        known = self._template_names.get(name)
        if known is None:
            self._template_names[name] = False
            values = self._assignments(name)
            known = bool(values) and len(values) == self.names.bindings[name]
            known = known and all(self._literal_template(value) for value in values)
            self._template_names[name] = known
        return known

    # -- annotations -----------------------------------------------------------------------------------
    def _annotation(self, annotation: ast.AST | None, strings: bool = True) -> None:
        """`strings`: whether a quoted type is allowed (a forward reference in a signature, `-> "Node"`);
        a class's field annotations never are: dataclasses and typing evaluate them."""
        if annotation is None:
            return
        self._strings = strings
        why = self._not_a_type(annotation)
        if why:
            self.report(
                "security.evaluated_annotation",
                f"annotation {why}: typing evaluates annotations (get_type_hints, singledispatch)",
                annotation,
            )

    def _not_a_type(self, node: ast.AST, literal: bool = False, names_checked: bool = True) -> str | None:
        """Why `node` is not a plain type expression (None when it is)."""
        if isinstance(node, ast.Constant):
            if node.value is None or node.value is ...:
                return None
            if literal and not isinstance(node.value, complex):
                return None
            if not isinstance(node.value, str):
                return "is a value"
            if not (names_checked and self._strings) or len(node.value) > 200:
                return "is a string (code evaluated later)"
            return self._quoted_type(node.value)
        if isinstance(node, ast.Name):
            if not names_checked or self._type_name(node.id):
                return None
            return f"{node.id} names a value bound at run time, not a type"
        if isinstance(node, ast.Attribute):
            root: ast.AST = node
            while isinstance(root, ast.Attribute):
                root = root.value
            imported = isinstance(root, ast.Name) and root.id in self.names.module_paths
            if imported and (not names_checked or root.id not in self.names.non_import):  # type: ignore[union-attr]
                return None
            return "reads an attribute of something other than an imported module"
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self._not_a_type(node.left, literal, names_checked) or self._not_a_type(
                node.right, literal, names_checked
            )
        if isinstance(node, ast.Subscript):
            why = self._not_a_type(node.value, False, names_checked)
            if why:
                return why
            head = _tail_name(node.value)
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if head in _METADATA_SUBSCRIPTS:  # Annotated[T, metadata…]: the metadata is ordinary code
                return self._not_a_type(items[0], literal, names_checked) if items else None
            inner = literal or head in _LITERAL_SUBSCRIPTS
            for item in items:
                why = self._not_a_type(item, inner, names_checked)
                if why:
                    return why
            return None
        if isinstance(node, ast.List | ast.Tuple):  # Callable[[int, str], R]
            for item in node.elts:
                why = self._not_a_type(item, literal, names_checked)
                if why:
                    return why
            return None
        if isinstance(node, ast.UnaryOp) and literal and isinstance(node.operand, ast.Constant):
            return None  # Literal[-1]
        return "is not a type expression"

    def _quoted_type(self, text: str) -> str | None:
        """A forward reference is allowed when what it quotes is itself a plain type expression."""
        try:
            inner = ast.parse(text.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return "is a string that is not a type expression"
        self._strings = False  # no quotes inside quotes
        try:
            why = self._not_a_type(inner)
        finally:
            self._strings = True
        return f"quotes something that {why}" if why else None

    # -- runtime hooks ---------------------------------------------------------------------------------
    def _class_body(self, node: ast.ClassDef) -> None:
        for statement in node.body:
            if type(statement) is ast.AnnAssign:
                self._class_fields.add(id(statement))
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                if statement.name in policy.RUNTIME_HOOKS:
                    self._hook(statement.name, f"class {node.name} defines {statement.name}", statement)
            elif isinstance(statement, ast.Assign | ast.AnnAssign):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                for target in targets:
                    if isinstance(target, ast.Name) and target.id in policy.RUNTIME_HOOKS:
                        if target.id == "__match_args__" and self._literal_names(statement.value):
                            continue
                        self._hook(target.id, f"class {node.name} sets {target.id}", statement)

    def _literal_names(self, value: ast.AST | None) -> bool:
        return isinstance(value, ast.Tuple) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value.isidentifier()
            for e in value.elts
        )

    def _hook(self, name: str, what: str, node: ast.AST) -> None:
        why = (
            "a class pattern then reads attributes by a string set at run time"
            if name == "__match_args__"
            else "Python calls it behind the code's back"
        )
        self.report("security.runtime_dunder", f"{what}: {why}", node)

    def _attribute(self, node: ast.Attribute) -> None:
        if type(node.ctx) is not ast.Load:
            self._attribute_store(node)
        elif node.attr in ("format", "format_map") and id(node) not in self._called:
            # `m = template.format; m(obj)`: the same walk, called later
            receiver = node.value
            if not self.module_paths(receiver) and not self._literal_template(receiver):
                self.report(
                    "security.dynamic_format",
                    f"{node.attr} of a template that is not a literal, used as a value",
                    node,
                )

    def _attribute_store(self, node: ast.Attribute) -> None:
        verb = "deletes" if isinstance(node.ctx, ast.Del) else "sets"
        if node.attr in policy.RUNTIME_HOOKS:
            self._hook(node.attr, f"{verb} {node.attr}", node)
        paths = sorted(self.module_paths(node.value))
        if paths:
            self.report(
                "security.computed_setattr",
                f"{verb} {paths[0]}.{node.attr}: a module's attributes may not be changed",
                node,
            )

    # -- calls -----------------------------------------------------------------------------------------
    def _call(self, node: ast.Call) -> None:
        func = node.func
        if type(func) is ast.Attribute and func.attr in ("format", "format_map"):
            self._called.add(id(func))
        if _tail_name(func) in _FORMAT_CONSUMER_NAMES:
            for path in self.module_paths(func):
                if path in _FORMAT_CONSUMERS:
                    self._format_consumer(node, path)
        if isinstance(func, ast.Name):
            if func.id in ("setattr", "delattr") and self.names.is_builtin(func.id):
                self._setattr(node, func.id)
            return
        if not isinstance(func, ast.Attribute):
            return
        if func.attr in ("format", "format_map"):
            self._format(node, func)
        elif func.attr in policy.PATH_METHODS_WITH_ONE_ARGUMENT and not self.module_paths(func.value):
            positional = len(node.args)
            starred = any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords
            )
            if (
                starred
                or (positional == 1 and not node.keywords)
                or any(k.arg == "target" for k in node.keywords)
            ):
                self.report(
                    "security.file_write",
                    f".{func.attr}(target) with one argument is pathlib's {func.attr}: it writes the filesystem",
                    node,
                )

    def _setattr(self, node: ast.Call, function: str) -> None:
        if len(node.args) < 2 or any(isinstance(a, ast.Starred) for a in node.args[:2]):
            return  # reported as security.dynamic_attribute
        target, name_node = node.args[0], node.args[1]
        name = self.fold(name_node)
        if not isinstance(name, str):
            return  # not a constant: security.dynamic_attribute
        if not (isinstance(name_node, ast.Constant) and isinstance(name_node.value, str)):
            self.report(
                "security.computed_setattr",
                f"{function}() with a computed name ({name!r}): write the attribute out",
                node,
            )
        if name in policy.RUNTIME_HOOKS:
            self._hook(name, f"{function}(…, {name!r})", node)
        paths = sorted(self.module_paths(target))
        if paths:
            self.report(
                "security.computed_setattr",
                f"{function}() on module {paths[0]}: a module's attributes may not be changed",
                node,
            )

    def _format(self, node: ast.Call, func: ast.Attribute) -> None:
        receiver: ast.AST | None = func.value
        if isinstance(receiver, ast.Name) and receiver.id == "str" and self.names.is_builtin("str"):
            receiver = node.args[0] if node.args else None  # str.format(template, …)
        if self.module_paths(func.value):
            return  # a module's own format function (checked as a member)
        if receiver is None or not self._literal_template(receiver):
            self.report(
                "security.dynamic_format",
                f"{func.attr}() on a template that is not a literal: its field names could walk attributes",
                node,
            )

    def _format_consumer(self, node: ast.Call, path: str) -> None:
        """logging formats records with a `{`-style template through str.format: the same walk."""
        position, keywords = _FORMAT_CONSUMERS[path]
        template = node.args[position] if position is not None and len(node.args) > position else None
        for keyword in node.keywords:
            if keyword.arg in keywords or keyword.arg is None:
                template = keyword.value
        if template is not None and not self._literal_template(template):
            self.report(
                "security.dynamic_format",
                f"{path}() with a format that is not a literal: its fields could walk attributes",
                node,
            )

    def _literal_template(self, node: ast.AST) -> bool:
        if isinstance(self.fold(node), str):
            return True
        if isinstance(node, ast.Name):
            return self._template_name(node.id)
        if isinstance(node, ast.IfExp):
            return self._literal_template(node.body) and self._literal_template(node.orelse)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._literal_template(node.left) and self._literal_template(node.right)
        return False
