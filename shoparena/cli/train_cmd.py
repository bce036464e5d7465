"""`shoparena train …`: the post-training stages (SPEC §9). Thin: each command builds its stage's config
(config file, then command-line flags on top) and calls the stage's `run_<stage>`.

Every stage registers through `train_stage.stage_command`, here and in the other train CLI modules,
which `register` calls on `group`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from shoparena.cli.common import fail, say
from shoparena.cli.model_options import command_from_models
from shoparena.cli.train_stage import stage_command

group = typer.Typer(
    name="train",
    help=(
        "Post-train a causal LM on the corpus: LoRA SFT, rejection sampling, teacher SFT, KTO, Dr. GRPO.\n\n"
        "Try it on a CPU: `shoparena train tiny-model --out tiny/`, then "
        "`shoparena train sft --corpus corpus/ --model tiny/ --out runs/sft --max-steps 20`."
    ),
    no_args_is_help=True,
)


TINY_HELP = """Write a tiny random-weight Qwen3 checkpoint with a freshly trained tokenizer and Qwen3's chat
template: every training stage and `shoparena eval --agent hf:DIR` run on it offline, on a CPU.

Example:
  shoparena train tiny-model --out tiny/
"""


def tiny_model_command(**values: Any) -> None:
    from pydantic import ValidationError

    from shoparena.cli.model_options import model_values, validation_message
    from shoparena.train.tiny_model import TinyModelConfig, make_tiny_model

    try:
        config = TinyModelConfig(**model_values(TinyModelConfig, values))
        made = make_tiny_model(config)
    except ValidationError as exc:
        raise fail(validation_message(TinyModelConfig, exc)) from None
    except ValueError as exc:
        raise fail(str(exc)) from None
    say(f"tiny model: {made.path} ({made.parameters:,} parameters, vocabulary {made.vocab_size})")


SFT_HELP = """LoRA SFT on a corpus with the assistant-only loss mask (proved in mask_check.json).

Writes adapter/ (+ merged/ with --merge), config.resolved.json, metrics.jsonl, mask_check.json,
dropped.jsonl and report.md in --out; with --lr-sweep one sub-directory per learning rate under sweep/
and the winner (lowest held-out loss) in sweep.json.

Examples:
  shoparena train sft --corpus corpus/ --model tiny/ --out runs/sft --max-steps 20
  shoparena train sft --config configs/paper/sft.yaml --corpus corpus/ --model Qwen3-4B/ --out runs/sft
"""


def _run_sft(config: Any) -> Any:
    from shoparena.train.sft import run_sft

    return run_sft(config)


PRM_HELP = """A process-reward head on the per-axis rule decomposition: at each decision point
of a trajectory it predicts how good the best candidate seen so far is (its rule score and its title,
price, service and SKU/attribute ratios) from the conversation alone, with no reward at hand.

