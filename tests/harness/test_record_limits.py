"""What an episode stores stays writable and bounded whatever an agent sends: unusable arguments are
refused (the call is kept, with its reason), large values are cut and say so, late calls stop being
stored. Checked through `Episode`, the way every agent reaches the harness."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.harness import Episode
from shoparena.harness.record_limits import RecordLimits


def nested(depth: int, leaf: object = "x") -> object:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def writable(episode: Episode) -> int:
    """The episode's record as the runner writes it (orjson), in bytes; fails if it cannot be written."""
    summary = episode.summary().model_dump(mode="json")
    return len(orjson.dumps({"summary": summary, "messages": episode.messages}))


UNUSABLE = [
    ({"q": "black \ud800 shirt"}, "q holds a lone surrogate"),
    ({"q": nested(400)}, "is nested deeper than 32 levels"),
    ({"q": "x", "page": 1 << 70}, "page is an integer beyond 64 bits"),
    ({"q": "x", "\udcff": 1}, "a key of the value holds a lone surrogate"),
]


@pytest.mark.parametrize(("arguments", "reason"), UNUSABLE)
def test_unusable_arguments_are_refused_recorded_and_the_episode_goes_on(episode, arguments, reason):
    observation = episode.call("find_product", arguments)
    assert not observation.ok and reason in observation.error and "not executed" in observation.error
    observation.text.encode()  # what the agent is shown is valid text
    [call] = episode.calls
    assert call.error == observation.error and "unusable parts replaced" in call.cut
    assert episode.call("find_product", {"q": "black shirt"}).ok  # the episode goes on
    assert writable(episode) < 20_000


def test_a_broken_escape_in_json_text_or_a_model_turn_is_refused_the_same_way(episode):
    observation = episode.call("find_product", '{"q": "black \\ud800 shirt"}')
    assert not observation.ok and "lone surrogate" in observation.error
    assert "\ud800" not in episode.calls[0].raw_arguments  # replaced by U+FFFD in the record
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "find_product", "arguments": '{"q": "\\udc00"}'},
    }
    [observation] = episode.run_turn(
        "openai", {"role": "assistant", "content": "thinking \ud800 aloud", "tool_calls": [call]}
    )
    assert not observation.ok and "lone surrogate" in observation.error
    assert episode.messages[-2]["content"] == "thinking \ufffd aloud"
    assert len(episode.calls) == 2
    writable(episode)


SURROGATE_TEXT = st.builds(
    lambda before, lone, after: before + lone + after,
    st.text(max_size=4),
    st.sampled_from(["\ud800", "\udfff", "\udc00\ud800"]),
    st.text(max_size=4),
)
JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 80), max_value=1 << 80)
    | st.floats()
    | st.text(max_size=12)
    | SURROGATE_TEXT
)
ANY_VALUE = st.recursive(
    JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6) | SURROGATE_TEXT, inner, max_size=3)
    ),
    max_leaves=10,
) | st.integers(min_value=1, max_value=300).map(nested)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(["find_product", "check_product_match", "nope\ud800"]), value=ANY_VALUE)
def test_any_argument_value_leaves_a_writable_record_with_the_call_in_it(backend, name, value):
    episode = Episode(backend, "q", profile="full")
    for arguments in ({"q": value}, {"product_id": "1", "requirements": value}, json.dumps({"q": value})):
        observation = episode.call(name, arguments)
        observation.text.encode()
    assert len(episode.calls) == 3
    writable(episode)


def test_calls_after_the_end_are_refused_and_only_the_first_few_are_recorded(episode):
    episode.call("terminate", {"status": "success"})
    big = "1," * 450_000
    for _ in range(40):
        observation = episode.call("recommend_product", {"product_ids": big})
        assert not observation.ok and "the episode has ended" in observation.error
    calls = episode.calls
    assert len(calls) == 6 and [c.counted for c in calls] == [True] + [False] * 5
    assert "35 later call(s) after the end were refused and not recorded" in calls[-1].cut
    assert "over the 16,384-byte limit" in calls[-1].cut  # its own cut is kept beside it
    assert all(c.arguments is None and len(c.raw_arguments) == 512 for c in calls[1:])
    assert any("35 call(s) made after the end" in note for note in episode.notes)
    assert len(episode.messages) == 1 + 2 * 6 and writable(episode) < 20_000


