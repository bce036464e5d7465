"""The recommend-rate probe of the KTO stage (SPEC §9.4): sample a fixed probe set with the current
policy, mid-training, and stop training when too few episodes recommend anything.

`Probe.run` runs the in-memory model (eval mode: no dropout) as an agent through the real harness
(`train.live_agent`, `run_eval` inline, strictly scored) into its own run directory per probe, and
counts the episodes whose verified call log holds a `recommend_product`. `make_probe_callback` wraps it
as a `transformers.TrainerCallback`: every `every` optimiser steps it logs the rate and, below the
threshold, stops training and puts the LoRA adapter back to the last probed state that passed (the
state at the start — the input model — when none did).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from shoparena.problems.models import Problem
from shoparena.train.rollouts import Sampling, eval_config, read_records


class ProbeResult(BaseModel):
    step: int
    episodes: int
    recommended: int
    rate: float
    run_dir: Path


def recommend_emitted(record: dict) -> bool:
    """The episode's calls include a recommend_product (the verified call log, not the model's claims)."""
    return any(call.get("name") == "recommend_product" for call in record.get("calls") or [])


class Probe:
    """The probe set and how its episodes are sampled (greedy, the paper's turn cap)."""

    def __init__(self, catalog: Path, problems: list[Problem], out: Path, sampling: Sampling):
        self.catalog = catalog
        self.problems = problems
        self.out = out
        self.sampling = sampling

    def run(self, model: Any, tokenizer: Any, step: int) -> ProbeResult:
        from shoparena.eval.runner import run_eval
        from shoparena.train.live_agent import live_agent

        run_dir = self.out / f"step-{step:06d}"
        with live_agent(model, tokenizer, f"policy-step-{step}") as spec:
            run_eval(eval_config(spec, self.catalog, self.problems, run_dir, self.sampling))
        records = list(read_records(run_dir / "trajectories.jsonl"))
        recommended = sum(recommend_emitted(r) for r in records)
        return ProbeResult(
            step=step,
            episodes=len(records),
            recommended=recommended,
            rate=recommended / len(records) if records else 0.0,
            run_dir=run_dir,
        )


def make_probe_callback(probe: Probe, every: int, threshold: float, log: Any):
    """A `TrainerCallback`: probe every `every` steps, log the rate, stop below `threshold` and keep the
    adapter of the last passing probe (the start, step 0, passes by definition: it is the input model)."""
    from transformers import TrainerCallback

    class RecommendRateProbe(TrainerCallback):
        def __init__(self) -> None:
            self.results: list[ProbeResult] = []
            self.stopped_at: int | None = None
            self.restored_to = 0
            self._good: dict[str, Any] | None = None

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            self._good = _adapter_state(model)

        def on_step_end(self, args, state, control, model=None, processing_class=None, **kwargs):
            step = state.global_step
            if step % every:
                return
            result = _shared(probe, model, processing_class, step)
            self.results.append(result)
            stop = result.rate < threshold
            log(
                {
                    "step": step,
                    "probe/recommend_rate": result.rate,
                    "probe/episodes": result.episodes,
                    "probe/threshold": threshold,
                    "probe/stop": stop,
                }
            )
            if stop:
                self.stopped_at = step
                control.should_training_stop = True
                _restore_adapter(model, self._good)
            else:
                self._good = _adapter_state(model)
                self.restored_to = step

    return RecommendRateProbe()


def _adapter_state(model: Any) -> dict[str, Any]:
    from peft import get_peft_model_state_dict

    return {k: v.detach().to("cpu", copy=True) for k, v in get_peft_model_state_dict(model).items()}


def _restore_adapter(model: Any, state: dict[str, Any] | None) -> None:
    from peft import set_peft_model_state_dict

    if state is not None:
        set_peft_model_state_dict(model, state)


def _shared(probe: Probe, model: Any, tokenizer: Any, step: int) -> ProbeResult:
    """The probe's result on every rank: under a distributed launch (DDP) rank 0 alone runs the episodes
    (one run directory, one set of harness calls) and broadcasts the rate, so all ranks stop together.
    (Sharded models — FSDP, ZeRO-3 — cannot generate on one rank: probe those runs from a single process.)"""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return probe.run(model, tokenizer, step)
    import torch

    result = probe.run(model, tokenizer, step) if dist.get_rank() == 0 else None
    device = next(model.parameters()).device
    shared = torch.tensor(
        [result.rate, result.episodes, result.recommended] if result else [0.0, 0.0, 0.0], device=device
    )
    dist.broadcast(shared, src=0)
    rate, episodes, recommended = shared.tolist()
    return result or ProbeResult(
        step=step, episodes=int(episodes), recommended=int(recommended), rate=rate, run_dir=probe.out
    )
