"""A training checkpoint as an OpenAI-compatible endpoint, so the arena's inference proxy can forward an
allowlisted model to it (SPEC §6, the closed loop: a distilled model back in the arena).

The checkpoint (a full Hugging Face directory or a LoRA adapter directory) is loaded by `HFAgent`, and
each request is rendered exactly as that agent's chat loop renders an episode (`ChatLoop.render_history`:
qwen3 turns with tools and tool results through the checkpoint's own chat template, the agent's system
prompt in front when the client sends none), so the served model sees the format it was trained on
(`shoparena.train.chat_render`). The generated text is parsed by the harness's qwen3 protocol and
answered as an OpenAI assistant message: `content`, `reasoning_content` (the `<think>` part),
`tool_calls` (ids `call_…`, arguments as JSON text), `finish_reason` and `usage`, which the proxy
counts its token budget from.

Routes: `GET /v1/models`, `POST /v1/chat/completions` (no streaming, n = 1), `GET /health`. Errors are
OpenAI-shaped (`{"error": {"message", "type", "param", "code"}}`): 400 for a request that does not
validate (the message names the field), 404 for another model name, 413 for a body over the limit,
500 when generation fails, 503 when the model stayed busy past `queue_timeout_s`. One generation runs
at a time (torch is not re-entrant per model); the others wait their turn.

`start_model_server` is the one entry point: backend `hf` serves in this process (uvicorn in a
thread), backend `vllm` launches a vLLM server (`vllm_server`). Both are context managers with
`base_url` and `upstream_spec(name)`, the string the proxy's `inference_models` takes.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Protocol

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from shoparena.agents.chat_loop import DEFAULT_SYSTEM_PROMPT, ModelError
from shoparena.agents.hf_agent import Generation, HFAgent
from shoparena.harness.loopback import AppThread
from shoparena.harness.models import ParsedTurn
from shoparena.harness.protocols import OPENAI
from shoparena.inference.model_api import ChatRequest, invalid_text_path, validation_message
from shoparena.inference.serve_settings import DEFAULT_MAX_NEW_TOKENS
from shoparena.records.options import ServeBackend

MAX_BODY_BYTES = 8 << 20
QUEUE_TIMEOUT_S = 600.0


class ApiError(Exception):
    """An OpenAI-style error answer."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        kind: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.kind, self.param, self.code = status, message, kind, param, code

    def response(self) -> JSONResponse:
        body = {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}
        return JSONResponse({"error": body}, status_code=self.status)


class ChatModel:
    """One loaded checkpoint behind the routes: render a request, generate (one at a time), parse."""

    def __init__(
        self,
        agent: HFAgent,
        name: str,
        *,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        queue_timeout_s: float = QUEUE_TIMEOUT_S,
        log: str | Path | None = None,
    ):
        if max_new_tokens < 1:
            raise ValueError(f"model server: max_new_tokens must be at least 1, got {max_new_tokens}")
        self.agent = agent
        self.name = name
        self.max_new_tokens = max_new_tokens
        self.queue_timeout_s = queue_timeout_s
        self.log = Path(log) if log is not None else None
        self.created = int(time.time())
        self._generating = threading.Lock()
        self._log_lock = threading.Lock()

    def prompt(self, request: ChatRequest) -> str:
        """The prompt text for the request, rendered as the agent renders its own episodes."""
        loop = self.agent.loop
        messages, tools = loop.render_history(
            loop.with_system_prompt(request.history()), request.tool_schemas()
        )
        try:
            return self.agent.render_prompt(messages, tools)
        except Exception as exc:  # jinja2's TemplateError and the template's own raise_exception
            raise ApiError(
                400, f"the chat template cannot render these messages: {exc}", param="messages"
            ) from None

    def complete(self, request: ChatRequest) -> dict[str, Any]:
        """The chat.completion response for a validated request (raises ApiError)."""
        if request.model != self.name:
            raise ApiError(
                404,
                f"the model {request.model!r} does not exist; this server serves {self.name!r}",
                param="model",
                code="model_not_found",
            )
        prompt = self.prompt(request)
        generation = self._generate(prompt, request)
        text, stopped = cut_at_stop(generation.text, request.stop or [])
        message, finish = assistant_message(self.agent.loop.protocol.parse(text))
        if finish == "stop" and generation.finish_reason == "length" and not stopped:
            finish = "length"
        usage = {
            "prompt_tokens": generation.prompt_tokens,
            "completion_tokens": generation.completion_tokens,
            "total_tokens": generation.prompt_tokens + generation.completion_tokens,
        }
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.name,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": usage,
        }

    def _generate(self, prompt: str, request: ChatRequest) -> Generation:
        if not self._generating.acquire(timeout=self.queue_timeout_s):
            raise ApiError(
                503,
                f"the model stayed busy for {self.queue_timeout_s:g} s; retry later",
                kind="server_error",
                code="busy",
            )
        try:
            return self.agent.generate(
                prompt,
                max_new_tokens=request.completion_limit(self.max_new_tokens),
                temperature=request.temperature,
                top_p=request.top_p,
                seed=request.seed,
            )
        except ModelError as exc:  # the prompt does not fit the context: the client's to shorten
            raise ApiError(400, str(exc), param="messages", code="context_length_exceeded") from None
        except Exception as exc:
            raise ApiError(
                500, f"generation failed: {type(exc).__name__}: {exc}", kind="server_error"
            ) from None
        finally:
            self._generating.release()

    def models(self) -> dict[str, Any]:
        entry = {"id": self.name, "object": "model", "created": self.created, "owned_by": "shoparena"}
        return {"object": "list", "data": [entry]}

    def record(self, entry: dict[str, Any]) -> None:
        """Append one request's line (status, tokens, latency) to the log file, when there is one."""
        if self.log is None:
            return
        line = json.dumps(entry, ensure_ascii=True) + "\n"
        with self._log_lock, self.log.open("a", encoding="utf-8") as out:
            out.write(line)


