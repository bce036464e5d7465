"""The chain's integer weights: what `set_weights` actually writes.

Subtensor stores a validator's weights as u16 values. The Bittensor SDK converts float weights in
`bittensor.utils.weight_utils.convert_weights_and_uids_for_emit` (SDK 9/10; `intents.weights.normalize`
in SDK 11 does the same): max-upscale so the largest weight is 1, multiply by 65535, round (Python's
round, half to even), drop the zeros. This module reproduces that arithmetic on float64 weights
without importing the SDK, so the local ledger records the very values the chain holds, with or
without the `[chain]` extra installed.

The adapter hands the SDK these u16 integers rather than the floats: the SDK's own conversion maps
them onto themselves (the largest is 65535 already), and a commit's hash — which the SDK computes
from the values it is given — then covers exactly what the reveal will send.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

U16_MAX = 65535


class U16Weights(BaseModel):
    """Uids and their u16 values, as emitted (zero values dropped)."""

    uids: list[int]
    values: list[int]


def to_u16(uids: Sequence[int], weights: Sequence[float]) -> U16Weights:
    """The SDK's conversion of float weights over uids to u16 values (see the module docstring).

    All-zero (or empty) weights give nothing to emit; negative weights or uids, or mismatched lengths,
    are refused as the SDK refuses them."""
    if len(uids) != len(weights):
        raise ValueError(f"{len(uids)} uids but {len(weights)} weights")
    if not uids:
        return U16Weights(uids=[], values=[])
    floats = np.asarray(weights, dtype=np.float64).tolist()
    ints = np.asarray(uids, dtype=np.int64).tolist()
    if not all(math.isfinite(w) for w in floats) or min(floats) < 0:
        raise ValueError(f"weights must be finite and ≥ 0 on chain, got {min(floats)}")
    if min(ints) < 0 or max(ints) > U16_MAX:
        raise ValueError(f"uids must lie in 0..{U16_MAX}, got {min(ints)}..{max(ints)}")
    if sum(floats) == 0:
        return U16Weights(uids=[], values=[])
    top = float(max(floats))
    kept_uids: list[int] = []
    values: list[int] = []
    for uid, weight in zip(ints, floats, strict=True):
        value = round(weight / top * U16_MAX)
        if value != 0:
            kept_uids.append(uid)
            values.append(value)
    return U16Weights(uids=kept_uids, values=values)
