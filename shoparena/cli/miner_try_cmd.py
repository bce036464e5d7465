"""`shoparena miner new` and `shoparena miner try`: start a miner file from a working one, and see what
the arena would make of it before submitting (admission, the sandboxed strict evaluation, the judge,
the score against the qualifying threshold)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.markup import escape
from rich.table import Table

from shoparena.arena.participants.tryout import TryoutSettings
from shoparena.cli.common import console, fail, print_json, say
from shoparena.cli.model_options import command_from_models, model_values
from shoparena.records.options import CliFlag, SimilarityName
from shoparena.season.roster import miner_source

TEMPLATES = {
    "model": "agentic_model",
    "pipeline": "narrated_pipeline",
    "keyword": "keyword_verify",
}
"""`miner new --template` → the season's miner file it copies (each one races in `arena simulate`)."""
Template = Literal["model", "pipeline", "keyword"]
EXIT_REJECTED = 1
EXIT_BELOW_THRESHOLD = 3
"""2 is every command's usage error (`fail`); a file that runs but would not qualify gets its own code."""


def note(item, row=None) -> str:
    """Why the problem failed, in the arena's terms: the error (with the line of the file that raised),
    else the constraints the recommendation failed (`budget`, `price` …) and a judge gate it failed."""
    if item.error:
        return row.error if row is not None and row.error else item.error.splitlines()[0]
    parts = []
    normal = item.end_reason is not None and item.end_reason.startswith("terminated")
    if not normal and item.end_reason:
        parts.append(item.end_reason)
    if row is not None and row.failing:
        parts.append("failed " + ", ".join(row.failing))
    if item.judge_gate and item.judge_gate != "passed":
        parts.append(f"judge: failed {item.judge_gate}")
    return "; ".join(parts)


def outcome_table(report, rows: dict | None = None) -> Table:
    """One row per problem; `rows` (problem id → `EpisodeRow` of the run's records) names the failing
    constraints and the line of the miner's file that raised."""
    rows = rows or {}
    table = Table(title="per problem", title_justify="left")
    table.add_column("problem", no_wrap=True)
    for column in ("bucket", "ok", "rule", "q", "steps"):
        table.add_column(column, justify="left" if column == "bucket" else "right", no_wrap=True)
    table.add_column("note")
    for item in report.outcomes:
        table.add_row(
            item.problem_id,
            item.bucket or "",
            "yes" if item.success else "no",
            "" if item.rule_score is None else f"{item.rule_score:.2f}",
            "" if item.judge_quality is None else f"{item.judge_quality:.1f}",
            "" if item.steps_used is None else str(item.steps_used),
            escape(note(item, rows.get(item.problem_id))[:300]),
        )
    return table


