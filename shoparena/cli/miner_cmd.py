"""`shoparena miner`: submit an agent file to an arena, signed, and follow its status."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from shoparena.cli.arena_cmd import print_violations
from shoparena.cli.common import console, duration, fail, print_json, say, say_err
from shoparena.cli.key_options import (
    KeyOption,
    WalletHotkeyOption,
    WalletOption,
    WalletPathOption,
    load_signer,
)

ARENA_ENV = "SHOPARENA_ARENA_URL"
miner_app = typer.Typer(
    name="miner",
    help="Submit an agent file to an arena (signed) and follow its evaluation.",
    no_args_is_help=True,
)
ArenaOption = Annotated[
    str,
    typer.Option("--arena", envvar=ARENA_ENV, help="The arena's URL."),
]
MIB = 1024 * 1024

HINTS = {
    "skew": "your clock and the arena's differ by more than the allowed skew; sync the clock (NTP) and retry",
    "replay": "the arena has seen this request's nonce already; retry (each request gets a fresh nonce)",
    "signature": "the signature did not verify: the key does not belong to that hotkey, or something altered "
    "the request on the way (a proxy rewriting the body or the path?)",
    "bad_headers": "the request's signature headers were malformed or of another signing version; is the "
    "client up to date?",
}
REGISTER = {
    "miner": "shoparena arena register --dir ARENA --hotkey {hotkey} --role miner",
    "validator": "shoparena arena register --dir ARENA --hotkey {hotkey} --role validator --stake STAKE",
}
"""How the arena's operator registers a hotkey for each side (`arena register`)."""


def hint(reason: str | None, hotkey: str, role: str) -> str:
    """What to do about a 401 `reason`, for the side (`role`) whose command was refused."""
    if reason == "unknown_hotkey":
        return f"ask the arena's operator to register it: `{REGISTER[role].format(hotkey=hotkey)}`"
    if reason == "wrong_role":
        doing = "miners submit" if role == "miner" else "validators evaluate"
        new = f"{role}.json"
        register = REGISTER[role].format(hotkey=f'"$(shoparena keys show --key {new})"')
        return (
            f"{doing} with a {role} hotkey: make one (`shoparena keys new --out {new}`) and ask the "
            f"arena's operator to register it: `{register}`"
        )
    return HINTS.get(reason or "", "")


def open_client(arena: str, key, wallet, hotkey, wallet_path):
    """A signed client for `--arena` with the key the options name; exits with a clear error otherwise."""
    from shoparena.arena.errors import ArenaError
    from shoparena.arena.participants.client import ArenaClient

    signer = load_signer(key, wallet, hotkey, wallet_path)
    try:
        return ArenaClient(arena, signer)
    except ArenaError as exc:
        raise fail(str(exc)) from None


def refused(exc, hotkey: str = "HOTKEY", role: str = "miner") -> typer.Exit:
    """A clear one-screen message for every way the arena can refuse the `role` side's command."""
    from shoparena.arena.participants.client import ArenaRefused

    if not isinstance(exc, ArenaRefused):
        return fail(str(exc))
    if exc.status == 401:
        return fail(f"refused ({exc.reason}): {exc.message}\n  {hint(exc.reason, hotkey, role)}".rstrip())
    if exc.status == 429:
        return fail(
            f"refused (cooldown): {exc.message}\n  wait {duration(exc.retry_after_s or 0)} before submitting again"
        )
    if exc.status == 413:
        return fail(f"too large: {exc.message} (a submission is one Python file of at most 1 MiB)")
    if exc.status == 400:
        return fail(f"bad request: {exc.message}")
    if exc.status == 404:
        return fail(f"not found: {exc.message}")
    return fail(f"the arena answered {exc.status} ({exc.error}): {exc.message}")


