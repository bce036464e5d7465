"""The SDK's u16 conversion of weights, reproduced (and cross-checked with the SDK when installed)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.arena.competition.chain import U16_MAX, to_u16


def test_max_upscale_round_half_to_even_and_drop_zeros() -> None:
    # 0.25 / 0.5 × 65535 = 32767.5 → 32768 (half to even); 0.125 / 0.5 × 65535 = 16383.75 → 16384.
    u16 = to_u16([0, 3, 5, 9, 11], [0.5, 0.25, 0.125, 0.125, 1e-9])
    assert (u16.uids, u16.values) == ([0, 3, 5, 9], [65535, 32768, 16384, 16384])


def test_nothing_to_emit_and_refusals() -> None:
    assert to_u16([], []).uids == [] and to_u16([1, 2], [0.0, 0.0]).values == []
    with pytest.raises(ValueError, match="2 uids but 1 weights"):
        to_u16([1, 2], [1.0])
    with pytest.raises(ValueError, match="finite and ≥ 0"):
        to_u16([1], [-0.1])
    with pytest.raises(ValueError, match=r"uids must lie in 0\.\.65535"):
        to_u16([70000], [1.0])


weights = st.lists(st.floats(0, 1, allow_subnormal=False), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(weights)
def test_the_sdk_maps_our_values_onto_themselves(values: list[float]) -> None:
    # The adapter hands the SDK u16 integers; converting them again must change nothing.
    u16 = to_u16(list(range(len(values))), values)
    if u16.values:
        assert max(u16.values) == U16_MAX
        again = to_u16(u16.uids, [float(v) for v in u16.values])
        assert again == u16
