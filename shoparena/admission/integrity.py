"""The integrity rules: no hard-coded, encoded or obfuscated answers.

What an answer looks like: product ids are 9–10 digit strings in the upstream data and in the
synthetic catalogue (`product_id_for`: 10 digits), shop ids 4–7 digits. So a "product-id-like" value
is a run of 9–15 digits that is not a placeholder (`123456789`, `1111111111`), a round number
(`1000000007`: mostly zeros) or a power of two give or take a little (`2147483647`).

- Literals: a few ids are allowed (a prompt's worked example, a test value); more are a table.
- Assembled values: the evaluator (`evaluator.py`) runs the file's constant computations; an id that
  appears only as the result of an operation — and nowhere as a literal — was hidden on purpose, so it
  has no allowance.
- Shape: encoded blobs (base64, hex, long digit strings, binary bytes), character-code lists, tables
  keyed by query text or hashes, tables of digit strings.
A long prompt, a synonym table or a price constant has none of these shapes.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Callable
from itertools import pairwise
from typing import Any

from shoparena.admission.ciphers import TABLE_MIN, candidate, cipher_table, packed_ids, small_alphabet_group
from shoparena.admission.syntax import Tree

ID_ALLOWANCE = 3
"""Distinct product-id-like literals a file may contain (examples in a prompt, a fixture value)."""
TABLE_MIN_ENTRIES = 5
DIGIT_TABLE_MIN = 6
CHAR_CODE_MIN = 4

_ASCII_RUN = re.compile(r"[0-9][0-9]{8,}")
_UNICODE_RUN = re.compile(r"\d{9,}")
"""Runs of 9+ digits. Non-ASCII text also gets Unicode digits (int() reads '５０３…' as 503…)."""
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/_\-]{24,}={0,2}")
"""Candidate blob tokens: 24+ characters of the base64 alphabets, matched from a token's start only."""
_HEX_ONLY = re.compile(r"[0-9a-fA-F]+")
Report = Callable[[str, str, ast.AST], None]


def is_placeholder(digits: str) -> bool:
    """Digit strings no catalogue assigns: repeats, counting runs, round numbers, powers of two ± 16."""
    digits = digits.lstrip("0") or "0"
    if len(set(digits)) <= 2 or digits.count("0") * 2 > len(digits):
        return True
    steps = {(int(b) - int(a)) % 10 for a, b in pairwise(digits)}
    if steps in ({1}, {9}):  # 1234567890…, 9876543210… (counting runs, wrapping at 9)
        return True
    value = int(digits)
    power = 1 << max(value.bit_length() - 1, 0)
    return min(abs(value - power), abs(value - 2 * power)) <= 16


def digit_runs(text: str) -> list[tuple[str, int]]:
    """(run as ASCII digits, offset) for every run of 9+ digits not preceded by a decimal point (the
    fraction of a decimal number is not an id), placeholders dropped."""
    pattern = _ASCII_RUN if text.isascii() else _UNICODE_RUN
    runs = []
    for match in pattern.finditer(text):
        start = match.start()
        if start and text[start - 1] == ".":
            continue
        run = match.group()
        if not run.isascii():
            run = "".join(str(unicodedata.digit(char)) for char in run)
        if not is_placeholder(run):
            runs.append((run, start))
    return runs


def id_runs(text: str) -> list[str]:
    return [run for run, _ in digit_runs(text) if len(run) <= 15]


def long_digit_runs(text: str) -> list[str]:
    return [run for run, _ in digit_runs(text) if len(run) >= 16]


def _class_changes(token: str) -> float:
    def kind(char: str) -> int:
        return 0 if char.islower() else 1 if char.isupper() else 2 if char.isdigit() else 3

    changes = sum(kind(a) != kind(b) for a, b in pairwise(token))
    return changes / max(len(token) - 1, 1)


