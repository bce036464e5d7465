"""`shoparena validator run`: claim jobs from an arena, evaluate them in the sandbox, post the results."""

from __future__ import annotations

import inspect
import logging
from typing import Annotated, Any

import typer
from pydantic import Field, ValidationError

from shoparena.arena.participants.validator import ValidatorSettings
from shoparena.cli.common import fail, print_json, say, say_err
from shoparena.cli.eval_cmd import EvalCommandOptions
from shoparena.cli.key_options import (
    KeyOption,
    WalletHotkeyOption,
    WalletOption,
    WalletPathOption,
)
from shoparena.cli.miner_cmd import ArenaOption, open_client, refused, scores
from shoparena.cli.model_options import command_from_models, model_values, validation_message
from shoparena.records.options import CliFlag, fields_of

validator_app = typer.Typer(
    name="validator",
    help="Evaluate an arena's submissions: claim a job, run it in the sandbox, judge, post.",
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


def connection(
    arena: ArenaOption = "http://127.0.0.1:8742",
    key: KeyOption = None,
    wallet: WalletOption = None,
    hotkey: WalletHotkeyOption = "default",
    wallet_path: WalletPathOption = None,
) -> None:
    """The arena and the key to sign with: the options every signed command shares."""


class ValidatorRunOptions(
    fields_of(EvalCommandOptions, "judge_base_url", "judge_api_key", name="JudgeEndpoint")
):
    """The command's own options, beside the validator's (`ValidatorSettings`): the openai judge's
    endpoint as `eval` takes it, one job or many, and how a report is shown."""

    once: bool = Field(False, description="Evaluate one job (if one is waiting) and exit.")
    as_json: Annotated[bool, CliFlag(flag="--json")] = Field(
        False, description="Print each job's report as JSON."
    )


RUN_ORDER = (
    *inspect.signature(connection).parameters,
    "once",
    "workers",
    "judge",
    "judge_base_url",
    "judge_api_key",
    "catalog",
    "sandbox",
    "poll_s",
    "inference_models",
    "as_json",
)
RUN_HELP = """Claim jobs and evaluate them until interrupted (or one with --once).

Exit status with --once: 0 a result was posted (or no job was waiting), 1 the job failed or its
lease was lost, 2 this validator cannot evaluate the arena's jobs (catalogue, key, arena).

Examples:
  shoparena validator run --once --key validator.json
  shoparena validator run --key validator.json --workers 4 --catalog cat
  shoparena validator run --key validator.json --judge openai:gpt-4o-mini
"""


def validator_settings(values: dict[str, Any]) -> tuple[ValidatorRunOptions, ValidatorSettings]:
    from shoparena.agents.base import AgentSpecError
    from shoparena.agents.miner.file_agent import parse_models

    command = ValidatorRunOptions(**model_values(ValidatorRunOptions, values))
    judge_options = (
        {"base_url": command.judge_base_url, "api_key": values["judge_api_key"]}
        if (values["judge"] or "offline").startswith("openai:")
        else {}
    )
    try:
        settings = ValidatorSettings(
            **model_values(ValidatorSettings, values),
            judge_options={k: v for k, v in judge_options.items() if v is not None},
            inference_models=parse_models(values["inference_models"]) if values["inference_models"] else None,
        )
    except AgentSpecError as exc:
        raise fail(f"--inference-models: {exc}") from None
    except ValidationError as exc:
        raise fail(validation_message(ValidatorSettings, exc)) from None
    return command, settings


def run_command(**values: Any) -> None:
    from shoparena.arena.errors import ArenaError
    from shoparena.arena.participants.validator import JobFailed, Validator, ValidatorError

    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    command, settings = validator_settings(values)
    if settings.sandbox == "none":
        say_err("[bold red]warning:[/] --sandbox none: miner code runs unconfined on this machine")
    client = open_client(*(values[name] for name in inspect.signature(connection).parameters))

    def show(report) -> None:
        if command.as_json:
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
                f"{info.problems_count} problems per job, {info.evaluation.similarity} similarity, "
                f"judge {settings.judge}, sandbox {settings.sandbox}"
            )
            if not command.once:
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
        if command.as_json:
            print_json({"job": None})
        else:
            say("no job waiting")
        return
    show(report)
    if report.status != "posted":
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    command_from_models(
        validator_app,
        "run",
        (connection, ValidatorRunOptions, ValidatorSettings),
        run_command,
        RUN_HELP,
        RUN_ORDER,
    )
    app.add_typer(validator_app, name="validator")
