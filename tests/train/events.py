"""TensorBoard event files read back by TensorBoard itself (the `--report-to tensorboard` tests)."""

from __future__ import annotations

from pathlib import Path


def scalars(directory: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in the TensorBoard event files under `directory`, by tag: (step, value) pairs."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    found: dict[str, list[tuple[int, float]]] = {}
    runs = {path.parent for path in directory.rglob("events.out.tfevents.*")}
    assert runs, f"no event file under {directory}"
    for run in runs:
        accumulator = EventAccumulator(str(run))
        accumulator.Reload()
        for tag in accumulator.Tags()["scalars"]:
            found[tag] = [(e.step, e.value) for e in accumulator.Scalars(tag)]
    return found
