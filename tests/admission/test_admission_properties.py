"""Admission on arbitrary input: it never crashes (the unguarded `analyse` is used, so a checker bug
fails the test instead of hiding behind the fail-closed guard), always answers with catalogued
violations, and gives the same answer for the same bytes."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.admission import RULES, Violation, analyse
from tests.admission.corpus import ADVERSARIAL, BENIGN, CORPUS


def _statements() -> list[str]:
    """Every top-level statement of both corpora, as source: material for programs that parse."""
    out: list[str] = []
    for source in [*(path.read_bytes().decode("utf-8", "replace") for path in ADVERSARIAL), *BENIGN.values()]:
        try:
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError):
            continue
        out += [ast.get_source_segment(source, node) or "" for node in tree.body]
    return [s for s in out if s]


STATEMENTS = _statements()
FRAGMENTS = [
    "x = 1", "import os", "getattr(x, y)", "''.join", "chr(53)", "'5035687794'[::-1]", "0x12C28B772",
    "for i in range(10):", "    y = i", "while True:", "    break", "if x:", "else:", "    pass",
    "def f(a, *b, **c):", "    return a", "lambda: 0", "class A:", "[c for c in 'abc']", "{1: 2}",
    "f'{x!r:>10}'", "'%s' % x", "b'\\x00\\xff'", "x.__class__", "try:", "except Exception:",
    "with open('a') as h:", "match x:", "    case [a, *b]:", "async def g():", "    await h", "yield",
    "global z", "del x", "x += 'a'", "x, *y = 1, 2, 3", "(a := 5)", "assert x, 'm'", "raise",
]  # fmt: skip
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_well_formed(violations: list[Violation]) -> None:
    assert isinstance(violations, list)
    for item in violations:
        assert item.rule in RULES and item.kind == RULES[item.rule].kind
        assert item.line is not None and item.line >= 1  # every finding names a line (issue 22)
        assert item.col is None or item.col >= 1
    assert all(v.rule != "format.unanalysable" for v in violations)


@SETTINGS
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_never_crash_and_are_deterministic(data):
    first = analyse(data)
    assert_well_formed(first)
    assert analyse(data) == first


@SETTINGS
@given(st.text(max_size=2000))
def test_arbitrary_text_never_crashes_and_is_deterministic(text):
    data = text.encode("utf-8", "surrogatepass")
    first = analyse(data)
    assert_well_formed(first)
    assert analyse(data) == first


@SETTINGS
@given(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=12))
def test_programs_built_from_corpus_statements_never_crash(statements):
    """Mostly valid programs, so the security walk and the evaluator really run on them."""
    data = "\n\n".join(statements).encode()
    first = analyse(data)
    assert_well_formed(first)
    assert analyse(data) == first


@SETTINGS
@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=3), st.sampled_from(FRAGMENTS) | st.text(max_size=12)),
        max_size=40,
    )
)
def test_indented_fragments_never_crash(lines):
    data = "\n".join("    " * depth + text for depth, text in lines).encode("utf-8", "surrogatepass")
    first = analyse(data)
    assert_well_formed(first)
    assert analyse(data) == first


@SETTINGS
@given(
    st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=6), st.integers(min_value=0, max_value=2**31)
)
def test_the_verdict_does_not_depend_on_what_was_checked_before(statements, salt):
    data = "\n\n".join(statements).encode()
    first = analyse(data)
    analyse(f"X = {salt}\n".encode() + data)
    assert analyse(data) == first


_VERDICTS = """
import json, sys
from pathlib import Path
from shoparena.admission import analyse
paths = sorted(Path(sys.argv[1]).rglob("*.py"))
print(json.dumps({p.name: [v.model_dump() for v in analyse(p.read_bytes())] for p in paths}))
"""


def test_the_verdicts_do_not_depend_on_the_hash_seed():
    """Two interpreters with different string hashing give byte-identical verdicts on both corpora
    (set iteration order must never reach a finding)."""
    outputs = []
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _VERDICTS, str(CORPUS)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
