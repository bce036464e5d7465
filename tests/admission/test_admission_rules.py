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
    assert too_big.rule == "format.size" and (too_big.line, too_big.col) == (
        1,
        None,
    )  # the whole file: line 1


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
    assert found[-1].line == 21 and "10 more" in found[-1].message  # the first finding it leaves out
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


# -- issue 22: the doors that ran code or reached state without naming anything banned ------------------
@pytest.mark.parametrize(
    ("source", "rule"),
    [
        # evaluated annotations
        ("import functools\nH = ''.join(['in', 't'])\n@functools.singledispatch\ndef f(x):\n    return x\n"
         "@f.register\ndef _(x: H):\n    return x", "security.evaluated_annotation"),
        ("import dataclasses\n@dataclasses.dataclass\nclass R:\n    name: 'str'", "security.evaluated_annotation"),
        ("def f(x: 'print(1) or int'):\n    return x", "security.evaluated_annotation"),
        ("def f(x: len('a')):\n    return x", "security.evaluated_annotation"),
        ("class C:\n    H = 'int'\ndef f(x: C.H):\n    return x", "security.evaluated_annotation"),
        ("def f(x: list['H']):\n    return x\nH = 'i' + 'nt'", "security.evaluated_annotation"),
        ("import typing\nx = typing.get_type_hints", "security.evaluated_annotation"),
        ("from typing import ForwardRef", "security.evaluated_annotation"),
        ("import dataclasses\nR = dataclasses.make_dataclass('R', [('a', 'int')])", "security.evaluated_annotation"),
        # runtime hooks
        ("class P:\n    pass\nP.__match_args__ = ('x',)", "security.runtime_dunder"),
        ("class P:\n    __match_args__ = tuple(['x'])", "security.runtime_dunder"),
        ("class P:\n    def __init_subclass__(cls):\n        pass", "security.runtime_dunder"),
        ("class P:\n    @classmethod\n    def __subclasshook__(cls, o):\n        return True", "security.runtime_dunder"),
        ("class P:\n    def __class_getitem__(cls, item):\n        return item", "security.runtime_dunder"),
        ("class P:\n    def __set_name__(self, owner, name):\n        pass", "security.runtime_dunder"),
        ("class P:\n    __instancecheck__ = print", "security.runtime_dunder"),
        ("class P:\n    pass\nsetattr(P, '__match_args__', ('x',))", "security.runtime_dunder"),
        # file writes through stdlib writers
        ("import xml.etree.ElementTree as ET\nET.ElementTree(ET.Element('a')).write('/tmp/x')", "security.file_write"),
        ("from xml.etree.ElementTree import parse", "security.file_write"),
        ("from pathlib import Path\nPath('/tmp/a').replace('/tmp/b')", "security.file_write"),
        ("from pathlib import Path\np = Path('/tmp/a')\np.rename('/tmp/b')", "security.file_write"),
        ("from pathlib import Path\nPath.replace(Path('/tmp/a'), '/tmp/b')", "security.file_write"),
        ("def f(p, q):\n    p.replace(q)", "security.file_write"),
        ("def f(p, q):\n    p.copy(q)", "security.file_write"),
        ("import tempfile", "security.file_write"),
        ("import zipfile", "security.file_write"),
        ("import tarfile", "security.file_write"),
        ("import sqlite3", "security.file_write"),
        ("import dbm", "security.file_write"),
        ("import shelve", "security.file_write"),
        # frames and locals
        ("import traceback\nx = traceback.walk_stack(None)", "security.frame_access"),
        ("import traceback\nx = traceback.StackSummary", "security.frame_access"),
        ("from traceback import extract_stack", "security.frame_access"),
        ("import traceback as t\nx = t.TracebackException", "security.frame_access"),
        ("import inspect", "security.frame_access"),
        ("import faulthandler", "security.frame_access"),
        ("import tracemalloc", "security.frame_access"),
        ("import logging\nx = logging.currentframe()", "security.frame_access"),
        # format templates that are not literals
        ("def f(t):\n    return t.format(f)", "security.dynamic_format"),
        ("def f(t):\n    return ('{0.' + t + '}').format(f)", "security.dynamic_format"),
        ("def f(t):\n    return str.format(t, f)", "security.dynamic_format"),
        ("def f(d):\n    return d['t'].format_map({'f': f})", "security.dynamic_format"),
        ("def f(t):\n    m = t.format\n    return m(f)", "security.dynamic_format"),
        ("import logging\ndef f(t):\n    return logging.Formatter(t, style='{')", "security.dynamic_format"),
        ("import logging\ndef f(t):\n    logging.basicConfig(format=t, style='{')", "security.dynamic_format"),
        # process pools
        ("import concurrent.futures\nx = concurrent.futures.ProcessPoolExecutor", "security.process_pool"),
        ("from concurrent.futures import ProcessPoolExecutor", "security.process_pool"),
        ("from concurrent import futures\nx = futures.ProcessPoolExecutor()", "security.process_pool"),
        ("import concurrent.futures.process", "security.process_pool"),
        # setattr/delattr with computed names, monkeypatched modules
        ("import json\nsetattr(json, 'dumps', print)", "security.computed_setattr"),
        ("import json\njson.dumps = print", "security.computed_setattr"),
        ("import json\ndel json.dumps", "security.computed_setattr"),
        ("class B:\n    x = 1\nsetattr(B, 'x' + '', 2)", "security.computed_setattr"),
        ("N = 'it' + 'em'\nclass B:\n    item = 1\ndelattr(B, N)", "security.computed_setattr"),
    ],
)  # fmt: skip
def test_issue_22_constructs_are_rejected_with_their_own_rule(source, rule):
    found = check(source + MAIN)
    assert rule in {v.rule for v in found}, found
    assert all(v.line is not None for v in found)


