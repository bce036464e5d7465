"""`shoparena model serve`: a training checkpoint as an OpenAI-compatible endpoint for the arena's
inference proxy (`shoparena.inference.model_server`)."""

from __future__ import annotations

import signal
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from shoparena.cli.common import fail, say

model_app = typer.Typer(
    name="model",
    help="Serve a trained checkpoint so miner files can call it through the inference proxy.",
    no_args_is_help=True,
)


class BackendChoice(StrEnum):
    hf = "hf"
    vllm = "vllm"


@model_app.command("serve")
def serve_cmd(
    checkpoint: Annotated[
        Path,
        typer.Argument(help="A checkpoint directory or a LoRA adapter directory (base from its config)."),
    ],
    name: Annotated[str, typer.Option("--name", help="The model name clients send as `model`.")],
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port (0: a free one, printed).")] = 8000,
    backend: Annotated[
        BackendChoice,
        typer.Option(
            "--backend", help="hf: transformers in this process (CPU or GPU); vllm: launch vLLM (GPU)."
        ),
    ] = BackendChoice.hf,
    max_new_tokens: Annotated[
        int, typer.Option("--max-new-tokens", min=1, help="Most tokens one completion may generate.")
    ] = 2048,
    device: Annotated[str, typer.Option("--device", help="auto, cpu, cuda or cuda:N.")] = "auto",
    log: Annotated[
        Path | None, typer.Option("--log", help="Request log (hf, one JSON line each) or vLLM's output file.")
    ] = None,
) -> None:
    """Serve CHECKPOINT as model NAME: GET /v1/models, POST /v1/chat/completions (OpenAI, no streaming).

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
    from shoparena.inference.model_server import start_model_server
    from shoparena.inference.vllm_server import VllmStartError, VllmUnavailable

    try:
        server = start_model_server(
            checkpoint,
            name=name,
            backend=backend.value,
            host=host,
            port=port,
            max_new_tokens=max_new_tokens,
            device=device,
            log=log,
        )
        server.start()
    except (ValueError, OSError, VllmUnavailable, VllmStartError) as exc:
        raise fail(str(exc)) from None
    signal.signal(signal.SIGTERM, _interrupt)  # a stopped CLI must not orphan vLLM's process group
    try:
        say(f"serving {checkpoint} as [bold]{name}[/] at {server.base_url} ({backend.value})")
        say(f"proxy upstream: {name}={server.upstream_spec(name)}")
        server.serve_forever()
    except KeyboardInterrupt:
        say("stopping")
    finally:
        server.stop()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def register(app: typer.Typer) -> None:
    app.add_typer(model_app, name="model")
