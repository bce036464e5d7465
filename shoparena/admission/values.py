"""Size-capped pure operations on constant values, for the evaluator that looks for assembled answers.

The checker computes what a submission's constant expressions evaluate to (`"503" + "5687794"`,
`"".join(map(chr, [...]))`, `bytes.fromhex(...)`). It runs in the server's process on untrusted input,
so every operation here is pure, works on plain immutable-ish values only (str, bytes, int, float,
bool, None, tuples, lists, dicts, ranges) and is checked *before* it runs against size caps, so no
input can make it allocate or loop without bound. Anything unsupported, too big or raising returns
UNKNOWN: the evaluator then simply knows less.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import operator
import random
import re
import string
from collections.abc import Callable
from typing import Any
from urllib import parse as urlparse

MAX_STR = 1 << 21
"""Longest str/bytes the evaluator builds: twice the largest file, so joining a file's own literals
(a long prompt included) always fits, and only repetition can exceed it."""
MAX_ITEMS = 4096
"""Most elements in a built container, and most iterations of one loop or comprehension."""
MAX_INT_BITS = 15_000
"""A little above the largest int Python itself will turn into a string (4300 digits)."""


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


class Unsupported(Exception):
    """An operation the evaluator does not model (an unknown codec, a non-scalar format argument, …);
    the result is UNKNOWN."""


class TooBig(Unsupported):
    """An operation on known values would exceed a size cap: constant computation too large to follow."""


class ModuleRef:
    """A module (or a member path inside one) that an import alias names: `string`, `urllib.parse`."""

    __slots__ = ("path",)

    def __init__(self, path: str):
        self.path = path


class BuiltinRef:
    """An unshadowed builtin, by name."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class Seeded:
    """A `random.Random` built from a constant seed: its draws are as constant as the seed."""

    __slots__ = ("rng",)

    def __init__(self, seed: Any):
        self.rng = random.Random(seed)


class Hashed:
    """A hashlib object over constant data (only its digests are read; `update` makes it unknown)."""

    __slots__ = ("algorithm", "data")

    def __init__(self, algorithm: str, data: bytes):
        self.algorithm, self.data = algorithm, data


class BoundMethod:
    __slots__ = ("name", "receiver")

    def __init__(self, receiver: Any, name: str):
        self.receiver, self.name = receiver, name


_SCALARS = (str, bytes, int, float, bool, type(None))
_TEXT_ENCODINGS = frozenset(
    {"utf-8", "utf8", "ascii", "latin-1", "latin1", "iso-8859-1", "unicode_escape", "raw_unicode_escape",
     "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be", "cp1252", "utf-7", "punycode"}
)  # fmt: skip
MODULE_CONSTANTS: dict[str, Any] = {
    f"string.{name}": getattr(string, name)
    for name in (
        "digits", "ascii_letters", "ascii_lowercase", "ascii_uppercase", "hexdigits", "octdigits",
        "punctuation", "printable", "whitespace",
    )
}  # fmt: skip
_WIDTH = re.compile(r"\d{4,}|\*|\{")
"""A format width/precision of 1000+ (or a computed one): refused, it would build a huge string."""


def check_size(value: Any) -> Any:
    if isinstance(value, str | bytes | bytearray) and len(value) > MAX_STR:
        raise TooBig
    if isinstance(value, list | tuple | dict) and len(value) > MAX_ITEMS:
        raise TooBig
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise TooBig
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def is_immutable(value: Any, depth: int = 0) -> bool:
    if isinstance(value, _SCALARS):
        return True
    if depth > 32 or not isinstance(value, tuple):
        return False
    return all(is_immutable(item, depth + 1) for item in value)


def items_of(value: Any) -> list | None:
    """The elements iterating `value` yields, or None when unknown or too long to follow (strings,
    bytes and ranges up to MAX_STR elements; built containers never exceed MAX_ITEMS)."""
    if isinstance(value, str | bytes | range):
        return list(value) if len(value) <= MAX_STR else None
    if isinstance(value, list | tuple | dict):
        return list(value) if len(value) <= MAX_ITEMS else None
    return None


def is_iterable_value(value: Any) -> bool:
    """A known value that can be iterated (whether or not it is short enough to follow)."""
    return isinstance(value, str | bytes | range | list | tuple | dict)