@pytest.mark.parametrize(
    "source",
    [
        # what ordinary agents (and the subnet's template) do with the modules these rules touch
        "import json, re, time, uuid, logging\nlog = logging.getLogger(__name__)\n"
        "x = json.dumps({'id': str(uuid.uuid4()), 't': time.time()})\ny = re.sub(r'\\s+', ' ', x)",
        "import dataclasses\nfrom typing import Any, Optional\n@dataclasses.dataclass\nclass Row:\n"
        "    name: str\n    price: Optional[float] = None\n    extra: dict[str, Any] = dataclasses.field(default_factory=dict)",
        "from typing import TYPE_CHECKING, Callable, Literal, TypeVar\nT = TypeVar('T')\nMode = Literal['a', 'b']\n"
        "Json = dict[str, 'int | None'] if False else dict\ndef f(x: T, m: Mode, cb: Callable[[int], str] | None = None) -> list[T]:\n    return [x]",
        "class Node:\n    def child(self) -> 'Node':\n        return self\n    def kids(self) -> list['Node']:\n        return []",
        "from __future__ import annotations\nclass Node:\n    parent: Node | None = None\n    def f(self, other: Node) -> Node:\n        return other",
        "import traceback\ndef f():\n    try:\n        pass\n    except Exception as exc:\n        return traceback.format_exc() + ''.join(traceback.format_exception(exc))",
        "PROMPT = 'Find {query} under {budget}'\ndef f(q):\n    return PROMPT.format(query=q, budget=3)",
        "def f(q, short):\n    template = 'a {q}' if short else 'b {q}'\n    return template.format(q=q)",
        "def f(q):\n    template = 'Query: {q}'\n    template2 = template + ' (page {p})'\n    return template2.format(q=q, p=1)",
        "def f(q):\n    return '{}-{}'.format(q, 1) + q.replace(' ', '+').strip()",
        "import logging\nlogging.basicConfig(level=logging.INFO, format='%(asctime)s %(message)s')\n"
        "h = logging.StreamHandler()\nh.setFormatter(logging.Formatter('{message}', style='{'))",
        "ROW = '{title}: {price}'\nrender = ROW.format\nx = [render(title='a', price=1)]",
        "import copy\ndef f(d):\n    return copy.copy(d), d.copy(), copy.deepcopy(d)",
        "import dataclasses\n@dataclasses.dataclass\nclass R:\n    a: int\nr = dataclasses.replace(R(1), a=2)",
        "class P:\n    __match_args__ = ('x', 'y')\n    def __init__(self):\n        self.x = self.y = 0",
        "class Box:\n    pass\nb = Box()\nsetattr(b, 'x', 1)\nsetattr(Box, 'y', 2)",
        "from concurrent.futures import ThreadPoolExecutor, as_completed\nwith ThreadPoolExecutor(4) as pool:\n    pass",
        "import xml.etree.ElementTree as ET\nroot = ET.fromstring('<a><b/></a>')\nx = ET.tostring(root)",
        "ROWS = ['blue denim jacket', 'wireless earbuds', 'stainless steel', 'coffee grinder']",
        "KEYS = ['tool_call', 'tool_calls', 'tool_call_id', 'assistant', 'completion']",
        "DATES = ['2024-01-15', '2024-02-15', '2024-03-15', '2024-04-15', '2024-05-15']",
        "WORDS = ['headphone', 'sweatshirt', 'microwave', 'toothbrush', 'dishwasher']",
    ],
)  # fmt: skip
def test_ordinary_code_near_the_issue_22_rules_is_admitted(source):
    assert check(source + MAIN) == []


