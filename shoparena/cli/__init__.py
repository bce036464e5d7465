"""The `shoparena` command: a thin Typer layer; every command delegates to a stage's Python API."""

from __future__ import annotations

import typer

from shoparena import __version__
from shoparena.cli.lazy import LazyGroup

# Every top-level command: the module whose `register(app)` defines it and the first paragraph of its
# help, which `shoparena --help` shows without importing the module (see shoparena/cli/lazy.py;
# tests/cli/test_lazy_cli.py checks both against the modules). The order is the order of the help.
COMMANDS: dict[str, tuple[str, str]] = {
    "search": ("catalog_cmd", "Search a catalogue exactly as the harness's find_product tool does."),
    "product": (
        "catalog_cmd",
        "Show products as the view_product_information tool does (no title or price, as upstream).",
    ),
    "tools": ("harness_cmd", "Show the tools a profile gives the agent, with their parameters."),
    "score": (
        "score_cmd",
        "Score recommendations: ASR, CAR, per-axis and per-bucket, with confidence intervals.",
    ),
    "judge": (
        "judge_cmd",
        "Add a reasoning-judge verdict to each trajectory; print the gate distribution, q and coeff.",
    ),
    "eval": (
        "eval_cmd",
        "Evaluate an agent: trajectories.jsonl, metrics.json, report.md and report.html in --out.",
    ),
    "report": (
        "eval_cmd",
        "Compare runs side by side: variant × ASR with per-bucket columns and notes (the paper's Table 1).",
    ),
    "view": ("view_cmd", "Look at a run's episodes: the per-problem table, or one episode turn by turn."),
    "loop": (
        "loop_cmd",
        "The closed loop (what `make demo` runs): season → firehose → corpus → training → the distilled "
        "agent raced.",
    ),
    "catalog": ("catalog_cmd", "Build and inspect product catalogues (generated or upstream-format)."),
    "problems": (
        "problems_cmd",
        "Generate, validate and summarise problem files: ShoppingBench JSONL, the arena's JSON list, and "
        "frozen shoparena suites (the format is detected from the content).",
    ),
    "store": (
        "store_cmd",
        "The trajectory store: every evaluation kept append-only with its provenance, on a SQLite file "
        "(default ./shoparena.db, or $SHOPARENA_STORE) or PostgreSQL (--store postgresql://user@host/db).",
    ),
    "corpus": ("corpus_cmd", "Turn trajectories into a training corpus."),
    "keys": (
        "keys_cmd",
        "sr25519 keys for signing arena requests (a key file, or an existing Bittensor wallet's hotkey).",
    ),
    "arena": ("arena_cmd", "Run an arena: `init` a directory, `register` hotkeys, `serve` the signed API."),
    "miner": ("miner_cmd", "Submit an agent file to an arena (signed) and follow its evaluation."),
    "validator": (
        "validator_cmd",
        "Evaluate an arena's submissions: claim a job, run it in the sandbox, judge, post.",
    ),
    "train": (
        "train_cmd",
        "Post-train a causal LM on the corpus: LoRA SFT, rejection sampling, teacher SFT, KTO, Dr. GRPO.",
    ),
    "model": (
        "model_cmd",
        "Serve a trained checkpoint so miner files can call it through the inference proxy.",
    ),
}


class ShoparenaGroup(LazyGroup):
    lazy = COMMANDS


def _print_version(value: bool) -> None:
    if value:
        print(f"shoparena {__version__}")
        raise typer.Exit()


app = typer.Typer(
    name="shoparena",
    cls=ShoparenaGroup,
    help=(
        "An open agent arena for agentic commerce.\n\n"
        "The whole system in one command: `shoparena loop --out demo-out/loop` (an arena season, its "
        "firehose, a corpus, post-training, the distilled agent raced, one report). One piece at a time: "
        '`shoparena catalog build --products 20000 --out cat/`, then `shoparena search cat/ "wireless earbuds"`.'
    ),
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", "-V", help="Print the version and exit.", is_eager=True, callback=_print_version
    ),
) -> None:
    pass


def main() -> None:
    import warnings

    from shoparena.records.user_warning import one_line_warning

    warnings.showwarning = one_line_warning
    app()