The labels come from the trajectories, their problems' rewards and the catalogue; the head is a linear
layer on the frozen base model's last hidden state. Writes head/ (head.pt, prm.json), metrics.jsonl,
report.md (eval MAE against the train mean's, last-step AUC) and config.resolved.json in --out.

Examples:
  shoparena train prm --model tiny/ --trajectories runs/pipeline --problems bank.jsonl --catalog cat/ --out runs/prm
  shoparena train prm --config prm.yaml --out runs/prm --epochs 50
"""


def _run_prm(config: Any) -> Any:
    from shoparena.train.prm import run_prm

    return run_prm(config)


PROOF_HELP = """The learning proof: generate a catalogue and problems, play the concise reference teacher,
build the corpus, train a Qwen3-shaped model from scratch (full fine-tuning) for the budget, and evaluate
it held-out through `shoparena eval --agent hf:` (greedy, strict), the untrained base first; then,
when the preset or --rs-problems / --grpo-steps ask for them, rejection sampling and Dr. GRPO on top.

Writes proof.json (held-out success per bucket with 95% intervals for base, SFT, RS, GRPO, the loss
curve, tokens/s, parameters, wall time, machine) and checkpoint/ in --out. Presets: tiny (seconds,
plumbing), cpu (a 2-core machine, 40 minutes of training), gpu (one H100, under 10 minutes in all).

Examples:
  shoparena train proof --out proof/ --preset tiny
  shoparena train proof --out proof/ --preset cpu --minutes 40
  shoparena train proof --out proof/ --preset gpu --device cuda --workers 8
  shoparena train proof --out proof/ --on-top --rs-problems 200 --grpo-steps 10
"""


def proof_command(**values: Any) -> None:
    from pydantic import ValidationError

    from shoparena.cli.model_options import model_values, validation_message
    from shoparena.train.proof import PROOF_FILE, ProofConfig, run_proof

    try:
        config = ProofConfig(**model_values(ProofConfig, values))
        proof = run_proof(config, say)
    except ValidationError as exc:
        raise fail(validation_message(ProofConfig, exc)) from None
    except (ValueError, RuntimeError) as exc:
        raise fail(str(exc)) from None
    for stage, buckets in proof["heldout"].items():
        for bucket, r in buckets.items():
            say(f"{stage:5} {bucket:8} {r['success']}/{r['n']} = {r['rate']:.3f}  95% CI {r['ci95']}")
    say(f"wrote {config.out / PROOF_FILE} and {config.out / 'checkpoint'}")


def register(app: typer.Typer) -> None:
    from shoparena.cli import train_sampling_cmd
    from shoparena.train.sft import SFTStageConfig
    from shoparena.train.tiny_model import TinyModelConfig

    command_from_models(group, "tiny-model", (TinyModelConfig,), tiny_model_command, TINY_HELP)
    stage_command(group, "sft", SFTStageConfig, _run_sft, SFT_HELP)
    from shoparena.train.proof import ProofConfig

    command_from_models(group, "proof", (ProofConfig,), proof_command, PROOF_HELP)
    from shoparena.train.prm import PRMStageConfig

    stage_command(group, "prm", PRMStageConfig, _run_prm, PRM_HELP)

    @group.command("prm-score")
    def prm_score_cmd(
        head: Annotated[
            Path, typer.Option("--head", help="The head directory `train prm` wrote (OUT/head).")
        ],
        inputs: Annotated[
            list[Path],
            typer.Option(
                "--input", "-i", metavar="<path>", help="A run directory or trajectories JSONL (repeatable)."
            ),
        ],
        out: Annotated[
            Path, typer.Option("--out", "-o", help="Step predictions, one record a line (JSONL).")
        ],
        near_misses: Annotated[
            int,
            typer.Option(
                "--near-misses", min=0, help="List this many failed episodes the head rated highest."
            ),
        ] = 5,
    ) -> None:
        """Score trajectories step by step with a trained process-reward head (no reward needed).

        Each output line is a record's id, problem, outcome and, per decision point, the predicted rule
        score and per-axis ratios of the best candidate seen so far. Near misses — failed episodes whose
        last prediction is high: the agent had seen a good candidate and did not recommend it — are
        listed at the end.

        Examples:
          shoparena train prm-score --head runs/prm/head -i firehose.jsonl -o steps.jsonl
        """
        from shoparena.cli.common import progress_bar
        from shoparena.corpus.sources import SourceError, resolve_inputs
        from shoparena.train.prm import HEAD_CONFIG, score_file

        if not (head / HEAD_CONFIG).is_file():
            raise fail(
                f"{head}: not a head directory (no {HEAD_CONFIG}); `shoparena train prm` writes OUT/head"
            )
        try:
            resolve_inputs(inputs)
        except SourceError as exc:
            raise fail(str(exc)) from None
        try:
            with progress_bar("prm-score", None) as advance:
                scored = score_file(head, inputs, out, progress=advance)
        except (OSError, ValueError) as exc:
            raise fail(str(exc)) from None
        say(
            f"scored {len(scored)} trajectories ({sum(len(s.steps) for s in scored)} decision points) → {out}"
        )
        misses = sorted(
            (s for s in scored if s.success is False and s.last_rule is not None),
            key=lambda s: -(s.last_rule or 0),
        )
        for item in misses[:near_misses]:
            say(
                f"  near miss: {item.record_id} ({item.problem_id}) predicted rule {item.last_rule:.2f}, failed"
            )

    train_sampling_cmd.register(group)
    from shoparena.cli import train_grpo_cmd, train_pipeline_cmd

    train_grpo_cmd.register(group)
    train_pipeline_cmd.register(group)
    app.add_typer(group)