@pytest.mark.parametrize(
    "table",
    [
        "{812: 'fadhgbcaed', 455: 'ghbcdaefjh', 903: 'bcdjjahgfe', 117: 'jjhgfedcab'}",
        "['FADHGBCAED', 'GHBCDAEFJH', 'BCDJJAHGFE', 'JJHGFEDCAB']",
        "(b'ojiolbmmcn', b'mhbkcijnlo', b'iilnkhmcbo', b'hckmnljiob')",
        "'fadhgbcaed,ghbcdaefjh,bcdjjahgfe,jjhgfedcab'",
        "'fadhgbcaedghbcdaefjhbcdjjahgfejjhgfedcab'",
        "['!#$%&()*+,', '#$%&()*!,+', '$%&!#()*,+', '%&!#$()*+,']",
        # each id shifted by its own key: every entry within ten consecutive characters
        "['fadhgbcaed', 'hcfjidecgf', 'jcfjidecgf', 'lcfjidecgf']",
    ],
)
def test_an_id_table_under_a_substitution_is_an_answer_table_whatever_the_key(table):
    source = f"TABLE = {table}\n\ndef agent_main(problem_data):\n    key = len(problem_data)\n    return key, TABLE\n"
    found = check(source)
    assert [(v.rule, v.line) for v in found if v.rule == "integrity.answer_table"] == [
        ("integrity.answer_table", 1)
    ]


def test_an_id_table_spread_over_constants_is_an_answer_table():
    source = "A = 'fadhgbcaed'\nB = 'ghbcdaefjh'\nC = 'bcdjjahgfe'\nD = 'jjhgfedcab'\n" + MAIN
    assert "integrity.answer_table" in rules(source)


def test_a_hex_blob_table_names_its_rule_and_line_for_every_finding():
    rows = "".join(f"    '{(str(3141592653 + 7919 * i) * 3).encode().hex()}',\n" for i in range(40))
    found = check(f"TABLE = [\n{rows}]\n" + MAIN)
    assert found and all(v.line is not None and v.rule in RULES for v in found)
    [summary] = [v for v in found if "more findings" in v.message]
    assert summary.rule == "integrity.encoded_blob" and summary.line == 22  # the first one left out


def test_a_decode_loop_over_literal_rows_is_tried_with_every_key():
    # one row: no table shape; the key exists only at run time; the loop gives an id under key 9 + 49
    row = "".join(chr(ord(d) + 58 + i) for i, d in enumerate("5035687794"))
    source = (
        f"ROW = {row!r}\n\ndef agent_main(problem_data):\n    key = len(problem_data) + 49\n"
        "    return ''.join(chr(ord(c) - key - i) for i, c in enumerate(ROW))\n"
    )
    [found] = [v for v in check(source) if v.rule == "integrity.answer_table"]
    assert "5035687794" in found.message and found.line == 5


def test_probing_keys_spends_no_budget_and_reports_nothing_ordinary():
    source = (
        "WORDS = ['wireless earbuds', 'coffee grinder']\n\ndef agent_main(problem_data):\n"
        "    shift = len(problem_data)\n"
        "    return [''.join(chr((ord(c) + shift) % 128) for c in w) for w in WORDS]\n"
    )
    assert check(source) == []
