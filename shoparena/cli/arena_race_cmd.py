"""`shoparena arena race …`, `arena race-problems`, `arena weights`: drive and audit the competition's
races by hand (`arena serve` and the season simulator call the same engine's `tick`).

Exit status: 0 done, 1 a race step that cannot happen now or a draw that does not match, 2 usage errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from shoparena.cli.common import console, fail, print_json, say

DirOption = Annotated[Path, typer.Option("--dir", help="The arena directory (`arena init` made it).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
EXIT_REFUSED = 1

race_app = typer.Typer(
    name="race",
    help=(
        "The race's state machine: `open` (commit to a seed, draw the problems), `start` (racers get their "
        "jobs), `close` (score, promote, reveal, weights), `tick` (whatever is due now), `status`."
    ),
    no_args_is_help=True,
)


def _open(arena_dir: Path):
    from shoparena.arena import ArenaError, open_arena

    try:
        return open_arena(arena_dir)
    except ArenaError as exc:
        raise fail(str(exc)) from None


def _step(arena_dir: Path, action):
    """Run one engine step; an error of the competition is exit 1 with its message."""
    from shoparena.arena.competition.engine import RaceEngine
    from shoparena.arena.errors import ArenaError

    with _open(arena_dir) as arena:
        engine = RaceEngine(arena)
        try:
            return action(engine)
        except (ArenaError, ValueError) as exc:
            raise fail(str(exc), EXIT_REFUSED) from None


def _show_race(race, json_output: bool) -> None:
    if json_output:
        print_json(race.model_dump(mode="json"))
        return
    say(f"{race.race_id}: {race.state} (opened {race.opened_at:%Y-%m-%d %H:%M} UTC)")
    say(f"  seed commitment {race.seed_commitment}")
    say(f"  seed {race.seed or '(secret until the race closes)'}")
    if race.problem_ids is not None:
        say(f"  problems {', '.join(race.problem_ids)}")
    if race.cancel_reason:
        say(f"  cancelled: {race.cancel_reason}")
    if race.results:
        table = Table(title_justify="left")
        for column in ("rank", "hotkey", "uid", "submission", "score", "success", "coeff", "validators"):
            table.add_column(column)
        for rank, result in enumerate(race.results, start=1):
            coefficient = "-" if result.judge_coefficient is None else f"{result.judge_coefficient:.3f}"
            table.add_row(
                str(rank),
                result.hotkey,
                str(result.uid),
                result.submission_id[:12],
                f"{result.score:.4f}",
                f"{result.success_rate:.3f}",
                coefficient,
                str(len(result.by_validator)),
            )
        console.print(table)
    if race.winner:
        crowned = "promoted" if race.promoted else "kept the crown"
        release = (
            f", code public at {race.code_release_at:%Y-%m-%d %H:%M} UTC" if race.code_release_at else ""
        )
        say(f"  winner {race.winner} ({crowned}{release})")


def _race_of(engine, race_id: str):
    from shoparena.arena.competition.view import CompetitionView

    return CompetitionView(engine.arena, engine).race(race_id)


@race_app.command("open")
def open_cmd(arena_dir: DirOption, json_output: JsonOption = False) -> None:
    """Open the next race: store a fresh seed, publish its SHA-256 commitment, draw the problems.

    Examples:
      shoparena arena race open --dir arena
      shoparena arena race open --dir arena --json
    """
    race = _step(arena_dir, lambda engine: _race_of(engine, engine.open_race().race_id))
    _show_race(race, json_output)


@race_app.command("start")
def start_cmd(arena_dir: DirOption, json_output: JsonOption = False) -> None:
    """End qualifying: each hotkey's latest qualified submission gets its race job (every validator).

    Examples:
      shoparena arena race start --dir arena
    """
    race = _step(arena_dir, lambda engine: _race_of(engine, engine.start_race().race_id))
    _show_race(race, json_output)


@race_app.command("close")
def close_cmd(arena_dir: DirOption, json_output: JsonOption = False) -> None:
    """Close the running race now with the results in: rank, promote or cancel, reveal, set weights.

    Examples:
      shoparena arena race close --dir arena
      shoparena arena race close --dir arena --json
    """
    race = _step(arena_dir, lambda engine: engine.close_race())
    _show_race(race, json_output)


@race_app.command("tick")
def tick_cmd(arena_dir: DirOption, json_output: JsonOption = False) -> None:
    """Do whatever is due now (open, start or close): the engine's `tick`, run from cron or a loop.

    It takes the arena's ticker lock, so it is refused (nothing done) while a server with --tick-s or
    an `arena ticker` process ticks the same arena.

    Examples:
      shoparena arena race tick --dir arena
      shoparena arena race tick --dir arena --json
    """
    from shoparena.arena.competition.scheduler import tick_once

    done = _step(arena_dir, tick_once)
    if json_output:
        print_json({"done": done})
    else:
        say("\n".join(done) if done else "nothing is due")


@race_app.command("status")
def status_cmd(
    arena_dir: DirOption,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many races, newest first.")] = 5,
    json_output: JsonOption = False,
) -> None:
    """The newest races: state, commitment, seed once revealed, results.

    Examples:
      shoparena arena race status --dir arena
      shoparena arena race status --dir arena --limit 1 --json
    """
    from shoparena.arena.competition.view import CompetitionView

    with _open(arena_dir) as arena:
        races = CompetitionView(arena).races(limit)
    if json_output:
        print_json([race.model_dump(mode="json") for race in races])
        return
    if not races:
        say("no race yet: `shoparena arena race open --dir ARENA` (or let `arena serve` tick)")
    for race in races:
        _show_race(race, False)


def register(arena_app: typer.Typer) -> None:
    arena_app.add_typer(race_app, name="race")

    @arena_app.command("race-problems")
    def race_problems_cmd(
        arena_dir: DirOption,
        race_id: Annotated[str, typer.Option("--race", help="The race id (`arena race status`).")],
        json_output: JsonOption = False,
    ) -> None:
        """Recompute a closed race's problems from its revealed seed and its frozen rotation manifest, and
        say whether they are the problems that were raced (exit 1 when they are not).

        Examples:
          shoparena arena race-problems --dir arena --race race-00001
          shoparena arena race-problems --dir arena --race race-00001 --json
        """
        from shoparena.arena.competition.view import recompute_draw

        race, draw, matches = _step(arena_dir, lambda engine: recompute_draw(engine.arena, race_id))
        if json_output:
            print_json(
                {
                    "race_id": race.race_id,
                    "seed": race.seed,
                    "seed_commitment": race.seed_commitment,
                    "rotation_sha256": race.rotation_sha256,
                    "raced": race.problem_ids,
                    "recomputed": draw.problem_ids,
                    "matches": matches,
                }
            )
        else:
            say(f"{race.race_id}: seed {race.seed} hashes to the commitment {race.seed_commitment}")
            say(f"  recomputed {', '.join(draw.problem_ids)}")
            say(
                "  matches the problems raced"
                if matches
                else f"  DOES NOT MATCH the problems raced: {', '.join(race.problem_ids or [])}"
            )
        if not matches:
            raise typer.Exit(EXIT_REFUSED)

    @arena_app.command("weights")
    def weights_cmd(
        arena_dir: DirOption,
        push: Annotated[bool, typer.Option("--push", help="Set them on the chain adapter again.")] = False,
        json_output: JsonOption = False,
    ) -> None:
        """The latest consensus weights (from the newest complete race); --push sets them on the chain.

        Examples:
          shoparena arena weights --dir arena
          shoparena arena weights --dir arena --push
        """

        def read(engine):
            vector = engine.latest_weights()
            if vector is None:
                raise ValueError("no weights yet: they are set when the first race completes")
            if push and not engine.push(vector):
                raise ValueError("the chain adapter refused the weights (see the log)")
            return vector

        vector = _step(arena_dir, read)
        if json_output:
            print_json({**vector.model_dump(mode="json"), "pushed": push})
            return
        table = Table(title=f"weights of {vector.race_id} ({vector.source})", title_justify="left")
        table.add_column("uid", justify="right")
        table.add_column("weight", justify="right")
        for uid, weight in zip(vector.uids, vector.weights, strict=True):
            table.add_row(str(uid), f"{weight:.6f}")
        console.print(table)
        if push:
            say("pushed to the chain adapter")
