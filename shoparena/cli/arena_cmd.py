"""`shoparena arena`: make an arena directory, edit its local metagraph, check a miner file, serve the API."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.markup import escape
from rich.table import Table

from shoparena.arena.config import ArenaConfig, CompetitionConfig
from shoparena.arena.ledger import CooldownPolicy
from shoparena.arena.models import EvaluationSettings, JobPolicy
from shoparena.cli import (
    arena_bank_cmd,
    arena_chain_cmd,
    arena_check_cmd,
    arena_race_cmd,
    arena_simulate_cmd,
    arena_status_cmd,
)
from shoparena.cli.common import console, fail, print_json, say, say_err
from shoparena.cli.model_options import command_from_models, model_values
from shoparena.records.options import CliFlag, fields_of

arena_app = typer.Typer(
    name="arena",
    help="Run an arena: `init` a directory, `register` hotkeys, `serve` the signed API.",
    no_args_is_help=True,
)

arena_check_cmd.register(arena_app)
arena_bank_cmd.register(arena_app)
arena_race_cmd.register(arena_app)
arena_chain_cmd.register(arena_app)
arena_simulate_cmd.register(arena_app)
arena_status_cmd.register(arena_app)

DirOption = Annotated[Path, typer.Option("--dir", help="The arena directory (`arena init` made it).")]


def _open(arena_dir: Path, **options):
    from shoparena.arena import ArenaError, open_arena

    try:
        return open_arena(arena_dir, **options)
    except ArenaError as exc:
        raise fail(str(exc)) from None


class ArenaInitPaths(BaseModel):
    """What `arena init` makes an arena of (checked and recorded with their sha256 by `init_arena`)."""

    model_config = ConfigDict(extra="forbid")

    arena_dir: Annotated[Path, CliFlag(flag="--dir")] = Field(
        description="The arena directory to make (created if missing)."
    )
    catalog: Path = Field(description="A built catalogue directory.")
    problems: Path = Field(description="The problem bank (any problem file format).")


def _arena_part(
    model: type[BaseModel], part: str, options: dict[str, tuple[str, str, CliFlag]]
) -> type[BaseModel]:
    """`model`'s fields as `arena init` options: option name → (field, help, flag)."""
    return fields_of(
        model,
        *((option, field) for option, (field, _, _) in options.items()),
        name=f"ArenaInit{part}",
        changes={
            option: {"description": text, "flag": flag, **({"default": None} if option in STORES else {})}
            for option, (_, text, flag) in options.items()
        },
    )


STORES = ("store", "code_store", "nonce_store")
"""Unset, the arena's defaults apply (`new_config`: in the arena directory), so these default to None."""
INIT_PARTS: dict[str, tuple[type[BaseModel], dict[str, tuple[str, str, CliFlag]]]] = {
    "stores": (
        ArenaConfig,
        {
            "store": (
                "store",
                "Database for the arena's state and the trajectory store \\[default: arena.db in --dir]; "
                "postgresql://… for PostgreSQL.",
                CliFlag(),
            ),
            "code_store": (
                "code_store",
                "Where code goes \\[default: code/ in --dir]; s3://BUCKET/PREFIX[?endpoint=URL].",
                CliFlag(),
            ),
            "nonce_store": (
                "nonce_store",
                "`sqlite` (nonces.db in --dir) or redis://host:port/db.",
                CliFlag(),
            ),
            "skew_s": ("skew_s", "Allowed clock skew of signed requests (s).", CliFlag(min=1)),
        },
    ),
    "cooldown": (
        CooldownPolicy,
        {
            "cooldown_s": (
                "full_s",
                "Cooldown after an admitted or integrity-rejected submission (s).",
                CliFlag(min=0),
            ),
            "security_cooldown_s": ("security_s", "Cooldown after a security rejection (s).", CliFlag(min=0)),
            "format_cooldown_s": ("format_s", "Cooldown after a format-only rejection (s).", CliFlag(min=0)),
        },
    ),
    "jobs": (
        JobPolicy,
        {
            "lease_s": (
                "lease_s",
                "A validator's claim on a job lives this long unless heartbeats renew it (s).",
                CliFlag(min=2),
            ),
            "validators_per_submission": (
                "validators_per_submission",
                "How many validators evaluate each submission.",
                CliFlag(min=1),
            ),
            "max_lapses": (
                "max_lapses",
                "Lapsed leases without a result before a submission fails.",
                CliFlag(min=1),
            ),
        },
    ),
    "competition": (
        CompetitionConfig,
        {
            "weights": (
                "weights",
                "Weight rule: shoparena or subnet (SN15's; docs/arena.md compares them).",
                CliFlag(type=str),
            ),
        },
    ),
    "evaluation": (
        EvaluationSettings,
        {
            "similarity": (
                "similarity",
                "Title similarity validators score with: minilm or lexical.",
                CliFlag(type=str),
            ),
            "problem_timeout_s": ("timeout_s", "Wall clock per problem of a job (s).", CliFlag(min=1)),
        },
    ),
}
"""Each `arena init` option is a field of the arena's config or of one of its parts (the field gives its
type, default and bounds; the command its help and the range click shows)."""
INIT_OPTIONS = [
    _arena_part(model, part.capitalize(), options) for part, (model, options) in INIT_PARTS.items()
]
INIT_HELP = """Make an arena directory: config, state database (+ trajectory store), code storage.

Examples:
  shoparena arena init --dir arena --catalog cat --problems bank.jsonl --similarity lexical
  shoparena arena init --dir arena --catalog cat --problems bank.jsonl --cooldown-s 3600 --validators-per-submission 2
"""


