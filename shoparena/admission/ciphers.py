"""Answer tables under a substitution: ids stored as innocent-looking letters, decoded with a key.

The evaluator follows a decode loop only while its key is known; a key computed at run time
(`len(problem_data) + 48`) makes the result UNKNOWN, and an unknown value is never reported. So the
table itself is judged, whatever the key: any per-character decoding — a shift, an XOR, `translate`, a
dict lookup — turns a 10-digit id into 9–15 characters drawn from at most ten symbols, the images of the
ten digits. Several such strings in one literal table, or a run of them packed into one string, are an
answer table with the key left out. Words do not look like this: four English words of nine letters or
more use far more than ten letters between them, and a word whose letters all lie within ten code points
(what a per-entry shift of digits gives) is rarer still.
"""

from __future__ import annotations

import re
from itertools import pairwise

ID_LENGTHS = range(9, 16)
TABLE_MIN = 4
"""More id-shaped strings than the allowance of three examples (integrity.ID_ALLOWANCE)."""
DIGIT_SYMBOLS = 10
MIN_DISTINCT = 4
"""A real id has at least four distinct digits (fewer is a placeholder: 1111111111, 1212121212)."""
PACKED_MIN = TABLE_MIN * 9
_SEPARATORS = re.compile(r"[\s,;|]+")
_NOT_AN_ID = re.compile(r"\d{4}-\d\d-\d\d|\d\d:\d\d|\d+\.\d+\.\d+")
"""Dates, times and versions: short alphabets of digits and separators, not ids."""


def _snake_case(text: str) -> bool:
    """`tool_call_id`, `product_ids`: names written as strings (dict keys, fields), not data."""
    parts = text.split("_")
    return len(parts) > 1 and all(len(part) >= 2 and part.isalpha() for part in parts)


def candidate(text: str) -> bool:
    """An id-length string that could be an id under a substitution (cheapest tests first)."""
    return (
        len(text) in ID_LENGTHS
        and not text.isdigit()  # digit strings are counted as ids by the literal rules
        and len(set(text)) >= MIN_DISTINCT
        and not any(char.isspace() for char in text)
        and not _snake_case(text)
        and not _NOT_AN_ID.search(text)
    )


def _shifted_digits(text: str) -> bool:
    """All characters within ten consecutive code points: digits shifted by one key."""
    codes = [ord(c) for c in text]
    return max(codes) - min(codes) < DIGIT_SYMBOLS


def small_alphabet_group(candidates: list[str]) -> tuple[int, int]:
    """The largest group of distinct candidates of one length whose union uses at most ten symbols
    (greedy, from each of the first 64 seeds of that length) and the index of its seed. One length:
    an id table's entries are all as long as the catalogue's ids, where words that share a stem
    (`normalize`, `normalized`, `normalizer`) differ in length."""
    by_length: dict[int, list[tuple[int, int]]] = {}
    seen: set[str] = set()
    for index, text in enumerate(candidates):
        if text in seen:
            continue
        seen.add(text)
        mask = 0
        for char in set(text):
            mask |= 1 << (ord(char) & 0xFFFF)
        if mask.bit_count() <= DIGIT_SYMBOLS:
            by_length.setdefault(len(text), []).append((mask, index))
    best, best_seed = 0, 0
    for masks in by_length.values():
        if len(masks) < TABLE_MIN:
            continue
        for seed, seed_index in masks[:64]:
            union, count = seed, 0
            for mask, _ in masks:
                merged = union | mask
                if merged.bit_count() <= DIGIT_SYMBOLS:
                    union, count = merged, count + 1
            if count > best:
                best, best_seed = count, seed_index
            if best >= TABLE_MIN:
                return best, best_seed
    return best, best_seed


def cipher_table(entries: list[str]) -> str | None:
    """Why these strings (a table's entries) are ids under a substitution, or None."""
    candidates = [text for text in dict.fromkeys(entries) if candidate(text)]
    if len(candidates) < TABLE_MIN:
        return None
    group, _ = small_alphabet_group(candidates)
    if group >= TABLE_MIN:
        return f"{group} id-length strings over at most {DIGIT_SYMBOLS} symbols: digits under a substitution"
    lengths: dict[int, int] = {}
    for text in candidates:
        if _shifted_digits(text):
            lengths[len(text)] = lengths.get(len(text), 0) + 1
    shifted = max(lengths.values(), default=0)
    if shifted >= TABLE_MIN:
        return (
            f"{shifted} id-length strings each within {DIGIT_SYMBOLS} consecutive characters: shifted digits"
        )
    return None


def packed_ids(text: str) -> str | None:
    """Why one string is a run of ids under a substitution (or a table separated by commas), or None."""
    if len(text) < PACKED_MIN:
        return None
    if len(text) < 8 * (text.count(" ") + text.count(",") + 1):
        return None  # tokens shorter than ids on average: prose or code, not a table of ids
    tokens = list(dict.fromkeys(token for token in _SEPARATORS.split(text) if token))
    if len(tokens) >= TABLE_MIN:
        # a list written as one string, not prose: most of its distinct tokens are id-length codes
        if sum(map(candidate, tokens)) * 4 < len(tokens) * 3:
            return None
        return cipher_table(tokens)
    if len(tokens) != 1 or len(text) > 1 << 16:
        return None
    symbols = set(text)
    if not 6 <= len(symbols) <= DIGIT_SYMBOLS or text.isdigit() or _NOT_AN_ID.search(text):
        return None
    repeats = sum(a == b for a, b in pairwise(text))
    if repeats * 4 > len(text):
        return None  # rules and padding ('=-=-', '....'), not data
    return f"a {len(text)}-character string over {len(symbols)} symbols: packed ids under a substitution"
