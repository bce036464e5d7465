"""A checkpoint served by vLLM (backend `vllm` of `start_model_server`): for a GPU machine, where one
process batching many episodes' requests beats the in-process `hf` server by orders of magnitude.

vLLM runs as a subprocess (`python -m vllm.entrypoints.openai.api_server`, in its own process group so
stopping it takes its workers too) with the qwen3 tool-call format parsed by vLLM's `hermes` parser
(`<tool_call>{"name", "arguments"}</tool_call>`, the format the training stages write). A LoRA adapter
directory is served on its base model (`base_model_name_or_path` in `adapter_config.json`) with
`--enable-lora --lora-modules NAME=DIR`, so requests for NAME get the adapter; the bare base answers
to `NAME-base`. `max_new_tokens` becomes vLLM's default completion length; vLLM does not cap a
request's own `max_tokens` — the proxy's `max_completion_tokens` does.

vLLM is not a dependency of shoparena (it needs CUDA): without it, `start()` says how to install it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from shoparena.agents.hf_agent import adapter_base_path, is_adapter_dir
from shoparena.inference.serve_settings import STARTUP_TIMEOUT_S

STOP_GRACE_S = 30.0
LOG_TAIL_LINES = 40


class VllmUnavailable(RuntimeError):
    """vLLM is not installed in this Python environment."""


class VllmStartError(RuntimeError):
    """vLLM exited or did not answer `/v1/models` in time; the message ends with its log's tail."""


def vllm_installed() -> bool:
    return importlib.util.find_spec("vllm") is not None


def lora_rank(adapter_dir: str | Path) -> int | None:
    """The adapter's rank `r` (vLLM refuses adapters above `--max-lora-rank`, 16 by default)."""
    rank = json.loads((Path(adapter_dir) / "adapter_config.json").read_text()).get("r")
    return rank if isinstance(rank, int) else None


def vllm_command(
    checkpoint: str | Path,
    *,
    name: str,
    host: str,
    port: int,
    max_new_tokens: int | None = None,
    python: str = sys.executable,
    extra_args: tuple[str, ...] = (),
) -> list[str]:
    """The command line that serves `checkpoint` as model `name` on `host:port`."""
    checkpoint = str(checkpoint)
    command = [python, "-m", "vllm.entrypoints.openai.api_server", "--host", host, "--port", str(port)]
    if is_adapter_dir(checkpoint):
        base = adapter_base_path(checkpoint)
        if is_adapter_dir(base):
            raise ValueError(
                f"vllm backend: {checkpoint} is an adapter on another adapter ({base}); vLLM serves one "
                "adapter on a full model: merge the first one into its base (or use --backend hf)"
            )
        command += ["--model", base, "--served-model-name", f"{name}-base"]
        command += ["--enable-lora", "--lora-modules", f"{name}={Path(checkpoint).resolve()}"]
        rank = lora_rank(checkpoint)
        if rank is not None and rank > 16:
            command += ["--max-lora-rank", str(rank)]
    else:
        command += ["--model", checkpoint, "--served-model-name", name]
    command += ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    if max_new_tokens is not None:
        command += ["--override-generation-config", json.dumps({"max_new_tokens": max_new_tokens})]
    return command + list(extra_args)


def visible_devices(device: str) -> str | None:
    """CUDA_VISIBLE_DEVICES for a `--device`: `cuda:N` pins GPU N; `auto`/`cuda` leave vLLM's choice."""
    if device in ("auto", "cuda"):
        return None
    if device.startswith("cuda:") and device[5:].isdigit():
        return device[5:]
    raise ValueError(
        f"vllm backend: device {device!r} is not a GPU; use auto, cuda or cuda:N (or --backend hf)"
    )


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class VllmServer:
    """vLLM serving `checkpoint` as `name` while started; a context manager like `HFModelServer`."""

    def __init__(
        self,
        checkpoint: str | Path,
        *,
        name: str,
        host: str = "127.0.0.1",
        port: int = 0,
        max_new_tokens: int | None = None,
        device: str = "auto",
        log: str | Path | None = None,
        startup_timeout_s: float = STARTUP_TIMEOUT_S,
        extra_args: tuple[str, ...] = (),
        python: str = sys.executable,
    ):
        self.checkpoint = str(checkpoint)
        self.name = name
        self.host, self.port = host, port
        self.max_new_tokens = max_new_tokens
        self.cuda_devices = visible_devices(device)
        self.log = Path(log) if log is not None else None
        self.startup_timeout_s = startup_timeout_s
        self.extra_args = extra_args
        self.python = python
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        if self.process is None:
            raise RuntimeError("vllm server: not started")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def upstream_spec(self, name: str | None = None) -> str:
        return f"{self.base_url}#{name or self.name}"

    def command(self) -> list[str]:
        return vllm_command(
            self.checkpoint,
            name=self.name,
            host=self.host,
            port=self.port,
            max_new_tokens=self.max_new_tokens,
            python=self.python,
            extra_args=self.extra_args,
        )

    def start(self) -> VllmServer:
        if self.process is not None:
            return self
        if self.python == sys.executable and not vllm_installed():
            raise VllmUnavailable(
                "the vllm backend needs vLLM, which is not installed in this environment: "
                "pip install vllm on a machine with a CUDA GPU (or serve with --backend hf)"
            )
        if self.port == 0:
            self.port = free_port(self.host)
        return self.launch(self.command())

    def launch(self, command: list[str]) -> VllmServer:
        """Run `command` (vLLM's, or a stand-in) and wait until it answers `/v1/models`."""
        if self.log is None:
            handle, path = tempfile.mkstemp(prefix=f"vllm-{self.name}-", suffix=".log")
            os.close(handle)
            self.log = Path(path)
        env = dict(os.environ)
        if self.cuda_devices is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.cuda_devices
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        try:
            self._wait_ready(self.log)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, log: Path) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.startup_timeout_s
        url = f"{self.base_url}/models"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while True:
            code = self.process.poll()
            if code is not None:
                raise VllmStartError(
                    f"vLLM exited with status {code} before serving; {log}:\n{log_tail(log)}"
                )  # type: ignore[arg-type]
            try:
                with opener.open(url, timeout=5) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise VllmStartError(
                    f"vLLM did not answer {url} within {self.startup_timeout_s:g} s; {log}:\n{log_tail(log)}"
                )
            time.sleep(0.5)

    def serve_forever(self) -> None:
        """Block until vLLM exits (Ctrl-C in a CLI)."""
        if self.process is None:
            raise RuntimeError("vllm server: not started")
        self.process.wait()

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        except ProcessLookupError:
            pass

    def __enter__(self) -> VllmServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