def cut_at_stop(text: str, stops: list[str]) -> tuple[str, bool]:
    """`text` up to the first stop string (applied after generation; the tokens were still spent)."""
    hits = [i for i in (text.find(stop) for stop in stops if stop) if i >= 0]
    return (text[: min(hits)], True) if hits else (text, False)


def assistant_message(turn: ParsedTurn) -> tuple[dict[str, Any], str]:
    """An OpenAI assistant message for a parsed qwen3 turn, and its finish reason (`tool_calls`/`stop`).

    A `<tool_call>` block the parser could not read as a named call (not JSON, a list, no name) stays
    in the content as written, so nothing the model said is lost; a named call whose arguments are
    not a JSON object is still a tool call, with the text as its arguments (the harness answers it with
    an error observation, as it would in an in-process episode)."""
    named = [call for call in turn.calls if call.name]
    content = turn.content or ""
    for call in turn.calls:
        if not call.name:
            content += (
                f"\n<tool_call>\n{call.raw}\n</tool_call>"
                if content
                else f"<tool_call>\n{call.raw}\n</tool_call>"
            )
    message = OPENAI.render_turn(ParsedTurn(thinking=turn.thinking, content=content or None, calls=named))
    for call in message.get("tool_calls", []):
        call["id"] = f"call_{uuid.uuid4().hex[:24]}"  # unique across the turns of a conversation
    if not named and message["content"] is None:
        message["content"] = ""
    return message, "tool_calls" if named else "stop"