# -- operators ----------------------------------------------------------------------------------------
def _mul(left: Any, right: Any) -> Any:
    for seq, count in ((left, right), (right, left)):
        limit = MAX_STR if isinstance(seq, str | bytes) else MAX_ITEMS
        if (
            isinstance(seq, str | bytes | list | tuple)
            and isinstance(count, int)
            and len(seq) * count > limit
        ):
            raise TooBig
    return left * right


def _pow(left: Any, right: Any) -> Any:
    if isinstance(left, int) and isinstance(right, int) and max(left.bit_length(), 1) * right > MAX_INT_BITS:
        raise TooBig
    if isinstance(right, int | float) and abs(right) > 10_000:
        raise TooBig
    return left**right


def _lshift(left: Any, right: Any) -> Any:
    if isinstance(right, int) and right > MAX_INT_BITS:
        raise TooBig
    return left << right


def _mod(left: Any, right: Any) -> Any:
    if isinstance(left, str | bytes):
        template = left if isinstance(left, str) else left.decode("latin-1")
        specs = re.findall(r"%[^a-zA-Z%]*", template)
        if any(_WIDTH.search(spec) for spec in specs):
            raise TooBig
        args = right if isinstance(right, tuple) else (right,)
        if not all(isinstance(arg, _SCALARS) for arg in args):
            raise Unsupported
    return left % right


BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "Add": operator.add,
    "Sub": operator.sub,
    "Mult": _mul,
    "Div": operator.truediv,
    "FloorDiv": operator.floordiv,
    "Mod": _mod,
    "Pow": _pow,
    "LShift": _lshift,
    "RShift": operator.rshift,
    "BitOr": operator.or_,
    "BitXor": operator.xor,
    "BitAnd": operator.and_,
}
UNARY: dict[str, Callable[[Any], Any]] = {
    "USub": operator.neg,
    "UAdd": operator.pos,
    "Invert": operator.invert,
    "Not": operator.not_,
}
COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "Eq": operator.eq,
    "NotEq": operator.ne,
    "Lt": operator.lt,
    "LtE": operator.le,
    "Gt": operator.gt,
    "GtE": operator.ge,
    "In": lambda a, b: a in b,
    "NotIn": lambda a, b: a not in b,
    "Is": lambda a, b: a is b if a is None or b is None else UNKNOWN,
    "IsNot": lambda a, b: a is not b if a is None or b is None else UNKNOWN,
}


def binary(op: str, left: Any, right: Any) -> Any:
    function = BINARY.get(op)
    if function is None or not isinstance(left, _SCALARS + (tuple, list)):
        return UNKNOWN
    if not isinstance(right, _SCALARS + (tuple, list)):
        return UNKNOWN
    if op == "Add" and isinstance(left, list | tuple | str | bytes) and isinstance(right, type(left)):
        limit = MAX_STR if isinstance(left, str | bytes) else MAX_ITEMS
        if len(left) + len(right) > limit:
            raise TooBig
    return check_size(function(left, right))


# -- formatting -----------------------------------------------------------------------------------------
def format_value(value: Any, spec: str) -> str:
    if not spec:
        return to_str(value)
    if _WIDTH.search(spec):
        raise TooBig
    if not isinstance(value, _SCALARS):
        raise Unsupported
    return check_size(format(value, spec))


def str_format(template: str, args: list, kwargs: dict) -> str:
    """`template.format(*args, **kwargs)` for plain fields only (no attribute or index walks)."""
    for _, field, spec, _ in string.Formatter().parse(template):
        if field is None:
            continue
        if "." in field or "[" in field:
            raise Unsupported
        if spec and _WIDTH.search(spec):
            raise TooBig
    if not all(isinstance(arg, _SCALARS) for arg in [*args, *kwargs.values()]):
        raise Unsupported
    return check_size(template.format(*args, **kwargs))


def convert(value: Any, conversion: int) -> Any:
    if conversion == ord("s"):
        return to_str(value)
    if conversion == ord("r"):
        _bounded(value)
        return check_size(repr(value))
    if conversion == ord("a"):
        _bounded(value)
        return check_size(ascii(value))
    return value