def _init_part(part: str, values: dict[str, Any]) -> BaseModel:
    model, options = INIT_PARTS[part]
    given = {field: values[option] for option, (field, _, _) in options.items() if values[option] is not None}
    try:
        return model(**given)
    except ValidationError as exc:
        flags = {field: "--" + option.replace("_", "-") for option, (field, _, _) in options.items()}
        raise fail(
            "; ".join(f"{flags.get(str(e['loc'][0]), e['loc'][0])}: {e['msg']}" for e in exc.errors())
        ) from None


def init_command(**values: Any) -> None:
    from shoparena.arena import ArenaError, init_arena

    paths = ArenaInitPaths(**model_values(ArenaInitPaths, values))
    cooldown, jobs, competition, evaluation = (
        _init_part(part, values) for part in ("cooldown", "jobs", "competition", "evaluation")
    )
    stores = {name: values[name] for name in STORES}
    try:
        arena = init_arena(
            paths.arena_dir,
            paths.catalog,
            paths.problems,
            **stores,
            skew_s=values["skew_s"],
            cooldown=cooldown,
            jobs=jobs,
            evaluation=evaluation,
            competition=competition,
        )
    except ArenaError as exc:
        raise fail(str(exc)) from None
    with arena:
        config = arena.config
        say(f"arena {paths.arena_dir}: {config.problems_count} problems, state {arena.store.url}")
        say(f"code store {arena.code.url}, nonce store {config.nonce_store}")
        say(f"next: `shoparena arena register --dir {paths.arena_dir} --hotkey SS58 --role miner`")


command_from_models(arena_app, "init", (ArenaInitPaths, *INIT_OPTIONS), init_command, INIT_HELP)


@arena_app.command("register")
def register_cmd(
    arena_dir: DirOption,
    hotkey: Annotated[str, typer.Option("--hotkey", help="The SS58 address to (de)register.")],
    role: Annotated[
        str | None, typer.Option("--role", help="miner or validator.", show_default=False)
    ] = None,
    stake: Annotated[float, typer.Option("--stake", min=0, help="Stake (validators).")] = 0.0,
    uid: Annotated[
        int | None, typer.Option("--uid", min=0, help="Chain uid, if known.", show_default=False)
    ] = None,
    remove: Annotated[bool, typer.Option("--remove", help="Deregister the hotkey instead.")] = False,
) -> None:
    """Add a hotkey to the local metagraph (or change its role/stake, or --remove it).

    Examples:
      shoparena arena register --dir arena --hotkey "$(shoparena keys show --key miner.json)" --role miner
      shoparena arena register --dir arena --hotkey "$(shoparena keys show --key validator.json)" --role validator --stake 10
      shoparena arena register --dir arena --hotkey "$(shoparena keys show --key miner.json)" --remove
    """
    from shoparena.arena import ArenaError

    with _open(arena_dir) as arena:
        if remove:
            if not arena.metagraph.remove(hotkey):
                raise fail(f"hotkey {hotkey} is not registered on {arena_dir}")
            say(f"removed {hotkey}")
            return
        if role is None:
            raise fail("--role miner|validator is required (or --remove)")
        try:
            neuron = arena.metagraph.register(hotkey, role, stake, uid=uid)
        except ArenaError as exc:
            raise fail(str(exc)) from None
    say(f"registered {neuron.hotkey} as {neuron.role} (stake {neuron.stake:g})")


