"""`shoparena arena simulate`: play a whole competition season on one machine (issue 13).

Thin: the season lives in `shoparena.season`; this parses options, prints one line per
day and writes the season file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, get_args

import typer
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shoparena.cli.common import console, fail, say, say_err
from shoparena.cli.model_options import command_from_models, model_values
from shoparena.records.options import CliFlag, Profile, SandboxBackend, SimilarityName
from shoparena.season.setup import SeasonSettings

HELP = """Play a competition season on a simulated clock, through the real arena.

Makes ARENA when it is missing or empty (a small generated catalogue and problem bank, `arena init`,
the race bank via `bank add`; marked as a season's by ARENA/simulated.json), registers the miners' and
validators' keys (under ARENA/keys/), serves the real signed API on a loopback port and plays DAYS
days: each day a race opens with a committed seed, miners of the fixed roster submit through the API
under cooldowns (admission rejects the malicious ones), every validator runs the qualifying and race
jobs in the sandbox with strict scoring and the offline judge — the last validator lies for a
favourite miner —, the race closes, and the weights go to the local chain. The season file (schema
shoparena.arena-season/1) records it all; the same --seed gives the same file apart from its `timing`
and `generated_at`.

A second season in an arena an earlier `arena simulate` made goes on where that one ended. Any other
directory is refused: a real arena, a catalogue, anything not empty (a season registers made-up miners
and validators with stake and pushes weights to the arena's chain).

Roster order (--miners N takes the first N): 1 agentic_model (axis A), 2 narrated_pipeline (axis B),
3 network_exfil (malicious), 4 crashing (resubmits a fix on day 2), 5 reference_agentic (resubmits
tagged_agentic, a model loop, on day 3), 6 first_hit
(resubmits keyword_verify on day 3), 7 shell_probe (malicious), 8 wide_pipeline, 9 eval_payload
(malicious), 10 sleeper (times out), 11 answer_table (malicious), 12 frugal_agentic.

Afterwards `shoparena arena serve --dir ARENA` serves the leaderboard at http://127.0.0.1:8742/.

Examples:
  shoparena arena simulate --dir season --miners 12 --validators 3 --days 5 --seed 1 --json season.json
  shoparena arena simulate --dir small --miners 5 --validators 2 --days 2 --json small.json
"""


def submissions(day) -> str:
    """A day's submissions as they happened: what the API took (admitted or rejected by admission), then
    the attempts it refused, which are not submissions (a rejected miner's retry meets its cooldown)."""
    line = f"{day.submitted} submitted"
    if day.submitted:
        line += f" ({day.admitted} admitted, {day.rejected} rejected)"
    if day.refused_by_cooldown:
        line += f", {day.refused_by_cooldown} refused by the cooldown"
    if day.refused > day.refused_by_cooldown:
        line += f", {day.refused - day.refused_by_cooldown} refused otherwise (see the season file)"
    return line


class SimulateCommandOptions(BaseModel):
    """The command's own options, beside the season's (`SeasonSettings`)."""

    model_config = ConfigDict(extra="forbid")

    arena_dir: Annotated[Path, CliFlag(flag="--dir")] = Field(
        description="The season's arena: a new or empty directory, or one a season made before."
    )
    json_out: Annotated[Path, CliFlag(flag="--json")] = Field(description="Where to write the season file.")
    all_honest: Annotated[bool, CliFlag(show_default=False)] = Field(
        False, description="No dishonest validator."
    )


SIMULATE_ORDER = (
    "arena_dir",
    "json_out",
    "miners",
    "validators",
    "days",
    "seed",
    "sandbox",
    "problem_timeout_s",
    "workers",
    "race_problems",
    "qualifying_problems",
    "qualify_threshold",
    "similarity",
    "profile",
    "weights",
    "all_honest",
)


def simulate_command(**values: Any) -> None:
    from shoparena.arena import ArenaError
    from shoparena.season.driver import Season
    from shoparena.season.seasonfile import DayProgress

    command = SimulateCommandOptions(**model_values(SimulateCommandOptions, values))
    if values["sandbox"] not in ("auto", *get_args(SandboxBackend)):
        raise fail(f"--sandbox {values['sandbox']!r}: use auto, bwrap, container or none")
    if values["similarity"] not in get_args(SimilarityName):
        raise fail(f"--similarity {values['similarity']!r}: use lexical or minilm")
    if values["profile"] not in get_args(Profile):
        raise fail(f"--profile {values['profile']!r}: use {', '.join(get_args(Profile))}")
    if values["weights"] not in ("shoparena", "subnet"):
        raise fail(f"--weights {values['weights']!r}: use shoparena or subnet")
    try:
        settings = SeasonSettings(**model_values(SeasonSettings, values), dishonest=not command.all_honest)
    except ValidationError as exc:
        raise fail(f"season settings: {exc}") from None
    arena_dir, json_out, days = command.arena_dir, command.json_out, settings.days

    def show(day: DayProgress) -> None:
        crown = f"crown {day.winner_name or day.winner[:10] + '…'}" if day.winner else "no crown"
        say_err(
            f"day {day.day}/{days} · {day.race_id} {day.state} · {submissions(day)} · jobs "
            f"{day.qualifying_jobs} qualifying + {day.race_jobs} race · {day.episodes} episodes · "
            f"{crown}{' (promoted)' if day.promoted else ''} · {day.wall_s:.1f}s"
        )

    with console.status(
        f"season of {settings.miners} miners × {settings.validators} validators × {days} days in {arena_dir}"
    ):
        try:
            season = Season(arena_dir, settings, progress=show).run()
        except ArenaError as exc:
            raise fail(str(exc)) from None
    season.write(json_out)
    timing = season.timing
    liar = season.dishonest
    say(
        f"wrote {json_out}: {len(season.submissions)} submissions, {len(season.races)} races, "
        f"{len(season.weights)} weight vectors"
        + (
            f"; {timing.episodes} episodes in {timing.wall_s:.0f}s ({timing.episodes_per_s:.2f}/s)"
            if timing
            else ""
        )
    )
    if liar is not None:
        say(
            f"dishonest validator {liar.validator_hotkey[:10]}… lied {liar.lies} times for "
            f"{liar.favourite_miner}; favourite gained nothing: {liar.gained_nothing}"
        )
    say(f"leaderboard: shoparena arena serve --dir {arena_dir}  →  http://127.0.0.1:8742/")


def register(arena_app: typer.Typer) -> None:
    command_from_models(
        arena_app,
        "simulate",
        (SimulateCommandOptions, SeasonSettings),
        simulate_command,
        HELP,
        SIMULATE_ORDER,
    )
