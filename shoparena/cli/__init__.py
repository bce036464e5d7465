"""The `shoparena` command: a thin Typer layer; every command delegates to a stage's Python API."""

from __future__ import annotations

import warnings

import typer

from shoparena.agents.base import one_line_warning
from shoparena.cli import (
    arena_cmd,
    catalog_cmd,
    corpus_cmd,
    eval_cmd,
    harness_cmd,
    judge_cmd,
    keys_cmd,
    loop_cmd,
    miner_cmd,
    model_cmd,
    problems_cmd,
    score_cmd,
    store_cmd,
    train_cmd,
    validator_cmd,
    view_cmd,
)
from shoparena.cli.help_text import reflow_app

app = typer.Typer(
    name="shoparena",
    help=(
        "An open agent arena for agentic commerce.\n\n"
        "The whole system in one command: `shoparena loop --out demo-out/loop` (an arena season, its "
        "firehose, a corpus, post-training, the distilled agent raced, one report). One piece at a time: "
        '`shoparena catalog build --products 20000 --out cat/`, then `shoparena search cat/ "wireless earbuds"`.'
    ),
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)

catalog_cmd.register(app)
harness_cmd.register(app)
problems_cmd.register(app)
score_cmd.register(app)
store_cmd.register(app)
judge_cmd.register(app)
corpus_cmd.register(app)
eval_cmd.register(app)
view_cmd.register(app)
keys_cmd.register(app)
arena_cmd.register(app)
miner_cmd.register(app)
validator_cmd.register(app)
train_cmd.register(app)
model_cmd.register(app)
loop_cmd.register(app)
reflow_app(app)


def main() -> None:
    warnings.showwarning = one_line_warning
    app()