@arena_app.command("neurons")
def neurons_cmd(
    arena_dir: DirOption,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the local metagraph.

    Examples:
      shoparena arena neurons --dir arena
      shoparena arena neurons --dir arena --json
    """
    with _open(arena_dir) as arena:
        neurons = arena.metagraph.all()
    if as_json:
        print_json([n.model_dump(mode="json") for n in neurons])
        return
    table = Table("hotkey", "role", "stake", "uid", "source")
    for n in neurons:
        table.add_row(n.hotkey, n.role, f"{n.stake:g}", "" if n.uid is None else str(n.uid), n.source)
    console.print(table)


def print_violations(source: str, violations) -> None:
    say_err(f"{source}: rejected, {len(violations)} violation(s):")
    for v in violations:
        where = f"{source}:{v.line}:{v.col}" if v.line is not None else source
        say_err(f"  {where}: [bold]{v.rule}[/] ({v.kind}) {v.message}")


@arena_app.command("serve")
def serve_cmd(
    arena_dir: DirOption,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, envvar=PORT_ENV, help="Port to listen on.")
    ] = 8742,
    nonce_store: Annotated[
        str | None,
        typer.Option(
            "--nonce-store",
            help="Override the configured nonce store (e.g. redis://127.0.0.1:6379).",
            show_default=False,
        ),
    ] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level.")] = "info",
    tick_s: Annotated[
        float | None,
        typer.Option(
            "--tick-s",
            min=0,
            help="Advance the competition (open, start, close races) every this many seconds while the "
            "arena has a race bank; 0 leaves it to `arena race tick` \\[default: 30; 0 for an arena a "
            "simulated season made, whose race days are past on the real clock].",
            show_default=False,
        ),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=1,
            help="Worker processes serving the port; more than 1 needs the arena's state on PostgreSQL "
            "(one of them ticks the races at a time).",
        ),
    ] = 1,
    log_file: Annotated[
        Path | None,
        typer.Option(
            "--log-file",
            help="Append the server's log (requests, races) to this file instead of the terminal "
            "\\[default with --background: serve.log in --dir].",
            show_default=False,
        ),
    ] = None,
    background: Annotated[
        bool,
        typer.Option(
            "--background",
            help="Start the server in a process of its own, wait until it answers, print its pid and "
            "return (stop it with `kill PID`).",
        ),
    ] = False,
) -> None:
    """Serve the signed API, the public API (/v1/leaderboard, /v1/races, /v1/agents, /v1/weights,
    /v1/trajectories) and the leaderboard page at `/` until interrupted; races advance on their own.

    Examples:
      shoparena arena serve --dir arena
      shoparena arena serve --dir arena --background
      shoparena arena serve --dir arena --host 0.0.0.0 --port 8742 --nonce-store redis://127.0.0.1:6379/0
      shoparena arena serve --dir arena --tick-s 0
    """
    from shoparena.arena import ArenaError
    from shoparena.arena.api.app import create_app, serve
    from shoparena.arena.api.workers import WorkerSettings, check_workers, serve_workers

    tick_s = serve_tick_s(arena_dir, tick_s)
    if background:
        options = ["--host", host, "--port", str(port), "--log-level", log_level, "--tick-s", str(tick_s)]
        options += ["--workers", str(workers)] + (["--nonce-store", nonce_store] if nonce_store else [])
        start_in_background(arena_dir, host, port, log_file or arena_dir / "serve.log", options)
        return
    with _open(arena_dir, nonce_store=nonce_store) as arena:
        try:
            check_workers(arena, workers)
        except ArenaError as exc:
            raise fail(str(exc)) from None
        say_err(
            f"arena {arena_dir} on http://{host}:{port} — state {arena.store.url}, code {arena.code.url}, "
            f"nonces {arena.config.nonce_store}; leaderboard at http://{host}:{port}/"
            + (f"; log in {log_file}" if log_file else "")
        )
        if log_file is not None:
            log_to(log_file)
        if workers == 1:
            serve(create_app(arena, tick_s=tick_s), host=host, port=port, log_level=log_level)
            return
    settings = WorkerSettings(arena_dir=arena_dir.resolve(), nonce_store=nonce_store, tick_s=tick_s)
    serve_workers(settings, workers, host, port, log_level)


DEFAULT_TICK_S = 30.0


def serve_tick_s(arena_dir: Path, asked: float | None) -> float:
    """The race scheduler's period: the one asked for, else 30 s — but 0 (no scheduler) for an arena a
    simulated season made, with a line saying so. Why: its races ran on the season's clock, so on the
    real one every race day is past and the scheduler would open a new race within a tick of serving,
    while the user only came to look at the season's leaderboard (`make demo` sends them here)."""
    from shoparena.season.setup import made_by_a_season

    if asked is not None:
        return asked
    if not made_by_a_season(arena_dir):
        return DEFAULT_TICK_S
    say_err(
        f"{escape(str(arena_dir))} was made by a simulated season (its races ran on the season's clock): "
        "serving it without the race scheduler, so no race opens on today's clock; pass --tick-s 30 to run "
        "races"
    )
    return 0.0


PORT_ENV = "SHOPARENA_ARENA_PORT"
BACKGROUND_START_S = 60.0
"""How long `serve --background` waits for the new server to answer before giving up on it."""
LOG_TAIL_LINES = 15


def log_to(path: Path) -> None:
    """Send this process's stdout and stderr (uvicorn's log, the arena's lines, workers') to `path`."""
    import os

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as exc:
        raise fail(f"--log-file {path}: {exc.strerror or exc}") from None
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _log_tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(f"  {line}" for line in lines[-LOG_TAIL_LINES:])


def start_in_background(arena_dir: Path, host: str, port: int, log_file: Path, options: list[str]) -> None:
    """`arena serve` in a process of its own (its own session, so the shell's Ctrl-C and exit leave it
    running) logging to `log_file`; returns once it answers /v1/health, or fails with its log's end."""
    import socket
    import subprocess
    import time

    import httpx

    if port == 0:
        raise fail("--background needs a fixed --port (0 picks a port nobody would know)")
    if not (arena_dir / "arena.json").is_file():
        raise fail(
            f"{arena_dir} is not an arena directory (no arena.json); make one with `shoparena arena init`"
        )
    probe = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))
    except OSError as exc:
        raise fail(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} (is an arena already serving there?)"
        ) from None
    finally:
        probe.close()
    try:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        log = log_file.open("ab")
    except OSError as exc:
        raise fail(f"--log-file {log_file}: {exc.strerror or exc}") from None
    command = [sys.executable, "-c", "from shoparena.cli import main; main()", "arena", "serve"]
    with log:
        process = subprocess.Popen(
            [*command, "--dir", str(arena_dir), *options],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    reach = "127.0.0.1" if host in ("0.0.0.0", "") else ("[::1]" if host == "::" else host)
    url = f"http://{f'[{reach}]' if ':' in reach and not reach.startswith('[') else reach}:{port}"
    deadline = time.monotonic() + BACKGROUND_START_S
    while True:
        code = process.poll()
        if code is not None:
            raise fail(
                f"the arena server exited ({code}) before it answered; the end of {log_file}:\n"
                + escape(_log_tail(log_file))
            )
        try:
            if httpx.get(f"{url}/v1/health", timeout=1.0, trust_env=False).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            process.terminate()
            raise fail(
                f"the arena server did not answer on {url} within {BACKGROUND_START_S:g} s; see {log_file}"
            )
        time.sleep(0.2)
    say(
        f"arena {arena_dir} serving on {url}/ in the background (pid {process.pid}); "
        f"log: {log_file}; stop it with `kill {process.pid}`"
    )


@arena_app.command("ticker")
def ticker_cmd(
    arena_dir: DirOption,
    tick_s: Annotated[
        float, typer.Option("--tick-s", min=0.01, help="Advance the competition every this many seconds.")
    ] = 30.0,
) -> None:
    """Advance the races (open, start, close) in a process of its own until interrupted.

    For servers started with `--tick-s 0`. On PostgreSQL one process ticks at a time, whichever holds
    the arena's ticker lock (a server's scheduler or another ticker); the others wait to take over.

    Examples:
      shoparena arena ticker --dir arena
      shoparena arena ticker --dir arena --tick-s 5
    """
    import logging

    from shoparena.arena.competition.engine import RaceEngine
    from shoparena.arena.competition.scheduler import RaceScheduler

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with _open(arena_dir) as arena:
        say_err(f"arena {arena_dir}: advancing the races every {tick_s:g} s — state {arena.store.url}")
        scheduler = RaceScheduler(RaceEngine(arena), tick_s)
        try:
            scheduler.run()
        except KeyboardInterrupt:
            say_err("ticker stopped")


def register(app: typer.Typer) -> None:
    app.add_typer(arena_app, name="arena")