def blobs_in(text: str) -> list[tuple[str, int]]:
    """Encoded-looking tokens and where they start: hex of 24+ chars with letters and digits, or base64
    (standard or URL-safe) of 24+ chars whose character classes change as often as random base64 does
    (identifiers and words change rarely)."""
    found: list[tuple[str, int]] = []
    if len(text) < 24:
        return found
    for match in _TOKEN.finditer(text):
        token = match.group()
        body = token[2:] if token[:2] in ("0x", "0X") else token
        if _HEX_ONLY.fullmatch(body):
            if any(c.isdigit() for c in body) and any(c.isalpha() for c in body):
                found.append((token, match.start()))
            continue
        standard, urlsafe = "+" in token or "/" in token, "-" in token or "_" in token
        separators = token.count("-") + token.count("_")
        if (standard and urlsafe) or (separators >= 2 and separators * 12 > len(token)):
            continue  # words joined by separators (model names, slugs, paths), not base64
        classes = sum(
            (
                any(c.islower() for c in token),
                any(c.isupper() for c in token),
                any(c.isdigit() for c in token),
            )
        )
        if classes == 3 and _class_changes(token) >= 0.45:
            found.append((token, match.start()))
    return found


def _blob_message(blob: str) -> str:
    return f"encoded-looking text {blob[:24]}… ({len(blob)} chars)"


class _Position:
    """Where a finding in the raw source text is, shaped like an AST node's location."""

    __slots__ = ("col_offset", "lineno")

    def __init__(self, lineno: int, col_offset: int):
        self.lineno, self.col_offset = lineno, col_offset


def _identifiers(tree: Tree) -> set[str]:
    names: set[str] = set()
    for node in tree.nodes:
        for field in ("id", "attr", "name", "arg"):
            value = getattr(node, field, None)
            if isinstance(value, str):
                names.add(value)
        if isinstance(node, ast.Import | ast.ImportFrom):
            names.update(part for alias in node.names for part in (alias.name, alias.asname or "") if part)
            names.add(getattr(node, "module", None) or "")
    return names


def _binary_bytes(data: bytes) -> bool:
    if len(data) < 16:
        return False
    texty = sum(32 <= b < 127 or b in (9, 10, 13) for b in data)
    return texty < 0.9 * len(data)


def _int_digits(value: int) -> str | None:
    if value.bit_length() > 14_000:  # beyond str()'s digit limit: certainly not a number a person types
        return "9" * 5000
    return str(abs(value))


def _words(text: str) -> int:
    return len(text.split())


def _query_like(text: Any) -> bool:
    return isinstance(text, str) and _words(text) >= 5 and len(text) >= 25


def _hash_like(text: Any) -> bool:
    if isinstance(text, int) and not isinstance(text, bool):
        return len(str(abs(text))) >= 8
    if not isinstance(text, str) or " " in text:
        return False
    return (bool(re.fullmatch(r"[0-9a-fA-F]{8,}", text)) and any(c.isalpha() for c in text)) or (
        text.isdigit() and len(text) >= 8
    )


_SENTENCE_WORDS = frozenset(
    [
        "the",
        "you",
        "your",
        "is",
        "are",
        "be",
        "it",
        "this",
        "that",
        "will",
        "should",
        "can",
        "we",
        "i",
        "please",
        "must",
        "do",
        "not",
        "if",
        "when",
        "then",
        "than",
        "use",
        "find",
        "search",
        "call",
        "recommend",
    ]
)
TITLE_LIST_MIN = 12


def _title_like(text: Any) -> bool:
    """A product title rather than a sentence: 4-30 words, none of the little words sentences need,
    no template or line breaks."""
    if not isinstance(text, str) or len(text) > 200 or any(c in text for c in "{}%\n?"):
        return False
    if text.rstrip().endswith((".", "!", ":", ";", ")")):
        return False  # a message or an explanation, not a listing title
    words = text.lower().split()
    return 4 <= len(words) <= 30 and not (_SENTENCE_WORDS & set(words))


def _const(node: ast.AST) -> Any:
    return node.value if isinstance(node, ast.Constant) else None


