"""The adapter against the real Bittensor SDK (the `[chain]` extra), offline: our u16 conversion equals
the SDK's `convert_weights_and_uids_for_emit`, and the classic `Subtensor` methods the adapter (and the
fake subtensor of the other tests) call exist with the keyword names we pass.

The SDK runs in a child process: importing it sets up its own logging machinery, which must not leak
into the other tests of this worker.
"""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys

import pytest

from shoparena.arena.competition.chain import to_u16

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("bittensor") is None,
    reason="the [chain] extra (bittensor SDK) is not installed: pip install -e '.[chain]'",
)

PROBE = r"""
import inspect, json, sys
import numpy as np
from bittensor.core.subtensor import Subtensor
from bittensor.utils.weight_utils import convert_weights_and_uids_for_emit

vectors = json.load(sys.stdin)
converted = []
for weights in vectors:
    uids = np.arange(len(weights), dtype=np.int64)
    converted.append(convert_weights_and_uids_for_emit(uids, np.array(weights, dtype=np.float64)))
methods = ["metagraph", "commit_reveal_enabled", "set_weights", "commit_weights", "reveal_weights"]
signatures = {m: list(inspect.signature(getattr(Subtensor, m)).parameters) for m in methods}
json.dump({"converted": converted, "signatures": signatures}, sys.stdout)
"""


def vectors() -> list[list[float]]:
    rng = random.Random(13)
    out = [
        [0.5, 0.25, 0.125, 0.125],
        [1.0],
        [0.75, 0.25 * 2 / 3, 0.25 / 3],
        [1e-9, 1.0, 0.5 / 65535, 1.5 / 65535, 2.5 / 65535],
    ]
    for _ in range(500):
        n = rng.randint(1, 64)
        out.append(
            [
                rng.choice([0.0, rng.random(), rng.random() ** 8, 0.5 / 65535 * rng.randint(0, 4)])
                for _ in range(n)
            ]
        )
    return [v for v in out if sum(v) > 0]


def test_u16_conversion_and_subtensor_signatures_match_the_sdk() -> None:
    batch = vectors()
    done = subprocess.run(
        [sys.executable, "-c", PROBE], input=json.dumps(batch), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout)
    for weights, (sdk_uids, sdk_values) in zip(batch, answer["converted"], strict=True):
        ours = to_u16(list(range(len(weights))), weights)
        assert (ours.uids, ours.values) == (sdk_uids, sdk_values), weights
    signatures = answer["signatures"]
    assert {"netuid"} <= set(signatures["metagraph"]) and "netuid" in signatures["commit_reveal_enabled"]
    common = {
        "wallet",
        "netuid",
        "uids",
        "weights",
        "version_key",
        "wait_for_inclusion",
        "wait_for_finalization",
    }
    for method in ("set_weights", "commit_weights", "reveal_weights"):
        assert common <= set(signatures[method]), (method, signatures[method])
    assert "salt" in signatures["commit_weights"] and "salt" in signatures["reveal_weights"]
