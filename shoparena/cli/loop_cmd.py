"""`shoparena loop`: the closed loop in one command (`shoparena.loop`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shoparena.cli.common import fail, quiet_libraries, say

LOOP_HELP = """The closed loop (what `make demo` runs): season → firehose → corpus → training → the distilled
agent raced.

An arena season → its judged firehose → a corpus → post-training → the distilled model back in the
arena as a miner → one more race → one report (DIR/report.html and DIR/report.md).

1 season: a competition season on a simulated clock through the real signed API, admission, the
sandbox, validators, the offline judge, the trajectory store, races and weights.

2 firehose: every stored trajectory exported (what /v1/trajectories serves).

3 corpus: `corpus rewrite` of the code-driven traces (corpus.rewrite), then `corpus build` of the
firehose and those rows (gates, dedup, axis split, leak-guarded train/eval split) with the final race's
problem pool kept out.

4 train: `train pipeline` (the tiny random Qwen3 by default: plumbing, not learning); every
checkpoint evaluated on the corpus' held-out problems. With `train.recipe: proof`
(configs/loop/learn.yaml): the learning proof's recipe, a model from scratch trained on the concise
teacher's rows, evaluated on generated held-out problems.

5 season agents: the season's racing miner files on the same held-out problems.

6 final race: the last checkpoint served as an OpenAI-compatible model and entered as a miner that
calls it through the arena's inference proxy, raced against the season's agents.

7 report: the season, the funnel, training curves, Table 1, where the distilled agent placed.

With no --config the embedded defaults run: the demo (8 miners, 2 validators, 3 days, every stage 2
steps on the tiny model; about 2 minutes on 2 cores). A config names only what it changes; see
configs/loop/demo.yaml, configs/loop/learn.yaml and configs/loop/gpu.yaml. Re-running with the same
--out resumes at the first stage that did not finish. The console shows the stages; what libraries
and child processes print (warnings, progress bars, server logs) goes to DIR/loop.log.

Examples:

  shoparena loop --out demo-out/loop

  shoparena loop --config configs/loop/learn.yaml --out learn-out

  shoparena loop --config configs/loop/gpu.yaml --out runs/loop
"""


def register(app: typer.Typer) -> None:
    @app.command("loop", help=LOOP_HELP)
    def loop_command(
        out: Annotated[Path, typer.Option("--out", help="Output directory (re-running resumes it).")],
        config: Annotated[
            Path | None,
            typer.Option("--config", help="Loop config YAML/JSON (default: the embedded demo settings)."),
        ] = None,
    ) -> None:
        quiet_libraries()
        from shoparena.loop.config import LoopConfig
        from shoparena.loop.runner import LoopError, run_loop
        from shoparena.records.options import ConfigError

        try:
            loaded = LoopConfig.from_file(config)
            result = run_loop(loaded, out, say)
        except (ConfigError, LoopError, ValueError, FileNotFoundError) as exc:
            raise fail(str(exc)) from None
        except KeyboardInterrupt:
            raise fail(f"loop interrupted; re-run the same command to resume from {out}", 130) from None
        say(f"loop: {len(result.stages)} stage(s) in {result.seconds:.0f} s")
        say(f"report: {result.report_html} (and {result.report_md})")