def build_app(model: ChatModel, *, max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    """The FastAPI app over one ChatModel."""
    app = FastAPI(title=f"shoparena model server: {model.name}", docs_url=None, redoc_url=None)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return ApiError(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}").response()

    @app.get("/health")
    async def health() -> dict[str, bool]:
        return {"ok": True}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return model.models()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        started = time.monotonic()
        try:
            body = await request.body()
            if len(body) > max_body_bytes:
                raise ApiError(413, f"the body has {len(body):,} bytes; at most {max_body_bytes:,}")
            parsed = parse_request(body)
            answer = await run_in_threadpool(model.complete, parsed)
        except ApiError as exc:
            model.record(
                {
                    "status": exc.status,
                    "error": exc.message,
                    "latency_s": round(time.monotonic() - started, 4),
                }
            )
            return exc.response()
        model.record(
            {
                "status": 200,
                **answer["usage"],
                "finish_reason": answer["choices"][0]["finish_reason"],
                "latency_s": round(time.monotonic() - started, 4),
            }
        )
        return JSONResponse(answer)

    return app


def parse_request(body: bytes) -> ChatRequest:
    """The validated request, or a 400 ApiError naming the field and the problem."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, f"the body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError(400, f"the body must be a JSON object, got {type(data).__name__}")
    where = invalid_text_path(data)
    if where is not None:
        raise ApiError(400, f"{where}: the text is not valid Unicode (a lone surrogate escape)", param=where)
    try:
        return ChatRequest.model_validate(data)
    except ValidationError as exc:
        message, param = validation_message(exc)
        raise ApiError(400, message, param=param or None) from None


# -- running it ---------------------------------------------------------------------------------------
class ModelServer(Protocol):
    """What `start_model_server` returns, whatever the backend."""

    name: str

    @property
    def base_url(self) -> str: ...

    def upstream_spec(self, name: str | None = None) -> str: ...

    def start(self) -> ModelServer: ...

    def stop(self) -> None: ...

    def serve_forever(self) -> None: ...

    def __enter__(self) -> ModelServer: ...

    def __exit__(self, *exc: object) -> None: ...


class HFModelServer:
    """A checkpoint served by this process (backend `hf`): loaded on `start()`, uvicorn in a thread."""

    def __init__(
        self,
        checkpoint: str | Path,
        *,
        name: str,
        host: str = "127.0.0.1",
        port: int = 0,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        device: str = "auto",
        log: str | Path | None = None,
        dtype: str = "auto",
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        queue_timeout_s: float = QUEUE_TIMEOUT_S,
        trust_remote_code: bool = False,
    ):
        self.checkpoint = str(checkpoint)
        self.name = name
        self.host, self.port = host, port
        self.max_new_tokens = max_new_tokens
        self.device, self.dtype = device, dtype
        self.log = log
        self.system_prompt = system_prompt
        self.queue_timeout_s = queue_timeout_s
        self.trust_remote_code = trust_remote_code
        self.model: ChatModel | None = None
        self._thread: AppThread | None = None

    @property
    def agent(self) -> HFAgent:
        """The loaded agent (tests replace its `generate`)."""
        if self.model is None:
            raise RuntimeError("model server: not started")
        return self.model.agent

    @property
    def base_url(self) -> str:
        if self._thread is None:
            raise RuntimeError("model server: not started")
        return f"{self._thread.url}/v1"

    def upstream_spec(self, name: str | None = None) -> str:
        """`http://HOST:PORT/v1#NAME`: what the proxy's `inference_models` maps a public name to."""
        return f"{self.base_url}#{name or self.name}"

    def start(self) -> HFModelServer:
        if self._thread is not None:
            return self
        agent = HFAgent(
            self.checkpoint,
            device=self.device,
            protocol="qwen3",
            max_new_tokens=self.max_new_tokens,
            dtype=self.dtype,
            system_prompt=self.system_prompt,
            trust_remote_code=self.trust_remote_code,
        )
        self.model = ChatModel(
            agent,
            self.name,
            max_new_tokens=self.max_new_tokens,
            queue_timeout_s=self.queue_timeout_s,
            log=self.log,
        )
        self._thread = AppThread(
            build_app(self.model), self.host, self.port, name=f"model-server:{self.name}"
        )
        try:
            self._thread.start()
        except BaseException:
            self._thread = None
            agent.close()
            raise
        return self

    def serve_forever(self) -> None:
        if self._thread is None:
            raise RuntimeError("model server: not started")
        self._thread.serve_forever()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop()
        if self.model is not None:
            self.model.agent.close()
            self.model = None

    def __enter__(self) -> HFModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_model_server(
    checkpoint: str | Path,
    *,
    name: str,
    backend: ServeBackend = "hf",
    host: str = "127.0.0.1",
    port: int = 0,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
    device: str = "auto",
    log: str | Path | None = None,
    **options: Any,
) -> ModelServer:
    """A model server for `checkpoint` under the model name `name`; use it as a context manager.

    Backend `hf` serves from this process with transformers (CPU or GPU); `vllm` launches vLLM (GPU,
    `pip install vllm`). `port` 0 picks a free port; `log` is a file for the request log (hf) or
    vLLM's output. Further `options` go to `HFModelServer` or `VllmServer`."""
    if not name.strip():
        raise ValueError("model server: give the model a name (what clients put in `model`)")
    if backend == "hf":
        return HFModelServer(
            checkpoint,
            name=name,
            host=host,
            port=port,
            max_new_tokens=max_new_tokens,
            device=device,
            log=log,
            **options,
        )
    if backend == "vllm":
        from shoparena.inference.vllm_server import VllmServer

        return VllmServer(
            checkpoint,
            name=name,
            host=host,
            port=port,
            max_new_tokens=max_new_tokens,
            device=device,
            log=log,
            **options,
        )
    raise ValueError(f"model server: unknown backend {backend!r}; use hf or vllm")
