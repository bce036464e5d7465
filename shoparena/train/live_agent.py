"""The model being trained, as an agent the eval runner can run (SPEC §9.4): probes sample episodes
with the in-memory policy, mid-training, through the real harness — no checkpoint written and loaded
back.

`live_agent(model, tokenizer, name)` registers the pair under `live:NAME` for as long as the context
lasts; `run_eval` with `executor="inline"` then builds an `HFAgent` over it (same prompt rendering,
same generation, same protocol parsing as `hf:DIR`), so a probe sees exactly what an eval of the saved
checkpoint would. The model is switched to eval mode (no dropout) while the context is open and put
back in the mode it was in afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from shoparena.agents.base import AGENT_KINDS
from shoparena.agents.hf_agent import HFAgent

KIND = "live"
_LIVE: dict[str, tuple[Any, Any]] = {}
"""name → (tokenizer, model) of the live agents open now (this process only: inline runs)."""


class LiveHFAgent(HFAgent):
    """An `HFAgent` over a model already in memory (not loaded, not moved, not freed by `close`)."""

    kind = KIND

    def __init__(self, name: str, **options: Any):
        if name not in _LIVE:
            raise ValueError(
                f"live agent {name!r} is not open; live agents exist only inside `live_agent(...)` and run "
                "inline (executor inline), in the process that holds the model"
            )
        tokenizer, model = _LIVE[name]
        options.setdefault("device", str(next(model.parameters()).device))
        self._live = (tokenizer, model)
        super().__init__(name, **options)

    def _load(self, path: str, dtype: str, trust_remote_code: bool) -> tuple[Any, Any]:
        return self._live

    def close(self) -> None:
        self.model = None  # the trainer owns the model: drop the reference, free nothing


def make_live_agent(target: str, **options: Any) -> LiveHFAgent:
    return LiveHFAgent(target, **options)


@contextmanager
def live_agent(model: Any, tokenizer: Any, name: str) -> Iterator[str]:
    """`live:NAME` as an agent spec while the context is open; the model in eval mode meanwhile."""
    was_training = bool(getattr(model, "training", False))
    _LIVE[name] = (tokenizer, model)
    AGENT_KINDS[KIND] = f"{__name__}:make_live_agent"
    model.eval()
    try:
        yield f"{KIND}:{name}"
    finally:
        _LIVE.pop(name, None)
        if was_training:
            model.train()
