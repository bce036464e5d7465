"""`shoparena arena status --dir ARENA`: the operator's view of the arena now (`arena.overview`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from shoparena.cli.common import console, duration, fail, print_json, say


def short(hotkey: str) -> str:
    return hotkey if len(hotkey) <= 14 else f"{hotkey[:6]}…{hotkey[-6:]}"


def show(overview) -> None:
    mode = (
        "competition (qualifying jobs on the race bank)"
        if overview.competition
        else "bank jobs (no race bank)"
    )
    say(
        f"{overview.at:%Y-%m-%d %H:%M:%S} UTC · {mode} · {overview.miners} miner(s), "
        f"{overview.validators} validator(s)"
    )
    say("submissions: " + " · ".join(f"{status} {n}" for status, n in overview.statuses.items()))
    race = overview.latest_race
    if race is not None:
        line = f"latest race: {race.race_id} {race.state}, opened {race.opened_at:%Y-%m-%d %H:%M} UTC"
        if race.winner:
            line += f", crown: {short(race.winner)}"
        if race.cancel_reason:
            line += f" ({race.cancel_reason})"
        say(line + " — `arena race status` has the details")
    elif overview.competition:
        say("latest race: none yet")
    push = overview.weights_push
    if push is not None:
        when = f"{push.next_attempt_at:%Y-%m-%d %H:%M:%S} UTC" if push.next_attempt_at else "the next close"
        if push.failures:
            last = f"{push.last_success_at:%Y-%m-%d %H:%M} UTC" if push.last_success_at else "never"
            say(
                f"[red]weights: {push.failures} failed push(es) in a row[/] of {push.race_id} "
                f"({push.last_error}); last set {last}; retry at {when}"
            )
        else:
            say(
                f"weights: {push.race_id} set at {push.last_attempt_at:%Y-%m-%d %H:%M:%S} UTC; again at {when}"
            )
    fresh = overview.freshness
    if fresh is not None:
        say(
            f"race bank: {fresh.fresh_problems} fresh held-out problem(s) in rotation period {fresh.period} "
            f"({fresh.races_left} race(s) of {fresh.race_problems}), {fresh.open_problems} open, "
            f"{fresh.retired_problems} retired of {fresh.bank_problems}"
        )
        if fresh.postponed:
            say(f"[yellow]next race postponed[/]: {fresh.reason}")
    if overview.freshness_error:
        say(f"[red]race bank[/]: {overview.freshness_error}")
    if overview.queue:
        table = Table(title=f"queue: {overview.queue_shown_of} waiting, in claim order", title_justify="left")
        for column in ("#", "submission", "miner", "name", "submitted (UTC)"):
            table.add_column(column, no_wrap=column != "name")
        for item in overview.queue:
            table.add_row(
                str(item.position),
                item.submission_id,
                short(item.miner_hotkey),
                item.name,
                f"{item.submitted_at:%Y-%m-%d %H:%M}",
            )
        console.print(table)
    else:
        say("queue: empty")
    if overview.leases:
        table = Table(title=f"open leases: {len(overview.leases)}", title_justify="left")
        for column in ("validator", "job", "kind", "submission", "expires"):
            table.add_column(column, no_wrap=True)
        for lease in overview.leases:
            left = lease.seconds_left
            expires = (
                f"in {duration(left)}"
                if left > 0
                else f"[red]overdue {duration(-left)}[/] (lapses at the next claim)"
            )
            table.add_row(
                short(lease.validator_hotkey), lease.job_id, lease.job_kind, lease.submission_id, expires
            )
        console.print(table)
    else:
        say("open leases: none")
    for failure in overview.failures:
        say(
            f"[red]failed[/] {failure.submission_id} ({short(failure.miner_hotkey)}, {failure.name}) at "
            f"{failure.at:%Y-%m-%d %H:%M}: {failure.detail}"
        )


def register(arena_app: typer.Typer) -> None:
    @arena_app.command("status")
    def status_cmd(
        arena_dir: Annotated[Path, typer.Option("--dir", help="The arena directory (`arena init` made it).")],
        queue: Annotated[
            int, typer.Option("--queue", min=0, help="How many waiting submissions to list.")
        ] = 10,
        failures: Annotated[
            int, typer.Option("--failures", min=0, help="How many recent failures to list.")
        ] = 5,
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    ) -> None:
        """The arena now: submissions by status, the queue in the order the next claims take it, the open
        leases (which validator holds which job, until when) and the latest failures with their reasons.

        It reads what the job layer decides on and writes nothing; races have `arena race status`.

        Examples:
          shoparena arena status --dir arena
          shoparena arena status --dir arena --queue 50 --json
        """
        from shoparena.arena import ArenaError, open_arena
        from shoparena.arena.overview import arena_overview

        try:
            with open_arena(arena_dir) as arena:
                overview = arena_overview(arena, queue_limit=queue, failures_limit=failures)
        except ArenaError as exc:
            raise fail(str(exc)) from None
        if as_json:
            print_json(overview.model_dump(mode="json"))
        else:
            show(overview)
