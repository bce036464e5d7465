"""The call ledger: which tool calls an inference response offered, how arguments are matched, and that
each offered call is used once."""

from __future__ import annotations

import json
import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.harness import ParsedCall
from shoparena.harness.call_ledger import CallLedger, canonical_arguments, response_tool_calls

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)
OBJECTS = st.dictionaries(st.text(max_size=8), JSON, max_size=6)


def shuffled_text(value, rng, spaced: bool) -> str:
    """The same JSON value written another way: keys in another order, other whitespace, integral
    numbers as floats."""

    def scramble(item):
        if isinstance(item, dict):
            keys = list(item)
            rng.shuffle(keys)
            return {k: scramble(item[k]) for k in keys}
        if isinstance(item, list):
            return [scramble(i) for i in item]
        if isinstance(item, int) and not isinstance(item, bool) and abs(item) < 2**52:
            return float(item)
        return item

    separators = (" ,  ", " :\t") if spaced else (",", ":")
    return json.dumps(scramble(value), separators=separators, ensure_ascii=rng.random() < 0.5)


@settings(max_examples=150, deadline=None)
@given(OBJECTS, st.randoms(use_true_random=False), st.booleans())
def test_key_order_whitespace_escapes_and_integral_floats_do_not_matter(value, rng, spaced):
    assert canonical_arguments(shuffled_text(value, rng, spaced)) == canonical_arguments(value)


@settings(max_examples=150, deadline=None)
@given(OBJECTS, st.text(min_size=1, max_size=8), JSON, JSON)
def test_a_different_value_is_a_different_call(value, key, first, second):
    a, b = {**value, key: first}, {**value, key: second}
    same = json.loads(json.dumps(first)) == json.loads(json.dumps(second)) and type(first) is type(second)
    if not same and not (
        isinstance(first, int | float)
        and isinstance(second, int | float)
        and not isinstance(first, bool)
        and not isinstance(second, bool)
        and first == second
    ):
        assert canonical_arguments(a) != canonical_arguments(b)


def test_what_counts_as_equal_is_spelled_out():
    base = canonical_arguments({"q": "yoga mat", "page": 1})
    assert canonical_arguments('{ "page" : 1.0 , "q":"yoga mat"}') == base
    assert canonical_arguments('{"page": 1e0, "q": "yoga\\u0020mat"}') == base
    assert canonical_arguments({"q": "yoga mat", "page": "1"}) != base  # a string is not a number
    assert canonical_arguments({"q": "Yoga mat", "page": 1}) != base  # no case folding
    assert canonical_arguments({"q": "yoga mat ", "page": 1}) != base  # no trimming
    assert canonical_arguments({"q": "yoga mat", "page": 1, "sort": None}) != base  # null is not absent
    assert canonical_arguments({"flag": True}) != canonical_arguments({"flag": 1})
    assert canonical_arguments({"x": 0.1}) == canonical_arguments('{"x": 0.10}')
    assert canonical_arguments("[1, 2]") is None and canonical_arguments("{not json") is None
    assert canonical_arguments("") == canonical_arguments({})


def test_the_calls_of_a_response_in_every_protocol():
    native = {
        "role": "assistant",
        "content": None,
        "reasoning_content": '<tool_call>[{"name": "terminate", "parameters": {}}]</tool_call>',
        "tool_calls": [
            {
                "id": "a",
                "type": "function",
                "function": {"name": "find_product", "arguments": '{"q": "mat"}'},
            },
            {"id": "b", "type": "function", "function": {"name": "broken", "arguments": "{oops"}},
        ],
    }
    calls = response_tool_calls({"choices": [{"message": native}]})
    assert [(c.name, c.arguments, c.error is None) for c in calls] == [
        ("find_product", {"q": "mat"}, True),
        ("broken", None, False),
    ]  # the reasoning's tags are thinking, not calls
    upstream = (
        '<think>two searches, and a call I only think about: <tool_call>[{"name": "terminate"}]</tool_call>'
        '</think>\n<tool_call>[{"name": "find_product", "parameters": {"q": "mat"}}, '
        '{"name": "find_product", "parameters": {"q": "mat", "page": 2}}]</tool_call>'
    )
    assert [(c.name, c.arguments) for c in response_tool_calls({"content": upstream})] == [
        ("find_product", {"q": "mat"}),
        ("find_product", {"q": "mat", "page": 2}),
    ]
    qwen = (
        '<think>\nlook twice\n</think>\n\n<tool_call>\n{"name": "find_product", "arguments": {"q": "mat"}}\n'
        '</tool_call>\n<tool_call>\n{"name": "terminate", "arguments": "{\\"status\\": \\"success\\"}"}\n</tool_call>'
    )
    assert [(c.name, c.arguments) for c in response_tool_calls(qwen)] == [
        ("find_product", {"q": "mat"}),
        ("terminate", {"status": "success"}),
    ]


def test_each_offered_call_is_used_once_earliest_first_and_malformed_calls_are_not_offered():
    ledger = CallLedger()
    offered = ledger.offer(
        1,
        [
            ParsedCall(name="find_product", arguments={"q": "mat"}),
            ParsedCall(name="find_product", raw="{oops", error="not JSON"),
            ParsedCall(name="find_product", arguments={"q": "mat"}),
        ],
    )
    assert [o.index for o in offered] == [0, 2] and ledger.pending == 2
    ledger.offer(2, [ParsedCall(name="find_product", arguments={"q": "mat"})])
    assert ledger.consume("view_product_information", {"q": "mat"}) is None  # the name matters too
    assert [
        (m.response, m.index) for m in (ledger.consume("find_product", '{"q":"mat"}') for _ in range(3))
    ] == [
        (1, 0),
        (1, 2),
        (2, 0),
    ]
    assert ledger.consume("find_product", {"q": "mat"}) is None
    assert (ledger.offered, ledger.used, ledger.pending) == (3, 3, 0)


def test_the_oldest_offers_are_dropped_past_the_cap_and_concurrent_use_never_doubles():
    ledger = CallLedger(max_pending=3)
    ledger.offer(1, [ParsedCall(name="t", arguments={"i": i}) for i in range(5)])
    assert ledger.dropped == 2 and ledger.consume("t", {"i": 0}) is None and ledger.consume("t", {"i": 4})

    ledger = CallLedger()
    ledger.offer(1, [ParsedCall(name="t", arguments={"i": 1}) for _ in range(50)])
    wins: list[object] = []

    def take():
        for _ in range(20):
            match = ledger.consume("t", {"i": 1})
            if match is not None:
                wins.append(match)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(wins) == 50 and len({id(w) for w in wins}) == 50
