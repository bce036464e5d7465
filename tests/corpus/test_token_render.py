"""The token counter's cached, piece-by-piece ChatML rendering must equal rendering the whole row."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.corpus import tokens
from shoparena.corpus.sources import iter_records, line_ranges, read_line_range
from shoparena.corpus.tokens import TokenCounter, chatml_segments
from shoparena.corpus.trace import trace_calls
from shoparena.harness.tool_specs import tool_schemas

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
_ARGUMENTS = st.one_of(
    st.dictionaries(st.sampled_from(["q", "product_ids", "page"]), _TEXT, max_size=3).map(
        lambda d: tokens.orjson.dumps(d).decode()
    ),
    _TEXT,  # often not JSON at all: rendered from the raw text
)


def _messages(text, arguments=None):
    """Messages of every role with `text` wherever a message carries text; call arguments are
    `arguments`, by default text or a JSON object of text."""
    if arguments is None:
        arguments = st.one_of(text, st.builds(lambda q: tokens.orjson.dumps({"q": q}).decode(), text))
    call = st.builds(
        lambda i, name, a: {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": a}},
        st.integers(0, 3),
        st.sampled_from(["find_product", "recommend_product", "terminate"]),
        arguments,
    )
    return st.one_of(
        st.builds(lambda c: {"role": "user", "content": c}, text),
        st.builds(lambda c: {"role": "system", "content": c}, text),
        st.builds(
            lambda c, i: {"role": "tool", "content": c, "tool_call_id": f"c{i}"},
            st.one_of(st.none(), text),
            st.integers(0, 3),
        ),
        st.builds(
            lambda c, r, calls: {
                "role": "assistant",
                "content": c,
                **({"reasoning_content": r} if r is not None else {}),
                **({"tool_calls": calls} if calls else {}),
            },
            st.one_of(st.none(), text),
            st.one_of(st.none(), text),
            st.lists(call, max_size=3),
        ),
    )


_MESSAGE = _messages(_TEXT, _ARGUMENTS)
_TOOLS = st.sampled_from([[], tool_schemas("full")])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(_MESSAGE, max_size=8), _TOOLS), min_size=1, max_size=6))
def test_cached_segments_equal_whole_row_rendering(rows):
    counter = TokenCounter("regex")
    for messages, tools in rows + rows:  # the second pass is served from the cache
        assert counter._renderer.segments(messages, tools) == chatml_segments(messages, tools)
    expected = [
        len(tokens._PIECES.findall("".join(chatml_segments(messages, tools)))) for messages, tools in rows
    ]
    assert counter.count_many(rows) == expected


def test_cached_segments_survive_the_cache_filling_up(monkeypatch):
    monkeypatch.setattr(tokens, "RENDER_CACHE_CHARS", 300)
    counter = TokenCounter("regex")
    rows = [
        (
            [
                {"role": "user", "content": f"find {i}"},
                {"role": "assistant", "content": None, "reasoning_content": "r" * (i * 13)},
            ],
            tool_schemas("full") if i % 2 else [],
        )
        for i in range(30)
    ]
    for messages, tools in rows + rows[::-1]:
        assert counter._renderer.segments(messages, tools) == chatml_segments(messages, tools)


def test_call_arguments_are_parsed_once_and_shared_by_text():
    messages = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "find_product", "arguments": '{"q": "x"}'},
                },
                {
                    "id": "b",
                    "type": "function",
                    "function": {"name": "find_product", "arguments": '{"q": "x"}'},
                },
                {"id": "c", "type": "function", "function": {"name": "terminate", "arguments": "[1]"}},
                {"id": "d", "type": "function", "function": {"name": "terminate", "arguments": "{bad"}},
                {"id": "e", "type": "function", "function": {"name": "terminate", "arguments": "  "}},
            ],
        }
    ]
    a, b, c, d, e = trace_calls(messages)
    assert a.arguments() == {"q": "x"} and a.arguments() is b.arguments()
    assert c.arguments() is None and d.arguments() is None
    assert e.arguments() == {}


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from([b"", b"  ", b"{}", b'{"a": 1}', b"x\r", b"\xff", b"[1, 2]"]), max_size=30),
    st.booleans(),
    st.integers(1, 5),
    st.integers(1, 16),
)
def test_line_ranges_read_back_as_iter_records(tmp_path_factory, lines, trailing, per_range, block):
    """The parallel build's line ranges give the very records (labels included) `iter_records` gives."""
    path = tmp_path_factory.mktemp("ranges") / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if trailing and lines else b""))
    ranges = list(line_ranges(path, per_range, block=block))
    assert [r for start, end, number in ranges for r in read_line_range(path, start, end, number)] == list(
        iter_records(path)
    )


_HARD_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list(' \t\n\r\x0b\x0c\x1c\x1f\x85\u00a0\u2028\u3000\x00\ufffd\u0301é中文.,{}"[]:')),
        st.characters(blacklist_categories=("Cs",)),
    ),
    max_size=60,
)
_DEFAULT = TokenCounter()


@settings(max_examples=200, deadline=None)
@given(st.lists(_HARD_TEXT, min_size=1, max_size=4))
def test_counting_by_words_equals_counting_the_whole_text(contents):
    """Space-separated words are counted (and cached) one by one; that must equal the whole text's count
    under the real WordPiece and the regex counter, whatever the characters around the spaces."""
    rows = [([{"role": "user", "content": text}], []) for text in contents]
    for counter, whole in (
        (TokenCounter(), lambda t: len(_DEFAULT._fast.encode(t, add_special_tokens=False).ids)),
        (TokenCounter("regex"), lambda t: len(tokens._PIECES.findall(t))),
    ):
        expected = [whole("".join(chatml_segments(m, t))) for m, t in rows]
        assert counter.count_many(rows) == expected
        assert counter.count_many(rows[::-1]) == expected[::-1]  # now served from the word cache


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(_messages(_HARD_TEXT), max_size=7), _TOOLS), min_size=1, max_size=4))
def test_counting_message_texts_apart_equals_counting_the_rendered_row(rows):
    """The default and regex counters count a row as its message texts plus cached templates (a user
    turn, a run of tool results); that must equal counting the whole ChatML rendering, whatever the
    characters at the texts' edges."""
    for counter, whole in (
        (TokenCounter(), lambda t: len(_DEFAULT._fast.encode(t, add_special_tokens=False).ids)),
        (TokenCounter("regex"), lambda t: len(tokens._PIECES.findall(t))),
    ):
        expected = [whole(tokens.chatml_text(m, t)) for m, t in rows]
        assert counter.count_many(rows) == expected
        assert counter.count_many(rows[::-1]) == expected[::-1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(_messages(_TEXT), max_size=6), _TOOLS), min_size=1, max_size=5))
def test_counts_survive_the_count_cache_filling_up(rows):
    """A cache a few texts large is cleared again and again mid-row; counts must not change."""
    counter, small = TokenCounter("regex"), TokenCounter("regex")
    small_limit = 64
    original = tokens.CACHE_CHARS
    try:
        tokens.CACHE_CHARS = small_limit
        got = small.count_many(rows + rows)
    finally:
        tokens.CACHE_CHARS = original
    assert got == counter.count_many(rows + rows)