def advice(report, episodes) -> list[str]:
    """What to work on, from what really happened: crashes first (a crashed problem scores 0 and is
    not judged), then timeouts, then the judge's first gate when most judged episodes failed it."""
    from shoparena.eval.episodes import error_kind

    outcomes = report.outcomes
    errors = [item for item in outcomes if item.error]
    lines = []
    if errors:
        kinds: dict[str, int] = {}
        for item in errors:
            kind = error_kind(item.error)
            kinds[kind] = kinds.get(kind, 0) + 1
        what = ", ".join(f"{kind} on {n}" for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
        lines.append(
            f"{len(errors)} of {len(outcomes)} problem(s) ended in an error ({what}): each scores 0 and is "
            "not judged — fix that first"
        )
        crashed = next((e for e in episodes if e.crash is not None and e.crash.miner_frames), None)
        if crashed is not None:
            lines.append(f"where {crashed.miner_file} raised (problem {crashed.row.problem_id}):")
            lines += ["  " + line for line in crashed.crash.miner_text(crashed.miner_file).splitlines()]
        elif kinds.get("timeout"):
            lines.append(
                "agent_main ran past the arena's per-problem time limit; make it return sooner (fewer "
                "calls, shorter model answers)"
            )
    gates = [item.judge_gate for item in outcomes if item.judge_gate]
    if gates and gates.count("reasoned") * 2 > len(gates):
        lines.append(
            "most judged episodes failed the judge's first gate (reasoned): the model must emit the tool "
            "calls and reason about their results (through miner_sdk.chat); code-made calls cap the "
            "coefficient at 0.3 + 0.7·0.1/0.8 ≈ 0.39 — see docs/miners.md"
        )
    return lines


def verdict(report) -> str:
    scores = report.scores
    q = "none judged" if scores.judge_quality is None else f"{scores.judge_quality:.3f}"
    coefficient = "–" if scores.coefficient is None else f"{scores.coefficient:.3f}"
    final = scores.final_score or 0.0
    line = (
        f"success rate {scores.successes}/{scores.problems} = {scores.asr:.3f} · judge q {q} → coefficient "
        f"{coefficient} · final score {final:.3f} (threshold {report.qualify_threshold:.2f})"
    )
    if report.qualifies:
        return f"[green]would qualify[/]: {line}"
    return f"[yellow]would not qualify[/]: {line}"


def register(miner_app: typer.Typer) -> None:
    @miner_app.command("new")
    def new_cmd(
        agent: Annotated[Path, typer.Argument(help="The miner file to write.")],
        template: Annotated[
            Template,
            typer.Option(
                "--template",
                help="model: the model decides every tool call through the inference proxy (axis A); "
                "pipeline: code searches and verifies, the model narrates (axis B); keyword: code only, "
                "no model.",
            ),
        ] = "model",
        force: Annotated[bool, typer.Option("--force", help="Overwrite AGENT when it exists.")] = False,
    ) -> None:
        """Write a working miner file to start from: one the arena admits and that races in
        `arena simulate`.

        Then edit it, and `shoparena miner try` it before you submit.

        Examples:
          shoparena miner new agent.py
          shoparena miner new agent.py --template pipeline
        """
        if agent.exists() and not force:
            raise fail(f"{agent} exists; choose another name or pass --force to overwrite it")
        stem = TEMPLATES[template]
        try:
            agent.write_text(miner_source(stem), encoding="utf-8")
        except OSError as exc:
            raise fail(f"{agent}: cannot write: {exc.strerror or exc}") from None
        say(f"wrote {agent} (the {template} template, from {stem}.py)")
        say(f"next: `shoparena miner try {agent}`, then `shoparena miner submit --key miner.json {agent}`")

    command_from_models(
        miner_app, "try", (TryCommandOptions, TryoutSettings), try_command, TRY_HELP, order=TRY_ORDER
    )


class TryCommandOptions(BaseModel):
    """The command's own options, beside the tryout's (`TryoutSettings`): the file, where the arena's
    settings come from, and how the report is shown."""

    model_config = ConfigDict(extra="forbid")

    agent: Annotated[Path, CliFlag(argument=True)] = Field(description="The agent file you would submit.")
    arena_dir: Path | None = Field(
        None,
        description="An arena directory (the operator's): its evaluation settings, qualifying threshold "
        "and, unless --problems is given, its catalogue and bank.",
    )
    similarity: Annotated[SimilarityName | None, CliFlag(type=str)] = Field(
        None, description="Title similarity, minilm or lexical \\[default: the arena's: minilm]."
    )
    as_json: Annotated[bool, CliFlag(flag="--json")] = Field(False, description="Print the report as JSON.")


TRY_ORDER = (
    "agent",
    "out",
    "arena_dir",
    "catalog",
    "problems",
    "practice_problems",
    "limit",
    "similarity",
    "judge",
    "sandbox",
    "workers",
    "inference_models",
    "as_json",
)
TRY_HELP = """See what the arena would make of AGENT.py before you submit it: admission, then the
validators' evaluation in the sandbox, the judge and the score against the qualifying threshold.

It runs the arena's own parts: the static analysis `miner submit` would meet, the evaluation
settings validators use (production-strict scoring, oro7 tools, 300 s a problem), the offline
reference models behind the inference proxy, the offline judge, the ledger's final score
(success rate × judge coefficient) and the competition's threshold (0.2 unless --arena-dir
says otherwise). Only the problems differ: the arena qualifies on a bank you never see, so the
default is a practice set generated on a generated catalogue (12 problems, made once).

A run is kept under OUT/ by the code's sha256: trying the same bytes again reprints it, and an
interrupted run resumes. Exit status: 0 would qualify, 1 admission rejects the file, 3 it runs
but scores under the threshold, 2 usage errors.

Examples:
  shoparena miner try agent.py
  shoparena miner try agent.py --limit 3 --similarity lexical
  shoparena miner try agent.py --catalog cat/ --problems suite.jsonl --workers 2
  shoparena miner try agent.py --arena-dir arena/ --json
  shoparena miner try agent.py --inference-models "qwen=http://127.0.0.1:8000/v1#Qwen/Qwen3-4B"
"""


def tryout_settings(values: dict[str, Any]) -> tuple[TryCommandOptions, TryoutSettings]:
    """The command's options and the tryout's settings (the arena directory's, then the similarity,
    on top); exits with one line on a bad value."""
    from shoparena.agents.base import AgentSpecError
    from shoparena.agents.miner.file_agent import parse_models
    from shoparena.arena.errors import ArenaError
    from shoparena.arena.models import EvaluationSettings
    from shoparena.arena.participants.tryout import arena_settings

    try:
        models = parse_models(values["inference_models"]) if values["inference_models"] else None
    except AgentSpecError as exc:
        raise fail(f"--inference-models: {exc}") from None
    try:
        command = TryCommandOptions(**model_values(TryCommandOptions, values))
        settings = TryoutSettings(**{**model_values(TryoutSettings, values), "inference_models": models})
        if command.arena_dir is not None:
            settings = arena_settings(command.arena_dir, settings)
        if command.similarity is not None:
            evaluation = EvaluationSettings.model_validate(
                {**settings.evaluation.model_dump(), "similarity": command.similarity}
            )
            settings = settings.model_copy(update={"evaluation": evaluation})
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise fail(f"{where}: {problem['msg']}") from None
    except ArenaError as exc:
        raise fail(str(exc)) from None
    return command, settings


def try_command(**values: Any) -> None:
    from shoparena.arena.errors import ArenaError
    from shoparena.arena.participants.tryout import try_agent
    from shoparena.cli.arena_cmd import print_violations
    from shoparena.cli.common import quiet_libraries
    from shoparena.cli.eval_cmd import live_progress

    quiet_libraries()
    command, settings = tryout_settings(values)
    agent, as_json = command.agent, command.as_json
    try:
        report = try_agent(
            agent, settings, progress=lambda: live_progress(not as_json), say=None if as_json else say
        )
    except ArenaError as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        say("interrupted: finished problems are kept; run the same command to resume")
        raise typer.Exit(130) from None
    if report.run_dir is not None:
        from shoparena.report import write_run_reports

        write_run_reports(report.run_dir, miner_file=str(agent))
    if as_json:
        print_json(
            {**report.model_dump(mode="json"), "admitted": report.admitted, "qualifies": report.qualifies}
        )
    elif not report.admitted:
        print_violations(str(agent), report.violations)
    else:
        episodes = tried_episodes(report.run_dir, agent)
        console.print(outcome_table(report, {e.row.problem_id: e.row for e in episodes}))
        say(verdict(report))
        for line in advice(report, episodes):
            say(escape(line))
        say(
            f"the run (records, report.html): {report.run_dir}; "
            f"submit the same bytes with `shoparena miner submit --key miner.json {agent}`"
        )
    if not report.admitted:
        raise typer.Exit(EXIT_REJECTED)
    if not report.qualifies:
        raise typer.Exit(EXIT_BELOW_THRESHOLD)


def tried_episodes(run_dir: Path | None, agent: Path) -> list:
    """The run's episodes, a traceback's frames shown under the file's own name (the run holds a copy
    named agent.py); empty when the records cannot be read."""
    from shoparena.report.episodes import load_episodes
    from shoparena.report.runs import ReportError

    if run_dir is None:
        return []
    try:
        return load_episodes(run_dir, miner_file=str(agent)).episodes
    except ReportError:
        return []