@miner_app.command("submit")
def submit_cmd(
    agent: Annotated[
        Path, typer.Argument(help="The agent: one Python file defining agent_main(problem_data).")
    ],
    arena: ArenaOption = "http://127.0.0.1:8742",
    key: KeyOption = None,
    wallet: WalletOption = None,
    hotkey: WalletHotkeyOption = "default",
    wallet_path: WalletPathOption = None,
    name: Annotated[
        str | None,
        typer.Option(
            "--name", help="A name for this version \\[default: the file name].", show_default=False
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the arena's answer as JSON.")] = False,
) -> None:
    """Submit AGENT.py: exit 0 when admitted, 1 when admission rejects it, 2 on any other refusal.

    Admission's check runs here first: a file it rejects is not sent (no cooldown is spent).

    Examples:
      shoparena miner submit --key miner.json agent.py
      shoparena miner submit --arena http://127.0.0.1:8742 --key miner.json agent.py --name v2 --json
      shoparena miner submit --wallet my-wallet --hotkey default agent.py
    """
    from shoparena.arena.errors import ArenaError

    try:
        data = agent.read_bytes()
    except OSError as exc:
        raise fail(f"{agent}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MIB:
        raise fail(f"{agent} is {len(data)} bytes; a submission is at most 1 MiB ({MIB} bytes)")
    try:
        code = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(
            f"{agent} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None
    from shoparena.admission import check_submission

    violations = check_submission(data)  # admission's own check, here first: a typo costs no cooldown
    if violations:
        if as_json:
            print_json(
                {"status": "refused_locally", "violations": [v.model_dump(mode="json") for v in violations]}
            )
        else:
            print_violations(str(agent), violations)
            say_err("refused here by admission's check: nothing was sent, no cooldown was spent")
        raise typer.Exit(1)
    with open_client(arena, key, wallet, hotkey, wallet_path) as client:
        try:
            answer = client.submit(name or agent.name, code)
        except ArenaError as exc:
            raise refused(exc, client.signer.ss58_address) from None
    if as_json:
        print_json(answer.model_dump(mode="json"))
    if answer.status == "rejected":
        if not as_json:
            print_violations(str(agent), answer.violations)
            say_err(
                f"submission {answer.submission_id}; next submission allowed at "
                f"{answer.next_submission_at.isoformat(timespec='seconds')}"
            )
        raise typer.Exit(1)
    if not as_json:
        say(f"admitted: submission [bold]{answer.submission_id}[/] (code sha256 {answer.code_sha256[:12]}…)")
        say(
            f"follow it with `shoparena miner status {answer.submission_id}` (with the same --arena and key "
            "options); next submission "
            f"allowed at {answer.next_submission_at.isoformat(timespec='seconds')}"
        )


@miner_app.command("status")
def status_cmd(
    submission_id: Annotated[
        str | None,
        typer.Argument(
            help="A submission id; without one, list this hotkey's submissions.", show_default=False
        ),
    ] = None,
    arena: ArenaOption = "http://127.0.0.1:8742",
    key: KeyOption = None,
    wallet: WalletOption = None,
    hotkey: WalletHotkeyOption = "default",
    wallet_path: WalletPathOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show a submission's status (and, once scored, its results), or list your submissions.

    Examples:
      shoparena miner status --key miner.json
      shoparena miner status --key miner.json SUBMISSION_ID
    """
    from shoparena.arena.errors import ArenaError

    with open_client(arena, key, wallet, hotkey, wallet_path) as client:
        try:
            answer = client.submission(submission_id) if submission_id else client.submissions()
        except ArenaError as exc:
            raise refused(exc, client.signer.ss58_address) from None
    if isinstance(answer, list):
        if as_json:
            print_json([s.model_dump(mode="json") for s in answer])
            return
        table = Table("name", "status", "submitted (UTC)")
        table.add_column("submission", no_wrap=True, min_width=32)
        for s in answer:
            table.add_row(s.name, s.status, s.submitted_at.strftime("%Y-%m-%d %H:%M"), s.submission_id)
        console.print(table if answer else "no submissions yet")
        return
    if as_json:
        print_json(answer.model_dump(mode="json"))
        return
    _print_submission(answer)


def _print_submission(view) -> None:
    say(
        f"submission [bold]{view.submission_id}[/] {view.name!r}: [bold]{view.status}[/] since "
        f"{view.status_at.isoformat(timespec='seconds')} (submitted {view.submitted_at.isoformat(timespec='seconds')}, "
        f"{view.code_size} bytes, sha256 {view.code_sha256[:12]}…)"
    )
    if view.violations:
        print_violations(view.name, view.violations)
    for result in view.results:
        table = Table("problem", "success", "rule", "judge q", "gate", "end")
        for p in result.per_problem:
            table.add_row(
                p.problem_id,
                "yes" if p.success else "no",
                "" if p.rule_score is None else f"{p.rule_score:.3f}",
                "" if p.judge_quality is None else f"{p.judge_quality:.1f}",
                p.judge_gate or "",
                p.error or p.end_reason or "",
            )
        console.print(table)
        say(f"validator {result.validator_hotkey} (job {result.job_id}): {scores(result, bold_final=True)}")
    standing = view.qualifying
    if standing is not None:
        score = "none yet" if standing.score is None else f"{standing.score:.3f}"
        say(f"qualifying score {score}: {standing.detail}")
        for report in standing.reports:
            say(f"  {report.validator_hotkey} (stake {report.stake:g}): {report.score:.3f}")


def scores(result, bold_final: bool = False) -> str:
    """One validator's result as the miner and the validator commands both show it."""
    q = "n/a" if result.judge_quality is None else f"{result.judge_quality:.3f}"
    coeff = "n/a" if result.coefficient is None else f"{result.coefficient:.3f}"
    final = "n/a" if result.final_score is None else f"{result.final_score:.3f}"
    if bold_final:
        final = f"[bold]{final}[/]"
    return (
        f"ASR {result.asr:.3f} ({result.successes}/{result.problems}), judge q {q}, coefficient {coeff}, "
        f"final score {final}"
    )


def register(app: typer.Typer) -> None:
    from shoparena.cli import miner_try_cmd

    miner_try_cmd.register(miner_app)
    app.add_typer(miner_app, name="miner")
