"""Where a training stage reports besides its own `metrics.jsonl`: `--report-to none|tensorboard|wandb`.

The stages built on TRL trainers (LoRA SFT and the SFT inside rs/teacher, KTO, GRPO) hand the choice to
TRL as its own `report_to`, so what TensorBoard or Weights & Biases shows is what TRL logs (loss, learning
rate, grad norm, TRL's reward and KL numbers), the same as any TRL user sees. `trainer_args` gives those
arguments, `direct_trainer` points TRL's TensorBoard callback at the stage directory (by default TRL
writes under the trainer's scratch `output_dir`, which the stage deletes). The hand-written loops
(`--mode full` SFT, the learning proof's SFT and RS, the PRM head) report through `Reporter`, which writes
the same lines they append to metrics.jsonl.

Layout: TensorBoard event files under `OUT/tensorboard/<run>/` (`tensorboard --logdir OUT`); wandb runs
under `OUT/wandb/`. wandb runs offline (`WANDB_MODE=offline`, synced later with `wandb sync`) unless
`WANDB_MODE` is set or an API key is configured (`WANDB_API_KEY` or `wandb login`'s ~/.netrc entry), so a
run on a machine without network never blocks on a login prompt. `metrics.jsonl` is written either way.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from shoparena.records.options import CliFlag

ReportTo = Literal["none", "tensorboard", "wandb"]
REPORT_TO_METAVAR = "<str>"
ReportToOption = Annotated[ReportTo, CliFlag(metavar=REPORT_TO_METAVAR)]
"""The field type of `--report-to` (a short metavar: the help names the choices)."""
REPORT_TO_HELP = (
    "Also report to: none, tensorboard (OUT/tensorboard) or wandb (OUT/wandb; offline without an "
    "account). metrics.jsonl is written either way."
)
TENSORBOARD_DIR = "tensorboard"
WANDB_DIR = "wandb"
WANDB_PROJECT = "shoparena"


def _wandb_logged_in() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    netrc = Path(os.environ.get("NETRC", Path.home() / ".netrc"))
    try:
        return "api.wandb.ai" in netrc.read_text()
    except OSError:
        return False


def prepare(report_to: ReportTo, out: Path) -> None:
    """Check the reporting backend is installed (a clear error before any training) and, for wandb,
    keep its files in OUT and run offline when no account is configured."""
    if report_to == "tensorboard":
        try:
            import tensorboard  # noqa: F401
        except ImportError:
            raise ValueError(
                "--report-to tensorboard needs the tensorboard package: pip install 'shoparena[report]'"
            ) from None
    elif report_to == "wandb":
        try:
            import wandb  # noqa: F401
        except ImportError:
            raise ValueError("--report-to wandb needs the wandb package: pip install wandb") from None
        (out / WANDB_DIR).mkdir(parents=True, exist_ok=True)
        os.environ["WANDB_DIR"] = str(out / WANDB_DIR)
        os.environ.setdefault("WANDB_PROJECT", WANDB_PROJECT)
        if "WANDB_MODE" not in os.environ and not _wandb_logged_in():
            os.environ["WANDB_MODE"] = "offline"


def run_name(stage: str, out: Path) -> str:
    return f"{stage}-{Path(out).name}"


def trainer_args(report_to: ReportTo, out: Path, stage: str) -> dict[str, Any]:
    """`report_to` and `run_name` for a TRL/transformers `TrainingArguments` (after `prepare`)."""
    prepare(report_to, out)
    return {"report_to": [] if report_to == "none" else [report_to], "run_name": run_name(stage, out)}


def direct_trainer(trainer: Any, out: Path, stage: str) -> None:
    """Point TRL's TensorBoard callback (when `report_to` has it) at `OUT/tensorboard/<run>`."""
    from transformers.integrations import TensorBoardCallback

    for callback in trainer.callback_handler.callbacks:
        if isinstance(callback, TensorBoardCallback):
            callback.logging_dir = str(Path(out) / TENSORBOARD_DIR / run_name(stage, out))


class Reporter:
    """For a stage's own training loop: each numeric field of a metrics line goes to TensorBoard or
    wandb at its `step`; `none` does nothing. Use as a context manager (closes the writer/run)."""

    def __init__(self, report_to: ReportTo, out: Path, stage: str, config: dict[str, Any] | None = None):
        self.report_to = report_to
        self._writer: Any = None
        self._run: Any = None
        prepare(report_to, out)
        if report_to == "tensorboard":
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=str(Path(out) / TENSORBOARD_DIR / run_name(stage, out)))
        elif report_to == "wandb":
            import wandb

            self._run = wandb.init(
                project=os.environ.get("WANDB_PROJECT", WANDB_PROJECT),
                name=run_name(stage, out),
                dir=str(Path(out) / WANDB_DIR),
                config=config or {},
                reinit="finish_previous",
            )

    def log(self, record: dict[str, Any], step: int | None = None) -> None:
        step = int(record.get("step", 0) if step is None else step)
        numbers = {
            f"train/{k}" if not k.startswith("eval") else k.replace("eval_", "eval/", 1): float(v)
            for k, v in record.items()
            if k != "step" and isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        }
        if self._writer is not None:
            for key, value in numbers.items():
                self._writer.add_scalar(key, value, step)
            self._writer.flush()
        if self._run is not None:
            self._run.log(numbers, step=step)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._run is not None:
            self._run.finish()
            self._run = None

    def __enter__(self) -> Reporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
