"""`shoparena validator run`: claim jobs from an arena, evaluate them in the sandbox, post the results."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from shoparena.cli.common import fail, print_json, say, say_err
from shoparena.cli.key_options import (
    KeyOption,
    WalletHotkeyOption,
    WalletOption,
    WalletPathOption,
)
from shoparena.cli.miner_cmd import ArenaOption, open_client, refused, scores

validator_app = typer.Typer(
    name="validator",
    help="Evaluate an arena's submissions: claim a job, run it in the sandbox, judge, post (SPEC §6).",
    no_args_is_help=True,
)


def _summary(report) -> str:
    if report.status == "lease_lost":
        return (
            f"job {report.job_id} (submission {report.submission_id}): the lease was lost ({report.detail}); "
            "the job went back to the queue and nothing was posted"
        )
    stored = "stored" if report.created else "posted again; the arena had this result already"
    return (
        f"job {report.job_id} (submission {report.submission_id}): {scores(report.result)} — "
        f"{stored} ({report.wall_s:.1f} s)"
    )


InferenceModelsOption = Annotated[
    str | None,
    typer.Option(
        "--inference-models",
        help="The inference proxy's allowlist for miner code: NAME=UPSTREAM,… with UPSTREAM offline:NAME "
        "or http://HOST:PORT/v1#MODEL (e.g. a checkpoint served by `shoparena model serve`) "
        "\\[default: the offline reference models].",
        show_default=False,
    ),
]
"""`validator run` and `miner try`: the models miner code may ask for (`agents.file_agent.parse_models`)."""


@validator_app.command("run")
def run_cmd(
    arena: ArenaOption = "http://127.0.0.1:8742",
    key: KeyOption = None,
    wallet: WalletOption = None,
    hotkey: WalletHotkeyOption = "default",
    wallet_path: WalletPathOption = None,
    once: Annotated[
        bool, typer.Option("--once", help="Evaluate one job (if one is waiting) and exit.")
    ] = False,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Problems of a job run in parallel.")] = 1,
    judge: Annotated[
        str, typer.Option("--judge", help="offline (rules, no model) or openai:MODEL (the LLM judge).")
    ] = "offline",
    judge_base_url: Annotated[
        str | None,
        typer.Option(
            "--judge-base-url", help="openai judge: endpoint (or OPENAI_BASE_URL).", show_default=False
        ),
    ] = None,
    judge_api_key: Annotated[
        str | None,
        typer.Option("--judge-api-key", help="openai judge: key (or OPENAI_API_KEY).", show_default=False),
    ] = None,
    catalog: Annotated[
        Path | None,
        typer.Option(
            "--catalog",
            help="The arena's catalogue on this machine \\[default: the path the arena names].",
            show_default=False,
        ),
    ] = None,
    sandbox: Annotated[
        str, typer.Option("--sandbox", help="Where miner code runs: bwrap, container, or none (unconfined).")
    ] = "bwrap",
    poll_s: Annotated[
        float, typer.Option("--poll-s", min=0.1, help="Wait between claims while no job is waiting (s).")
    ] = 10.0,
    inference_models: InferenceModelsOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print each job's report as JSON.")] = False,
) -> None:
    """Claim jobs and evaluate them until interrupted (or one with --once).

    Exit status with --once: 0 a result was posted (or no job was waiting), 1 the job failed or its
    lease was lost, 2 this validator cannot evaluate the arena's jobs (catalogue, key, arena).

    Examples:
      shoparena validator run --once --key validator.json
      shoparena validator run --key validator.json --workers 4 --catalog cat
      shoparena validator run --key validator.json --judge openai:gpt-4o-mini
    """
    from pydantic import ValidationError

    from shoparena.agents.base import AgentSpecError
    from shoparena.agents.miner.file_agent import parse_models
    from shoparena.arena.errors import ArenaError
    from shoparena.arena.participants.validator import JobFailed, Validator, ValidatorError, ValidatorSettings

    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    judge_options = (
        {"base_url": judge_base_url, "api_key": judge_api_key} if judge.startswith("openai:") else {}
    )
    try:
        settings = ValidatorSettings(
            catalog=catalog,
            workers=workers,
            judge=judge,
            judge_options={k: v for k, v in judge_options.items() if v is not None},
            sandbox=sandbox,
            poll_s=poll_s,
            inference_models=parse_models(inference_models) if inference_models else None,
        )
    except AgentSpecError as exc:
        raise fail(f"--inference-models: {exc}") from None
    except ValidationError as exc:
        raise fail("; ".join(f"--{e['loc'][0]}: {e['msg']}" for e in exc.errors())) from None
    if sandbox == "none":
        say_err("[bold red]warning:[/] --sandbox none: miner code runs unconfined on this machine")
    client = open_client(arena, key, wallet, hotkey, wallet_path)

    def show(report) -> None:
        if as_json:
            print_json(report.model_dump(mode="json"))
        else:
            say(_summary(report))

    def show_error(exc: JobFailed) -> None:
        say_err(f"[red]job failed:[/] {exc} (given back to the queue)")

    with client, Validator(client, settings) as validator:
        try:
            info = validator.check()
            say_err(
                f"validator {validator.hotkey} on {client.url}: catalogue ok ({info.catalog_fingerprint}), "
                f"{info.problems_count} problems per job, {info.evaluation.similarity} similarity, judge {judge}, "
                f"sandbox {sandbox}"
            )
            if not once:
                validator.run(on_report=show, on_error=show_error)
                return
            report = validator.run_once()
        except KeyboardInterrupt:
            say_err("interrupted: a job in progress was given back to the queue")
            raise typer.Exit(130) from None
        except ValidatorError as exc:
            raise fail(str(exc)) from None
        except JobFailed as exc:
            raise fail(f"{exc} (given back to the queue)", code=1) from None
        except ArenaError as exc:
            raise refused(exc, validator.hotkey, role="validator") from None
    if report is None:
        if as_json:
            print_json({"job": None})
        else:
            say("no job waiting")
        return
    show(report)
    if report.status != "posted":
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(validator_app, name="validator")