class IntegrityCheck:
    def __init__(self, report: Report, is_builtin: Callable[[str], bool], source: str):
        self.report = report
        self.is_builtin = is_builtin
        self.literal_ids: dict[str, list[ast.AST]] = {}
        """id-like digit run → the literal nodes it appears in (first occurrence order)."""
        self.literal_runs: set[str] = set()
        self.source_tokens: set[str] = set()
        """Digit runs and blobs already reported from the raw source text."""
        self.source = source
        self.reported_nodes: set[int] = set()
        self.cipher_candidates: list[tuple[str, ast.AST]] = []
        """Every id-length string assigned to a name (`A = "fadhgbcaed"`), for answer tables spread over
        many constants."""
        self.cipher_nodes: set[int] = set()

    # -- literals ----------------------------------------------------------------------------------------
    def run(self, tree: Tree) -> None:
        self.tree = tree
        self._identifier_set: set[str] | None = None
        self.assigned_constants: set[int] = set()
        """`NAME = "…"` values, noted when the assignment is met (before its value, in pre-order)."""
        self._scan_source(self.source)
        chained: set[int] = set()
        handlers = {
            ast.Constant: self._constant,
            ast.Dict: self._dict_table,
            ast.List: self._sequence,
            ast.Tuple: self._sequence,
            ast.Set: self._sequence,
            ast.Call: self._call,
            ast.ListComp: self._comprehension,
            ast.GeneratorExp: self._comprehension,
            ast.SetComp: self._comprehension,
            ast.Assign: self._assignment,
        }
        for node in tree.nodes:
            kind = type(node)
            if kind is ast.BinOp:
                for side in (node.left, node.right):  # type: ignore[attr-defined]
                    if type(side) is ast.BinOp:
                        chained.add(id(side))
                if id(node) not in chained:
                    self._chr_chain(node)  # type: ignore[arg-type]
                continue
            handler = handlers.get(kind)
            if handler is not None:
                handler(node)
        self._spread_cipher_table()
        distinct = list(self.literal_ids)
        for run in distinct[ID_ALLOWANCE:][:20]:
            first = self.literal_ids[run][0]
            self.report(
                "integrity.product_id_literal",
                f"product-id-like literal {run} ({len(distinct)} distinct in the file, "
                f"{ID_ALLOWANCE} allowed)",
                first,
            )

    def _constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bool) or value is None:
            return
        if isinstance(value, int):
            digits = _int_digits(value)
            if digits is None:
                return
            if 9 <= len(digits) <= 15 and not is_placeholder(digits):
                self._literal_id(digits, node)  # in hex too: it counts against the allowance
            elif len(digits) >= 16 and not is_placeholder(digits):
                self.report("integrity.encoded_blob", f"integer literal of {len(digits)} digits", node)
            return
        if isinstance(value, bytes):
            if _binary_bytes(value):
                self.report("integrity.encoded_blob", f"binary bytes literal ({len(value)} bytes)", node)
                return
            value = value.decode("latin-1")
        if not isinstance(value, str):
            return
        if id(node) in self.assigned_constants and len(self.cipher_candidates) < 4096 and candidate(value):
            self.cipher_candidates.append((value, node))
        packed = packed_ids(value)
        if packed:
            self._cipher(packed, node)
        for run in id_runs(value):
            self._literal_id(run, node)
        for run in long_digit_runs(value):
            if run not in self.source_tokens:
                self.report("integrity.encoded_blob", f"digit string of {len(run)} digits", node)
        for blob, _ in blobs_in(value)[:3]:
            if blob not in self.source_tokens:
                self.report("integrity.encoded_blob", _blob_message(blob), node)

    def _scan_source(self, text: str) -> None:
        """The same shapes in the raw text, comments included: a file can read its own source (its path
        is in every traceback), so answers in comments are answers in the file."""
        newlines = [match.start() for match in re.finditer("\n", text)]

        def position(offset: int) -> _Position:
            index = bisect_left(newlines, offset)
            start = newlines[index - 1] + 1 if index else 0
            return _Position(index + 1, len(text[start:offset].encode("utf-8", "surrogatepass")))

        for run, start in digit_runs(text):
            if len(run) <= 15:
                self._literal_id(run, position(start))
            else:
                self.source_tokens.add(run)
                self.report("integrity.encoded_blob", f"digit string of {len(run)} digits", position(start))
        for blob, start in blobs_in(text):
            if blob.isidentifier() and blob in self._identifiers():
                continue  # a CamelCase name with digits in the code, not data
            self.source_tokens.add(blob)
            self.report("integrity.encoded_blob", _blob_message(blob), position(start))

    def _identifiers(self) -> set[str]:
        if self._identifier_set is None:  # only needed when the raw text has a blob-like token
            self._identifier_set = _identifiers(self.tree)
        return self._identifier_set

    def _literal_id(self, run: str, node: ast.AST) -> None:
        self.literal_runs.add(run)
        self.literal_ids.setdefault(run, []).append(node)

    def _dict_table(self, node: ast.Dict) -> None:
        keys = [_const(k) for k in node.keys if k is not None]
        values = [_const(v) for v in node.values]
        if len(keys) >= TABLE_MIN_ENTRIES:
            numbered = sum(
                isinstance(k, int) and abs(k) >= 1000 and isinstance(v, str) and _words(v) >= 3
                for k, v in zip(keys, values, strict=False)
            )
            if sum(map(_query_like, keys)) >= TABLE_MIN_ENTRIES:
                self.report("integrity.answer_table", f"table keyed by {len(keys)} query texts", node)
            elif sum(map(_hash_like, keys)) >= TABLE_MIN_ENTRIES or numbered >= TABLE_MIN_ENTRIES:
                self.report("integrity.answer_table", f"table keyed by {len(keys)} hashes or numbers", node)
            elif len(values) >= TITLE_LIST_MIN and sum(map(_title_like, values)) >= TITLE_LIST_MIN:
                self.report(
                    "integrity.answer_table", f"table of {len(values)} product-title-like values", node
                )
        self._digit_table([*node.keys, *node.values], node)
        self._cipher_table([*node.keys, *node.values], node)

    def _sequence(self, node: ast.List | ast.Tuple | ast.Set) -> None:
        elements = node.elts
        if len(elements) < min(CHAR_CODE_MIN, TABLE_MIN):
            return  # every shape below needs four elements or more (most tuples in code have two or three)
        ints = [_const(e) for e in elements]
        if len(ints) >= 8 and all(
            isinstance(v, int) and not isinstance(v, bool) and 48 <= v <= 57 for v in ints
        ):
            self.report("integrity.char_codes", f"list of {len(ints)} digit character codes", node)
        pairs = [e for e in elements if isinstance(e, ast.Tuple | ast.List) and len(e.elts) == 2]
        if (
            len(pairs) >= TABLE_MIN_ENTRIES
            and sum(_query_like(_const(p.elts[0])) for p in pairs) >= TABLE_MIN_ENTRIES
        ):
            self.report("integrity.answer_table", f"table of {len(pairs)} (query, answer) pairs", node)
        if (
            len(elements) >= TITLE_LIST_MIN
            and sum(_title_like(_const(e)) for e in elements) >= TITLE_LIST_MIN
        ):
            self.report("integrity.answer_table", f"list of {len(elements)} product-title-like strings", node)
        if len(elements) >= CHAR_CODE_MIN and all(self._is_chr_literal(e) for e in elements):
            self.report("integrity.char_codes", f"{len(elements)} chr(<code>) calls in a row", node)
        self._digit_table(elements, node)
        self._cipher_table(elements, node)

    def _assignment(self, node: ast.Assign) -> None:
        if type(node.value) is ast.Constant:
            self.assigned_constants.add(id(node.value))

    def _cipher_table(self, elements: list, node: ast.AST) -> None:
        if len(elements) < TABLE_MIN:
            return
        texts = []
        for element in elements:
            value = element.value if type(element) is ast.Constant else None
            if type(value) is bytes:
                value = value.decode("latin-1")
            if type(value) is str and 9 <= len(value) <= 15:
                texts.append(value)
        if len(texts) >= TABLE_MIN:
            why = cipher_table(texts)
            if why:
                self._cipher(why, node)

    def _cipher(self, why: str, node: ast.AST) -> None:
        self.cipher_nodes.add(id(node))
        self.report("integrity.answer_table", f"{why} (ids decoded with a key)", node)

    def _spread_cipher_table(self) -> None:
        """The same shape spread over separate constants (`A = "fadhgbcaed"`, `B = …`)."""
        texts = [text for text, _ in self.cipher_candidates]
        if len(set(texts)) < TABLE_MIN:
            return
        group, seed = small_alphabet_group(texts)
        if group >= TABLE_MIN and not self.cipher_nodes:
            self._cipher(
                f"{group} id-length strings over at most 10 symbols across the file",
                self.cipher_candidates[seed][1],
            )

    def _digit_table(self, elements: list, node: ast.AST) -> None:
        if len(elements) < DIGIT_TABLE_MIN:
            return
        digit_strings = [
            v
            for v in map(_const, elements)
            if isinstance(v, str) and v.isdigit() and len(v) >= 4 and not is_placeholder(v)
        ]
        if len(digit_strings) >= DIGIT_TABLE_MIN:
            self.report("integrity.answer_table", f"table of {len(digit_strings)} digit strings", node)

    @staticmethod
    def _int_list(node: ast.AST | None) -> list[int] | None:
        if not isinstance(node, ast.List | ast.Tuple | ast.Set):
            return None
        values = [_const(e) for e in node.elts]
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return values  # type: ignore[return-value]
        return None

    def _is_chr_literal(self, node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "chr"
            and len(node.args) == 1
            and isinstance(_const(node.args[0]), int)
        )

    def _call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Name) or not node.args:
            return
        if func.id in ("bytes", "bytearray") and self.is_builtin(func.id):
            codes = self._int_list(node.args[0])
            if codes is not None and len(codes) >= CHAR_CODE_MIN:
                self.report("integrity.char_codes", f"{func.id}() of {len(codes)} character codes", node)
        elif func.id == "map" and len(node.args) >= 2 and isinstance(node.args[0], ast.Name):
            codes = self._int_list(node.args[1])
            if node.args[0].id == "chr" and codes is not None and len(codes) >= CHAR_CODE_MIN:
                self.report("integrity.char_codes", f"map(chr, …) over {len(codes)} character codes", node)

    def _comprehension(self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp) -> None:
        codes = self._int_list(node.generators[0].iter)
        if codes is None or len(codes) < CHAR_CODE_MIN:
            return
        if any(isinstance(n, ast.Name) and n.id == "chr" for n in self.tree.walk(node.elt)):
            self.report("integrity.char_codes", f"chr() over {len(codes)} character codes", node)

    def _chr_chain(self, node: ast.BinOp) -> None:
        count, stack = 0, [node]
        while stack:
            current = stack.pop()
            if isinstance(current, ast.BinOp):
                stack += [current.left, current.right]
            elif self._is_chr_literal(current):
                count += 1
        if count >= CHAR_CODE_MIN:
            self.report("integrity.char_codes", f"{count} chr(<code>) calls concatenated", node)

    def keyed(self, text: str, node: ast.AST, key: int) -> bool:
        """A decode loop over literal data that gives an id-like value under some key (the key itself is
        only known at run time): an answer table with the key left out. True when reported."""
        for run, _ in digit_runs(text):
            if run not in self.literal_runs:
                self.report(
                    "integrity.answer_table",
                    f"a decode loop over literal data gives product-id-like value {run} with key {key} "
                    "(the key is computed at run time)",
                    node,
                )
                return True
        return False

    # -- assembled values ----------------------------------------------------------------------------------
    def assembled(self, value: str | bytes, node: ast.AST) -> bool:
        """Report an id-like run in a value an operation produced, unless the same run is a literal
        (formatting a literal example id into a prompt is not hiding it). True when one was reported."""
        if id(node) in self.reported_nodes:
            return True
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        for run, _ in digit_runs(text):
            if run not in self.literal_runs:
                self.reported_nodes.add(id(node))
                self.report("integrity.assembled_id", f"assembled product-id-like value {run}", node)
                return True
        return False