def _bounded(value: Any, budget: int = MAX_STR, depth: int = 0) -> int:
    """An upper bound on the length of `str(value)`, raising TooBig past `budget` or deep nesting."""
    if depth > 32:
        raise Unsupported
    if isinstance(value, str | bytes):
        size = 4 * len(value) + 3
    elif isinstance(value, int) and not isinstance(value, bool):
        size = value.bit_length() // 3 + 2
    elif isinstance(value, _SCALARS):
        size = 32
    elif isinstance(value, list | tuple):
        size = 2
        for item in value:
            size += _bounded(item, budget - size, depth + 1) + 2
            if size > budget:
                raise TooBig
    else:
        raise Unsupported
    if size > budget:
        raise TooBig
    return size


def to_str(value: Any) -> Any:
    _bounded(value)
    return check_size(str(value))


# -- builtins -------------------------------------------------------------------------------------------
def _int(value: Any = 0, base: Any = None) -> Any:
    if base is None:
        if isinstance(value, str | bytes) and len(value) > 4000:
            raise Unsupported  # Python refuses more than 4300 digits too
        return int(value)
    if not isinstance(value, str | bytes) or len(value) > 1000:
        raise Unsupported
    return int(value, base)


def _bytes(value: Any = b"", encoding: Any = None, errors: str = "strict") -> bytes:
    if isinstance(value, int):
        if value > MAX_STR:
            raise TooBig
        return bytes(value)
    if isinstance(value, str):
        if encoding not in _TEXT_ENCODINGS:
            raise Unsupported
        return check_size(value.encode(encoding, errors))
    items = items_of(value)
    if items is None:
        raise Unsupported
    return bytes(items)


def _sequence(kind: type) -> Callable[..., Any]:
    def build(value: Any = ()) -> Any:
        items = items_of(value)
        if items is None:
            raise Unsupported
        return kind(items)

    return build


def _reduce_items(function: Callable) -> Callable[..., Any]:
    def apply(value: Any, *rest: Any) -> Any:
        items = items_of(value)
        if items is None:
            raise Unsupported
        return function(items, *rest)

    return apply


def _sum(items: list, start: Any = 0) -> Any:
    if not all(isinstance(item, int | float) for item in [*items, start]):
        raise Unsupported
    return sum(items, start)


def _chr(code: Any) -> str:
    return chr(code)


def _zip(*values: Any) -> list:
    columns = [items_of(value) for value in values]
    if any(column is None for column in columns):
        raise Unsupported
    return list(zip(*columns, strict=False))  # type: ignore[arg-type]


def _enumerate(value: Any, start: int = 0) -> list:
    items = items_of(value)
    if items is None:
        raise Unsupported
    return list(enumerate(items, start))


def _dict(value: Any = (), **kwargs: Any) -> dict:
    items = items_of(value) if not isinstance(value, dict) else list(value.items())
    if items is None:
        raise Unsupported
    result = dict(items)
    result.update(kwargs)
    return check_size(result)


def _repr(value: Any) -> Any:
    return convert(value, ord("r"))


PURE_BUILTINS: dict[str, Callable[..., Any]] = {
    "chr": _chr,
    "ord": ord,
    "str": lambda value="": to_str(value),
    "repr": _repr,
    "ascii": lambda value: convert(value, ord("a")),
    "int": _int,
    "float": float,
    "bool": bool,
    "bytes": _bytes,
    "bytearray": _bytes,
    "list": _sequence(list),
    "tuple": _sequence(tuple),
    "reversed": lambda value: _sequence(list)(value)[::-1],
    "sorted": _reduce_items(lambda items, **_: sorted(items)),
    "len": lambda value: (
        len(value) if items_of(value) is not None or isinstance(value, str | bytes) else UNKNOWN
    ),
    "abs": abs,
    "min": _reduce_items(min),
    "max": _reduce_items(max),
    "sum": _reduce_items(_sum),
    "hex": hex,
    "oct": oct,
    "bin": bin,
    "round": round,
    "divmod": divmod,
    "pow": lambda base, exp, mod=None: _pow(base, exp) if mod is None else pow(base, exp, mod),
    "range": lambda *args: range(*args),
    "zip": _zip,
    "enumerate": _enumerate,
    "dict": _dict,
}


