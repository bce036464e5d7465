"""Admission's rules one by one: what each rejects, what ordinary code it must let through, and the shape
of what it reports (locations, kinds, order, the fail-closed guard)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from shoparena import admission
from shoparena.admission import MAX_SOURCE_BYTES, RULES, Violation, analyse, check_submission
from shoparena.admission import checker as checker_module


def check(source: str) -> list[Violation]:
    return analyse(textwrap.dedent(source).encode())


def rules(source: str) -> set[str]:
    return {v.rule for v in check(source)}


REPO = Path(__file__).resolve().parents[2]
MAIN = "\n\ndef agent_main(problem_data):\n    return []\n"


# -- format -------------------------------------------------------------------------------------------
def test_an_ordinary_file_is_admitted_and_the_interface_is_the_servers():
    assert check_submission(b"import json\n" + MAIN.encode()) == []
    found = check_submission(b"import subprocess\n" + MAIN.encode())
    assert [v.model_dump() for v in found] == [
        {
            "rule": "security.banned_import",
            "kind": "security",
            "line": 1,
            "col": 1,
            "message": "import subprocess: module subprocess is banned",
        }
    ]


def test_size_limit_is_one_mebibyte():
    body = MAIN.encode()
    padded = body + b"#" * (MAX_SOURCE_BYTES - len(body))
    assert len(padded) == MAX_SOURCE_BYTES
    assert "format.size" not in {v.rule for v in analyse(padded)}
    [too_big] = analyse(padded + b"#")
    assert too_big.rule == "format.size" and too_big.line is None


def test_encoding_errors_point_at_the_bad_byte():
    [found] = analyse(b"# fine\nx = 'caf\xe9'\n" + MAIN.encode())
    assert (found.rule, found.line, found.col) == ("format.encoding", 2, 9)


@pytest.mark.parametrize("cookie", ["# -*- coding: latin-1 -*-", "# vim: set fileencoding=utf-16 :"])
def test_a_coding_cookie_other_than_utf8_is_refused(cookie):
    assert rules(cookie + MAIN) == {"format.encoding"}


@pytest.mark.parametrize("cookie", ["# -*- coding: utf-8 -*-", "#!/usr/bin/env python\n# coding=utf8"])
def test_a_utf8_cookie_and_a_bom_are_fine(cookie):
    assert rules(cookie + MAIN) == set()
    assert analyse(b"\xef\xbb\xbf" + MAIN.encode()) == []


def test_syntax_errors_carry_their_position():
    [found] = check("def agent_main(problem_data):\n    return [\n")
    assert found.rule == "format.syntax" and found.line is not None
    assert rules("x = 1\0\n" + MAIN) == {"format.syntax"}


@pytest.mark.parametrize(
    ("signature", "admitted"),
    [
        ("def agent_main(problem_data):", True),
        ("def agent_main(problem_data, retries=3):", True),
        ("def agent_main(*args):", True),
        ("def agent_main(problem_data, /, *, verbose=False):", True),
        ("def agent_main():", False),
        ("def agent_main(a, b):", False),
        ("def agent_main(problem_data, *, strict):", False),
        ("async def agent_main(problem_data):", False),
    ],
)
def test_agent_main_must_take_one_positional_argument(signature, admitted):
    assert (rules(f"{signature}\n    return []\n") == set()) is admitted


def test_agent_main_must_be_defined_at_module_level():
    assert rules("class A:\n    def agent_main(self, problem_data):\n        return []\n") == {
        "format.agent_main"
    }
    assert rules("agent_main = lambda problem_data: []\n") == {"format.agent_main"}


# -- security -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "allowed",
    [
        "import json, re, math, random, time, typing, dataclasses, collections, itertools, functools, heapq, string",
        "import os.path",
        "from os import path, getenv, environ",
        "import os\nx = os.path.join(os.getenv('HOME', '.'), 'a'), os.environ.get('A'), os.sep",
        "from urllib.parse import quote, urlencode",
        "import urllib.parse\nx = urllib.parse.quote('a b')",
        "import miner_sdk\nx = miner_sdk.call_tool",
        "from concurrent.futures import ThreadPoolExecutor",
        "import sys\nprint('x', file=sys.stderr)\nsys.stdout.flush()",
        "import io\nbuffer = io.StringIO()",
        "import logging\nlogging.basicConfig(level=logging.INFO)",
        "import ast\nx = ast.literal_eval('[1, 2]')",
        "import hashlib, statistics, difflib, textwrap, unicodedata, enum, decimal, html, uuid, bisect",
    ],
)
def test_ordinary_imports_and_members_are_admitted(allowed):
    assert rules(allowed + MAIN) == set()


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        ("import os\nos.system('id')", "security.banned_member"),
        ("import os\nos.listdir('/')", "security.banned_member"),
        ("import os\nos.environ.copy(); os.kill(1, 9)", "security.banned_member"),
        ("from os import popen", "security.banned_member"),
        ("import sys\nsys.path.insert(0, '/tmp')", "security.banned_member"),
        ("import sys\nx = sys.exc_info()[2]", "security.banned_member"),
        ("import io\nio.FileIO('/tmp/x', 'w')", "security.banned_member"),
        ("import urllib\nurllib.request", "security.banned_member"),
        ("import xml.sax", "security.banned_import"),
        ("from logging import handlers", "security.banned_import"),
        ("import zlib", "security.banned_import"),
        ("import base64", "security.banned_import"),
        ("import codecs", "security.banned_import"),
        ("import binascii", "security.banned_import"),
        ("import shutil", "security.banned_import"),
        ("import cffi", "security.banned_import"),
        ("import multiprocessing", "security.banned_import"),
        ("import runpy", "security.banned_import"),
        ("import code", "security.banned_import"),
        ("import imp", "security.banned_import"),
        ("import builtins", "security.banned_import"),
        ("import _thread", "security.banned_import"),
        ("from . import x", "security.relative_import"),
    ],
)
def test_banned_imports_and_members(source, rule):
    assert rule in rules(source + MAIN)


@pytest.mark.parametrize(
    "source",
    [
        "class A(dict):\n    def __init__(self):\n        super().__init__()\n        self.kind = type(self).__name__",
        "class A:\n    __slots__ = ('x',)\n    def __repr__(self):\n        return f'{type(self).__name__}({self.x!r})'",
        "if __name__ == '__main__':\n    print(__doc__)",
        "x = getattr(dict, 'fromkeys')",
        "NAME = 'keys'\nx = getattr({}, NAME)()",
        "x = hasattr(object(), 'items')",
        "x = '{0} costs {1:.2f} ({name})'.format('a', 2.5, name='b')",
        "def f(p: 'dict[str, object]') -> 'list[int]':\n    return []",
        "with open('/tmp/in.txt' if False else __name__ + '.txt', encoding='utf-8') as h:\n    pass",
        "def read(path):\n    with open(path, 'r', encoding='utf-8') as handle:\n        return handle.read()",
        "from pathlib import Path\nx = Path('/tmp/in.json').read_text() if False else None",
        "import operator\nx = operator.attrgetter('title', 'price')",
    ],
)
def test_ordinary_python_is_not_mistaken_for_an_escape(source):
    assert rules(source + MAIN) == set()


def test_open_modes():
    assert "security.open_write" in rules("open('/tmp/x', 'a')" + MAIN)
    assert "security.open_write" in rules("open('/tmp/x', mode='xb')" + MAIN)
    assert "security.open_write" in rules("MODE = 'w'\nopen('/tmp/x', MODE)" + MAIN)
    assert "security.open_write" in rules("open('/tmp/x', *['w'])" + MAIN)
    assert "security.open_write" not in rules("MODE = 'rb'\nopen('/tmp/x', MODE)" + MAIN)


def test_a_constant_attribute_name_is_read_as_the_attribute_it_names():
    assert rules("import os\ngetattr(os.path, 'join')" + MAIN) == set()
    assert "security.banned_member" in rules("import sys\nx = sys\ny = getattr(x, 'modules')" + MAIN)
    assert "security.dunder_attribute" in rules("NAME = '__glob' + 'als__'\nx = getattr(len, NAME)" + MAIN)


def test_unicode_names_are_checked_as_python_normalises_them():
    assert "security.banned_call" in rules("ｅｖａｌ('1')" + MAIN)
    assert "security.dunder_attribute" in rules("x = ().__ｃｌａｓｓ__" + MAIN)
    assert "security.dunder_attribute" in rules("x = getattr((), '__ｃｌａｓｓ__')" + MAIN)


def test_internal_names_inside_assembled_strings_are_found():
    found = check("T = ''.join(['{0._', '_class_', '_}'])\nx = T.format(1)" + MAIN)
    assert "security.internal_name_string" in {v.rule for v in found}


# -- integrity ------------------------------------------------------------------------------------------
def test_a_few_example_ids_are_allowed_more_are_a_table():
    three = "PROMPT = 'e.g. 5035687794, 4410867766 or 2155232803'"
    assert rules(three + MAIN) == set()
    four = three + "\nMORE = '3829481471'"
    found = [v for v in check(four + MAIN) if v.rule == "integrity.product_id_literal"]
    assert len(found) == 1 and "4 distinct" in found[0].message


def test_ids_in_comments_count_too():
    comments = "\n".join(f"# {pid}" for pid in ("5035687794", "4410867766", "2155232803", "3829481471"))
    assert "integrity.product_id_literal" in rules(comments + MAIN)


@pytest.mark.parametrize(
    "number",
    ["123456789", "1234567890", "1111111111", "1000000007", "2147483647", "4294967296", "1700000000"],
)
def test_placeholders_round_numbers_and_powers_of_two_are_not_ids(number):
    source = "\n".join(f"X{i} = {number}" for i in range(6)) + f"\nY = '{number}'\nZ = str({number} + 0)"
    assert rules(source + MAIN) == set()


def test_formatting_a_literal_example_id_is_not_assembling_one():
    source = "EXAMPLE = '5035687794'\nPROMPT = f'Recommend like this: product_ids={EXAMPLE}.'"
    assert rules(source + MAIN) == set()


def test_a_synonym_table_prices_and_a_long_prompt_are_not_answer_tables():
    source = """
    SYNONYMS = {"earbuds": ["earphones", "tws"], "sofa": ["couch"], "laptop": ["notebook"],
                "phone": ["smartphone"], "mug": ["cup"], "bike": ["bicycle"], "pants": ["trousers"]}
    PRICES = {"cheap": 500, "mid": 2500, "premium": 15000, "luxury": 99999, "max": 1_000_000}
    RATES = [56.1, 0.018, 1.0, 3.75, 12.5, 7.25]
    PROMPT = "You are a careful shopping assistant. " * 200
    STEPS = {"search": "Search with the most distinctive words first and use the price filter.",
             "inspect": "Read the best hits with view_product_information before choosing one.",
             "verify": "Check the voucher arithmetic with calculate_voucher when there is a budget.",
             "finish": "Recommend the chosen ids in the order the customer listed the items.",
             "stop": "Terminate once the recommendation is made, with success or failure."}
    """
    assert rules(textwrap.dedent(source) + MAIN) == set()


def test_evaluation_follows_the_files_own_helpers_but_not_unknown_input():
    helper = "def decode(s):\n    return ''.join(chr(ord(c) - 49) for c in s)\n"
    assert "integrity.assembled_id" in rules(helper + "X = decode('fadfgihhje')" + MAIN)
    assert (
        rules(helper + "def agent_main(problem_data):\n    return decode(problem_data['query'])\n") == set()
    )


def test_a_branch_that_may_not_run_does_not_make_a_value_known():
    source = """
    def agent_main(problem_data):
        head = "50356"
        if problem_data["query"]:
            head = problem_data["query"][:5]
        return head + "87794"
    """
    assert rules(source) == set()


def test_padding_the_file_to_exhaust_the_analysis_is_reported():
    loops = "\n".join(f"for i{n} in range(4000):\n    t = i{n} % 7" for n in range(60))
    assert "integrity.unanalysable" in rules(loops + MAIN)


# -- what is reported -----------------------------------------------------------------------------------
def test_columns_count_characters_not_bytes():
    [found] = check("x = 'éé'; import subprocess" + MAIN)
    assert (found.line, found.col) == (1, 11)


def test_findings_are_ordered_deduplicated_and_capped():
    many = "\n".join(f"import subprocess as s{i}" for i in range(30))
    found = check(many + MAIN)
    assert [v.line for v in found[:-1]] == list(range(1, 21))
    assert found[-1].line is None and "10 more" in found[-1].message
    assert check(many + MAIN) == found


def test_every_rule_has_a_kind_and_summary():
    assert all(rule.summary and rule.id.startswith(rule.kind + ".") for rule in RULES.values())
    assert admission.Violation is Violation


def test_the_checker_fails_closed(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("bug")

    monkeypatch.setattr(checker_module, "collect", broken)
    [found] = check_submission(MAIN.encode())
    assert found.rule == "format.unanalysable" and found.kind == "format"
    with pytest.raises(RuntimeError):
        analyse(MAIN.encode())


def test_text_instead_of_bytes_is_a_programming_error():
    with pytest.raises(TypeError):
        check_submission(MAIN)  # type: ignore[arg-type]


def test_the_rules_documentation_lists_every_rule():
    documented = (REPO / "docs" / "admission.md").read_text(encoding="utf-8")
    missing = [rule for rule in RULES if f"| `{rule}` | {RULES[rule].kind} |" not in documented]
    assert missing == []
