"""Package re-exports that import their module on first use.

A package's `__init__` that re-exports names from its modules (`from shoparena.scoring.metrics import
...`) imports all of them, and with them numpy, SQLAlchemy or torch, for whoever imports any one module
of the package, even `shoparena --help`. `lazy_exports` gives such a package a module `__getattr__`
(PEP 562) that imports a name's module when the name is first asked for; the package keeps the same
imports under `if TYPE_CHECKING:` for type checkers and tests/test_layering.py.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def lazy_exports(
    package: str, exports: dict[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """(`__getattr__`, `__dir__`) for `package`, whose `exports` maps each re-exported name to its module."""

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