# -- methods --------------------------------------------------------------------------------------------
def _replace(receiver: Any, old: Any, new: Any, count: int = -1) -> Any:
    if isinstance(receiver, str | bytes) and isinstance(old, str | bytes) and isinstance(new, str | bytes):
        grow = receiver.count(old) * max(len(new) - len(old), 0) if old else len(receiver) * len(new)
        if len(receiver) + grow > MAX_STR:
            raise TooBig
    return receiver.replace(old, new, count)


def _pad(name: str) -> Callable[..., Any]:
    def pad(receiver: Any, width: Any, *fill: Any) -> Any:
        if not isinstance(width, int) or width > MAX_STR:
            raise TooBig
        return getattr(receiver, name)(width, *fill)

    return pad


def _join(receiver: Any, value: Any) -> Any:
    items = items_of(value)
    if items is None or not all(isinstance(item, type(receiver)) for item in items):
        raise Unsupported
    if len(receiver) * len(items) + sum(len(item) for item in items) > MAX_STR:
        raise TooBig
    return receiver.join(items)


def _encode(receiver: str, encoding: str = "utf-8", errors: str = "strict") -> bytes:
    if encoding.lower() not in _TEXT_ENCODINGS:
        raise Unsupported
    return check_size(receiver.encode(encoding, errors))


def _decode(receiver: bytes, encoding: str = "utf-8", errors: str = "strict") -> str:
    if encoding.lower() not in _TEXT_ENCODINGS:
        raise Unsupported
    return check_size(receiver.decode(encoding, errors))


def _translate(receiver: Any, table: Any) -> Any:
    if isinstance(receiver, str) and isinstance(table, dict):
        if any(isinstance(v, str) and len(v) > 16 for v in table.values()):
            raise Unsupported
        return receiver.translate(table)
    if isinstance(receiver, bytes) and (table is None or isinstance(table, bytes)):
        return receiver.translate(table)
    raise Unsupported


def _to_bytes(receiver: int, length: int = 1, byteorder: str = "big", **kwargs: Any) -> bytes:
    if not isinstance(length, int) or length > MAX_STR:
        raise TooBig
    return receiver.to_bytes(length, byteorder, **kwargs)


_PLAIN_TEXT_METHODS = frozenset(
    {
        "strip", "lstrip", "rstrip", "upper", "lower", "swapcase", "title", "capitalize", "casefold",
        "split", "rsplit", "splitlines", "startswith", "endswith", "find", "rfind", "index", "rindex",
        "count", "isdigit", "isalpha", "isnumeric", "isdecimal", "isalnum", "isspace", "islower", "isupper",
        "removeprefix", "removesuffix", "partition", "rpartition", "hex",
    }
)  # fmt: skip
_SPECIAL_METHODS: dict[str, Callable[..., Any]] = {
    "replace": _replace,
    "zfill": _pad("zfill"),
    "ljust": _pad("ljust"),
    "rjust": _pad("rjust"),
    "center": _pad("center"),
    "join": _join,
    "encode": _encode,
    "decode": _decode,
    "translate": _translate,
    "to_bytes": _to_bytes,
    "format": lambda receiver, *args, **kwargs: str_format(receiver, list(args), kwargs),
}


_SEED_TYPES = (int, float, str, bytes)
_HASHES = frozenset(
    {"md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake2b", "blake2s", "sha3_224", "sha3_256",
     "sha3_384", "sha3_512"}
)  # fmt: skip


def _draw(rng: random.Random, name: str, args: list, kwargs: dict) -> Any:
    """One draw of a seeded generator, bounded like every other operation here."""
    if name in ("random",) and not args:
        return rng.random()
    if name in ("randint", "randrange", "uniform") and all(isinstance(a, int | float) for a in args):
        return getattr(rng, name)(*args, **kwargs)
    if name == "getrandbits" and args and isinstance(args[0], int) and 0 <= args[0] <= MAX_INT_BITS:
        return rng.getrandbits(args[0])
    if name == "choice" and args:
        items = items_of(args[0])
        return rng.choice(items) if items else UNKNOWN
    if name in ("sample", "choices") and args:
        items = items_of(args[0])
        count = kwargs.get("k", args[1] if len(args) > 1 else 1)
        if items is None or not isinstance(count, int) or count > MAX_ITEMS:
            raise TooBig
        return rng.sample(items, count) if name == "sample" else rng.choices(items, k=count)
    raise Unsupported


