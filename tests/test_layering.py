"""Data flows one way: a unit never imports a unit above it (docs/architecture.md, "Who may import whom").

Every import is read from the syntax tree, so imports inside functions, `import shoparena.x as y` and
`from shoparena.x import module` count as much as the ones at the top of a module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import shoparena

# The stages, lowest first. A stage may import itself and any stage before it.
ORDER = [
    "records",
    "catalog",
    "index",
    "problems",
    "harness",
    "sandbox",
    "admission",
    "scoring",
    "agents",
    "inference",
    "agents.miner",
    "eval",
    "judge",
    "store",
    "corpus",
    "report",
    "arena",
    "season",
    "train",
    "integrations",
    "loop",
    "cli",
]
# Inside the arena, lowest first: the shared arena records and database, authentication, the gate's
# state (code store, ledger, config, the Arena), the job layer, the competition, the participants'
# programs (client, validator, tryout), the operator's view, the HTTP service.
ARENA_ORDER = [
    "arena.errors",
    "arena.db",
    "arena.schema",
    "arena.tables",
    "arena.migrations",
    "arena.models",
    "arena.canonical",
    "arena.auth",
    "arena.codestore",
    "arena.ledger",
    "arena.config",
    "arena.arena",
    "arena",  # the package's __init__ (re-exports of the gate's state)
    "arena.jobs",
    "arena.competition",
    "arena.participants",
    "arena.overview",
    "arena.api",
]
ROOT = Path(shoparena.__file__).parent


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every shoparena module this file imports, anywhere in it (dotted, without `shoparena.`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("shoparena.")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "shoparena":
                found |= {f"shoparena.{alias.name}" for alias in node.names}
            elif node.module.startswith("shoparena."):
                # `from shoparena.x import y`: the module x.y when y is one, else x itself
                folder = ROOT / Path(*node.module.split(".")[1:])
                for alias in node.names:
                    is_module = (folder / alias.name).is_dir() or (folder / f"{alias.name}.py").exists()
                    found.add(f"{node.module}.{alias.name}" if is_module else node.module)
    return {name.removeprefix("shoparena.") for name in found}


def _unit(module: str, order: list[str]) -> str | None:
    """The longest unit of `order` that `module` is or lies in."""
    best = None
    for unit in order:
        if (module == unit or module.startswith(unit + ".")) and (best is None or len(unit) > len(best)):
            best = unit
    return best


def _violations(order: list[str], within: str | None = None) -> list[str]:
    rank = {unit: i for i, unit in enumerate(order)}
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        module = _module_of(path)
        if within and not (module == within or module.startswith(within + ".")):
            continue
        unit = _unit(module, order)
        if unit is None:
            continue  # top-level modules (demo, tour) sit above every stage
        for imported in _imports(path):
            other = _unit(imported, order)
            if other is not None and rank[other] > rank[unit]:
                found.append(f"{module} ({unit}) imports shoparena.{imported} ({other})")
    return found


def test_no_stage_imports_a_higher_stage():
    assert _violations(ORDER) == []


def test_inside_the_arena_no_part_imports_a_higher_part():
    assert _violations(ARENA_ORDER, within="arena") == []


def test_every_arena_module_has_a_place_in_the_order():
    modules = {_module_of(p) for p in (ROOT / "arena").rglob("*.py")}
    assert {m for m in modules if _unit(m, ARENA_ORDER) is None} == set()


def test_the_layering_check_sees_function_level_imports(tmp_path):
    source = tmp_path / "probe.py"
    source.write_text(
        "def f():\n    from shoparena.cli import app\n    import shoparena.loop.runner as r\n"
        "    from shoparena import train\n",
        encoding="utf-8",
    )
    assert _imports(source) == {"cli", "loop.runner", "train"}


def test_records_import_no_stage():
    """The shared records sit below every stage: they may import each other and nothing else of ours."""
    imports = {
        f"{path.name} imports shoparena.{name}"
        for path in (ROOT / "records").glob("*.py")
        for name in _imports(path)
        if not name.startswith("records")
    }
    assert imports == set()


def test_every_stage_package_exists():
    assert all((ROOT / Path(*name.split(".")) / "__init__.py").exists() for name in ORDER)


def _import_graph() -> dict[str, set[str]]:
    """module → the modules of ours it imports (a package's `__init__` is the package's name)."""
    modules = {_module_of(path): path for path in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = set()
        for imported in _imports(path):
            # `from shoparena.a.b import name`: the module a.b (or the package a.b's __init__)
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != module:
                targets.add(imported)
        graph[module] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_modules_import_each_other_in_a_circle():
    """Not even through a function-level import: a circle means two modules are one in disguise."""
    assert _cycles(_import_graph()) == []


def test_the_circle_check_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
