"""Data flows one way: a stage never imports a stage above it (docs/architecture.md)."""

from __future__ import annotations

import re
from pathlib import Path

import shoparena

ORDER = [
    "records",
    "catalog",
    "index",
    "problems",
    "harness",
    "sandbox",
    "scoring",
    "agents",
    "judge",
    "store",
    "corpus",
    "report",
    "arena",
    "train",
    "loop",
    "cli",
]
IMPORT = re.compile(r"^\s*(?:from|import) shoparena\.(\w+)", re.M)


def test_no_stage_imports_a_higher_stage():
    root = Path(shoparena.__file__).parent
    rank = {name: i for i, name in enumerate(ORDER)}
    violations = []
    for path in root.rglob("*.py"):
        stage = path.relative_to(root).parts[0]
        if stage not in rank:
            continue  # top-level modules (demo) sit above every stage
        for match in IMPORT.finditer(path.read_text(encoding="utf-8")):
            other = match.group(1)
            if other in rank and rank[other] > rank[stage]:
                violations.append(f"{path.relative_to(root)} imports shoparena.{other}")
    assert violations == []


def test_records_import_no_stage():
    """The shared records sit below every stage: they may import each other and nothing else of ours."""
    root = Path(shoparena.__file__).parent / "records"
    imports = {
        f"{path.name} imports shoparena.{match.group(1)}"
        for path in root.glob("*.py")
        for match in IMPORT.finditer(path.read_text(encoding="utf-8"))
        if match.group(1) != "records"
    }
    assert imports == set()


def test_every_stage_package_exists():
    root = Path(shoparena.__file__).parent
    assert all((root / name / "__init__.py").exists() for name in ORDER)