def test_oversized_arguments_are_refused_before_the_tool_runs(episode):
    observation = episode.call("recommend_product", {"product_ids": "7," * 10_000})
    assert (
        not observation.ok
        and "arguments of 20,018 bytes exceed the limit of 16,384 bytes" in observation.error
    )
    assert episode.recommended_product_ids is None and not episode.ended
    assert episode.calls[0].raw_arguments.startswith('{"product_ids":"7,7,')
    assert episode.messages[-2]["tool_calls"][0]["function"]["arguments"] == episode.calls[0].raw_arguments


def test_a_large_result_is_answered_whole_but_stored_cut_and_says_so(backend, products):
    limits = RecordLimits(max_text_bytes=4096, max_episode_bytes=30_000, preview_bytes=256)
    episode = Episode(backend, "q", profile="full", limits=limits)
    ids = ",".join(p["product_id"] for p in products[:40])
    observation = episode.call("view_product_information", {"product_ids": ids})
    assert observation.ok and len(observation.result) == 40 and len(observation.text) > 4096
    stored = episode.calls[0]
    assert 0 < len(stored.result) < 40 and stored.result == observation.result[: len(stored.result)]
    assert f"cut to its first {len(stored.result)} of 40 items (over the 4,096-byte cap)" in stored.cut
    assert episode.messages[-1]["content"].endswith("…[cut by the harness]")
    for _ in range(12):  # the budget runs out: later results keep a preview only
        episode.call("view_product_information", {"product_ids": ids})
    last = episode.calls[-1]
    assert "record budget of 30,000 bytes is spent" in last.cut
    assert any("record budget of 30,000 bytes was spent" in note for note in episode.notes)
    assert writable(episode) < 2 * 30_000 + 40_000


def test_a_full_call_log_ends_the_episode(backend):
    episode = Episode(backend, "q", limits=RecordLimits(max_calls=4, max_calls_after_end=1), step_cap=50)
    call = {"type": "function", "function": {"name": "find_product", "arguments": '{"q": "shirt"}'}}
    observations = episode.run_turn("openai", {"role": "assistant", "content": "", "tool_calls": [call] * 9})
    assert [o.ok for o in observations] == [True] * 4 + [False] * 5
    assert episode.end_reason == "call log cap reached: 4 calls recorded"
    assert len(episode.calls) == 5 and "4 later call(s) after the end" in episode.calls[-1].cut


def test_long_model_text_is_stored_cut_with_a_note(episode):
    episode.run_turn("openai", {"role": "assistant", "content": "word " * 30_000})
    stored = episode.messages[-1]["content"]
    assert stored.endswith("…[cut by the harness]") and len(stored) < 70_000
    assert any("model content of 150,000 bytes cut" in note for note in episode.notes)


def test_an_unusable_call_id_is_replaced(episode):
    observation = episode.call("find_product", {"q": "shirt"}, call_id="id-\ud800")
    assert observation.call_id == "call_1" and "call id was not usable" in episode.calls[0].cut
    observation = episode.call("find_product", {"q": "shirt"}, call_id="x" * 500)
    assert observation.call_id == "call_2"
    writable(episode)


def test_a_surrogate_decoded_inside_a_tool_reaches_neither_the_agent_nor_the_record(episode, rich_product):
    """A JSON-string argument is decoded by the tool itself, after the argument check."""
    requirements = '{"colour \\ud800": "black"}'
    observation = episode.call(
        "check_product_match", {"product_id": rich_product["product_id"], "requirements": requirements}
    )
    assert observation.ok and observation.result["mismatches"] == ["colour \ufffd"]
    observation.text.encode()
    assert episode.calls[0].result == observation.result and writable(episode)
