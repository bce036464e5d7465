"""`shoparena model serve`: a training checkpoint as an OpenAI-compatible endpoint for the arena's
inference proxy (`shoparena.inference.model_server`)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from shoparena.cli.common import fail, say
from shoparena.cli.model_options import command_from_models, model_values, validation_message
from shoparena.inference.serve_settings import ServeSettings

model_app = typer.Typer(
    name="model",
    help="Serve a trained checkpoint so miner files can call it through the inference proxy.",
    no_args_is_help=True,
)


def served(
    checkpoint: Annotated[
        Path,
        typer.Argument(help="A checkpoint directory or a LoRA adapter directory (base from its config)."),
    ],
    name: Annotated[str, typer.Option("--name", help="The model name clients send as `model`.")],
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port (0: a free one, printed).")] = 8000,
    log: Annotated[
        Path | None, typer.Option("--log", help="Request log (hf, one JSON line each) or vLLM's output file.")
    ] = None,
) -> None:
    """What is served and where: the options beside how it is served (`ServeSettings`)."""


SERVE_HELP = """Serve CHECKPOINT as model NAME: GET /v1/models, POST /v1/chat/completions (OpenAI, no streaming).

Each request is rendered exactly as the hf: agent renders an episode (qwen3 tool calls and tool
results through the checkpoint's chat template), and the answer carries `tool_calls`,
`reasoning_content` and `usage`. Point the arena's inference proxy at it with the printed
upstream (see the examples: an eval of a miner file, an arena validator).

The proxy's allowlist entry is always NAME=http://HOST:PORT/v1#NAME (printed at start; the same
NAME=UPSTREAM form wherever the proxy is configured); the miner calls
miner_sdk.chat(messages, tools=..., model="NAME"). --backend vllm needs `pip install vllm` on a
GPU machine. Runs until Ctrl-C.

Examples:
  shoparena model serve runs/sft/final --name distilled --port 8000
  shoparena model serve runs/sft/final --name distilled --backend vllm --device cuda
  shoparena eval --catalog cat --problems bank.jsonl --agent file:miner.py --out runs/eval \\
      --option inference_models=distilled=http://127.0.0.1:8000/v1#distilled
  shoparena validator run --key validator.json --inference-models \\
      distilled=http://127.0.0.1:8000/v1#distilled,reference-agentic=offline:reference-agentic
"""


def serve(**values) -> None:
    from shoparena.inference.model_server import start_model_server
    from shoparena.inference.vllm_server import VllmStartError, VllmUnavailable

    try:
        settings = ServeSettings(**model_values(ServeSettings, values))
    except ValidationError as exc:
        raise fail(validation_message(ServeSettings, exc)) from None
    checkpoint, name = values["checkpoint"], values["name"]
    try:
        server = start_model_server(
            checkpoint,
            name=name,
            backend=settings.backend,
            host=values["host"],
            port=values["port"],
            max_new_tokens=settings.max_new_tokens,
            device=settings.device,
            log=values["log"],
        )
        server.start()
    except (ValueError, OSError, VllmUnavailable, VllmStartError) as exc:
        raise fail(str(exc)) from None
    signal.signal(signal.SIGTERM, _interrupt)  # a stopped CLI must not orphan vLLM's process group
    try:
        say(f"serving {checkpoint} as [bold]{name}[/] at {server.base_url} ({settings.backend})")
        say(f"proxy upstream: {name}={server.upstream_spec(name)}")
        server.serve_forever()
    except KeyboardInterrupt:
        say("stopping")
    finally:
        server.stop()


command_from_models(
    model_app,
    "serve",
    [served, ServeSettings],
    serve,
    SERVE_HELP,
    order=("checkpoint", "name", "host", "port", "backend", "max_new_tokens", "device", "log"),
)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def register(app: typer.Typer) -> None:
    app.add_typer(model_app, name="model")