def seeded_call(path: str, args: list, kwargs: dict, generator: Seeded | None) -> tuple[Any, Seeded | None]:
    """`random.Random(seed)`, and the module-level `random.seed(…)` / `random.randint(…)` family on the
    module's hidden generator; returns the value and the generator state that follows."""
    name = path.rsplit(".", 1)[1]
    if name == "Random":
        known = len(args) == 1 and isinstance(args[0], _SEED_TYPES)
        return (Seeded(args[0]) if known else UNKNOWN), generator
    if name == "seed":
        known = len(args) == 1 and isinstance(args[0], _SEED_TYPES)
        return None, (Seeded(args[0]) if known else None)
    if generator is None:
        return UNKNOWN, None
    return check_size(_draw(generator.rng, name, args, kwargs)), generator


def hash_call(path: str, args: list) -> Any:
    name = path.rsplit(".", 1)[1]
    if name == "new" and args and isinstance(args[0], str):
        name, args = args[0].lower(), args[1:]
    data = args[0] if args else b""
    if name not in _HASHES or not isinstance(data, bytes | bytearray) or len(data) > MAX_STR:
        return UNKNOWN
    return Hashed(name, bytes(data))


def call_method(receiver: Any, name: str, args: list, kwargs: dict) -> Any:
    if isinstance(receiver, Seeded):
        return check_size(_draw(receiver.rng, name, args, kwargs))
    if isinstance(receiver, Hashed):
        if name in ("hexdigest", "digest") and not args:
            digest = hashlib.new(receiver.algorithm, receiver.data)
            return digest.hexdigest() if name == "hexdigest" else digest.digest()
        return UNKNOWN
    if isinstance(receiver, str | bytes):
        if name in _SPECIAL_METHODS and not (name == "decode" and isinstance(receiver, str)):
            if name == "encode" and not isinstance(receiver, str):
                return UNKNOWN
            if name == "format" and not isinstance(receiver, str):
                return UNKNOWN
            if name == "to_bytes":
                return UNKNOWN
            return check_size(_SPECIAL_METHODS[name](receiver, *args, **kwargs))
        if name in _PLAIN_TEXT_METHODS:
            return check_size(getattr(receiver, name)(*args, **kwargs))
        return UNKNOWN
    if isinstance(receiver, int) and not isinstance(receiver, bool):
        if name == "to_bytes":
            return _to_bytes(receiver, *args, **kwargs)
        if name == "bit_length":
            return receiver.bit_length()
        return UNKNOWN
    if isinstance(receiver, dict):
        if name == "get":
            return receiver.get(*args)
        if name in ("keys", "values", "items") and not args:
            return list(getattr(receiver, name)())
        return UNKNOWN
    if isinstance(receiver, list | tuple) and name in ("index", "count"):
        return getattr(receiver, name)(*args)
    return UNKNOWN


def static_call(path: str, args: list, kwargs: dict) -> Any:
    """Functions reached through a type or a module: `str.maketrans`, `bytes.fromhex`, `html.unescape`."""
    if path == "str.maketrans":
        if any(isinstance(a, str) and len(a) > MAX_ITEMS for a in args):
            raise Unsupported
        return str.maketrans(*args)
    if path == "bytes.fromhex" and args and isinstance(args[0], str):
        return check_size(bytes.fromhex(args[0]))
    if path == "int.from_bytes" and args and isinstance(args[0], bytes) and len(args[0]) <= 512:
        return int.from_bytes(*args, **kwargs)
    if path in ("urllib.parse.unquote", "urllib.parse.unquote_plus") and args and isinstance(args[0], str):
        return check_size(getattr(urlparse, path.rsplit(".", 1)[1])(args[0]))
    if path == "html.unescape" and args and isinstance(args[0], str):
        return check_size(html.unescape(args[0]))
    if path == "json.loads" and args and isinstance(args[0], str | bytes) and len(args[0]) <= MAX_STR:
        return check_size(json.loads(args[0]))
    if path == "math.floor" and args:
        return math.floor(args[0])
    kind, _, method = path.partition(".")
    if kind in ("str", "bytes") and args and isinstance(args[0], str if kind == "str" else bytes):
        return call_method(args[0], method, list(args[1:]), kwargs)  # str.isdigit(c), bytes.hex(b)
    if kind == "hashlib":
        return hash_call(path, args)
    return UNKNOWN
