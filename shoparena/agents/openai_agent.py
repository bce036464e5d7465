"""An agent over any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, SGLang, llama.cpp server).

The HTTP client is the standard library's: one POST per turn, so a connection pool buys an agent
nothing, and owning the retry loop is what makes its behaviour exact: exponential backoff with full
jitter on 408, 429, 5xx, timeouts and connection errors, `Retry-After` honoured, other 4xx fail at
once (retrying a bad request cannot fix it). A run whose model stays unreachable ends with
`AgentRun.error`. A caller in the middle of every request (the inference proxy) asks for
`keep_alive=True`: one persistent connection per thread (TCP_NODELAY, no environment proxies), the
same retries and errors; a request that meets a kept connection the server has closed is sent once
more on a new one.
"""

from __future__ import annotations

import email.utils
import http.client
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from shoparena.agents.base import Agent, AgentRun, ProblemView, episode_seed
from shoparena.agents.chat_loop import (
    DEFAULT_SYSTEM_PROMPT,
    ChatLoop,
    Completion,
    ModelError,
)
from shoparena.harness import jsontext
from shoparena.harness.episode import Episode
from shoparena.harness.protocols import canonical_protocol

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 120.0


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class RetryableError(Exception):
    """A failed attempt worth repeating; `retry_after` is the server's wish in seconds, when it said one."""

    def __init__(self, message: str, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


class RequestRejected(ModelError):
    """The endpoint refused the request for good (a 4xx other than the retryable ones)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class ChatCompletionsClient:
    """POST /chat/completions with retries; `create(payload)` returns the decoded response body."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 30.0,
        headers: dict[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        keep_alive: bool = False,
    ):
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {max_retries}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.headers = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self.sleep = sleep
        self.rng = rng or random.Random()
        handlers: list[Any] = []
        if urllib.parse.urlparse(self.url).hostname in LOOPBACK_HOSTS:
            handlers.append(urllib.request.ProxyHandler({}))  # a local server is never behind a proxy
        self._opener = urllib.request.build_opener(*handlers)
        self.keep_alive = keep_alive
        parts = urllib.parse.urlsplit(self.url)
        if keep_alive and (parts.scheme not in ("http", "https") or not parts.hostname):
            raise ValueError(f"{self.url}: keep_alive needs an http:// or https:// URL")
        self._split = parts
        self._local = threading.local()
        self._kept: list[http.client.HTTPConnection] = []
        self._kept_lock = threading.Lock()
        self.attempts = 0
        """Every HTTP attempt made so far (retries included)."""
        self.failures: list[str] = []
        """Why each failed attempt failed, in order (for logs and tests)."""

    def create(self, payload: dict[str, Any]) -> dict[str, Any]:
        body = jsontext.dumps(payload).encode()
        failures: list[str] = []
        for attempt in range(self.max_retries + 1):
            try:
                return self._post(body)
            except RetryableError as exc:
                failures.append(str(exc))
                self.failures.append(str(exc))
                if attempt == self.max_retries:
                    break
                self.sleep(self._delay(attempt, exc.retry_after))
        raise ModelError(
            f"{self.url}: gave up after {len(failures)} attempts; last error: {failures[-1]}"
            + (f" (earlier: {'; '.join(failures[:-1])})" if len(failures) > 1 else "")
        )

    def post_once(self, payload: dict[str, Any]) -> dict[str, Any]:
        """One attempt, no retry: for callers with their own retry policy (the LLM judge's fallbacks).

        Raises `RetryableError` (with the HTTP status when there was one) or `RequestRejected`."""
        return self._post(jsontext.dumps(payload).encode())

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), MAX_RETRY_AFTER_S)
        return self.rng.uniform(0, min(self.backoff_max_s, self.backoff_base_s * 2**attempt))

    def close(self) -> None:
        """Close the kept connections (keep_alive); the client opens new ones if used again."""
        with self._kept_lock:
            kept, self._kept = self._kept, []
        for connection in kept:
            connection.close()

    def _post(self, body: bytes) -> dict[str, Any]:
        self.attempts += 1
        if self.keep_alive:
            return self._post_kept(body)
        request = urllib.request.Request(self.url, data=body, headers=self.headers, method="POST")
        deadline = time.monotonic() + self.timeout_s
        try:
            with self._opener.open(request, timeout=self.timeout_s) as response:
                raw = _read_until(response, deadline, self.timeout_s)
        except urllib.error.HTTPError as exc:
            detail = _error_detail(exc)
            message = f"HTTP {exc.code}: {detail}"
            if exc.code in RETRY_STATUSES or exc.code >= 500:
                raise RetryableError(
                    message, retry_after_seconds(exc.headers.get("Retry-After")), exc.code
                ) from None
            raise RequestRejected(f"{self.url}: {message}", exc.code) from None
        except TimeoutError:
            raise RetryableError(f"no response within {self.timeout_s:g} s") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise RetryableError(f"no response within {self.timeout_s:g} s") from None
            raise RetryableError(f"connection failed: {exc.reason}") from None
        except (ConnectionError, http.client.HTTPException, OSError) as exc:
            raise RetryableError(f"connection failed: {type(exc).__name__}: {exc}") from None
        return _decoded(raw)

    # -- keep_alive ----------------------------------------------------------------------------------
    def _connection(self, fresh: bool) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's kept connection (new when `fresh` or none yet), and whether it was reused."""
        connection = getattr(self._local, "connection", None)
        if connection is not None and not fresh:
            return connection, True
        self._drop()
        parts = self._split
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = kind(parts.hostname, parts.port, timeout=self.timeout_s)
        connection.connect()
        connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._local.connection = connection
        with self._kept_lock:
            self._kept.append(connection)
        return connection, False

    def _drop(self) -> None:
        connection = getattr(self._local, "connection", None)
        self._local.connection = None
        if connection is not None:
            connection.close()
            with self._kept_lock:
                if connection in self._kept:
                    self._kept.remove(connection)

    def _post_kept(self, body: bytes) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        path = self._split.path + (f"?{self._split.query}" if self._split.query else "")
        for fresh in (False, True):
            reused = False
            try:
                connection, reused = self._connection(fresh)
                connection.request("POST", path, body=body, headers=self.headers)
                response = connection.getresponse()
                raw = _read_until(response, deadline, self.timeout_s)
                response.read()  # the body is all read: this marks the response done, the connection free
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self._drop()
                if reused and not fresh:
                    continue  # the server closed a kept connection: the request never reached it
                raise RetryableError(f"connection failed: {type(exc).__name__}: {exc}") from None
            except TimeoutError:
                self._drop()
                raise RetryableError(f"no response within {self.timeout_s:g} s") from None
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                raise RetryableError(f"connection failed: {type(exc).__name__}: {exc}") from None
            if response.will_close:
                self._drop()
            break
        if response.status >= 400:
            message = f"HTTP {response.status}: {_detail_text(raw.decode('utf-8', errors='replace'), response.reason)}"
            if response.status in RETRY_STATUSES or response.status >= 500:
                retry_after = retry_after_seconds(response.headers.get("Retry-After"))
                raise RetryableError(message, retry_after, response.status)
            raise RequestRejected(f"{self.url}: {message}", response.status)
        return _decoded(raw)


def _decoded(raw: bytes) -> dict[str, Any]:
    try:
        value = jsontext.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        raise RetryableError(f"response is not JSON: {raw[:120]!r}") from None
    if not isinstance(value, dict) or not value.get("choices"):
        raise RetryableError(f"response has no choices: {raw[:200]!r}")
    return value


def _read_until(response: http.client.HTTPResponse, deadline: float, timeout_s: float) -> bytes:
    """The body, abandoned when the whole read passes the deadline (a server trickling bytes included)."""
    chunks = []
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError(f"response not complete within {timeout_s:g} s")
        chunk = response.read1(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        text = exc.read().decode("utf-8", errors="replace")
    except Exception:
        return exc.reason or ""
    return _detail_text(text, exc.reason)


def _detail_text(text: str, reason: Any) -> str:
    """What an error body says: an OpenAI-style `error.message`, else the text's start."""
    try:
        value = jsontext.loads(text)
        if isinstance(value, dict) and isinstance(value.get("error"), dict):
            return str(value["error"].get("message") or value["error"])
    except ValueError:
        pass
    return text[:300] or str(reason)


def retry_after_seconds(header: str | None) -> float | None:
    """`Retry-After` as seconds: a number, or an HTTP date."""
    if header is None:
        return None
    try:
        return float(header)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


class OpenAIAgent(Agent):
    """A model behind a Chat Completions endpoint, speaking one of the three protocols."""

    kind = "openai"

    def __init__(
        self,
        model: str,
        client: ChatCompletionsClient,
        *,
        protocol: str = "openai",
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_tokens: int | None = 2048,
        seed: int | None = None,
        stop: list[str] | None = None,
        extra_body: dict[str, Any] | None = None,
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        max_turns: int | None = None,
        version: str = "0",
    ):
        super().__init__(model, version)
        self.model = model
        self.client = client
        self.protocol = canonical_protocol(protocol)  # fails at construction on a bad name
        self.sampling: dict[str, Any] = {"temperature": temperature, "top_p": top_p}
        if max_tokens is not None:
            self.sampling["max_tokens"] = max_tokens
        self.seed = seed
        if seed is not None:
            self.sampling["seed"] = seed
        if stop:
            self.sampling["stop"] = stop
        self.extra_body = dict(extra_body or {})
        self.loop = ChatLoop(self.complete, self.protocol, system_prompt=system_prompt, max_turns=max_turns)

    def complete(self, messages: list[dict], tools: list[dict] | None) -> Completion:
        payload: dict[str, Any] = {"model": self.model, "messages": messages, **self.sampling}
        if tools:
            payload["tools"] = tools
            payload["tool_choice"] = "auto"
        payload.update(self.extra_body)
        response = self.client.create(payload)
        choice = response["choices"][0]
        if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
            raise ModelError(f"response choice has no message: {jsontext.dumps(choice)[:200]}")
        message = choice["message"]
        usage = response.get("usage") or {}
        output: Any = message
        if self.loop.protocol.name != "openai":
            output = message.get("content") or ""
            if message.get("reasoning_content") and "<think>" not in output:
                # servers with a reasoning parser split the thinking off; the text protocols read it inline
                output = f"<think>{message['reasoning_content']}</think>{output}"
        return Completion(
            output=output,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=choice.get("finish_reason"),
        )

    def begin_episode(self, problem_id: str, sample: int) -> None:
        """With a seed, each (problem, sample) asks the server for a seed of its own (`episode_seed`):
        one seed for every request would make the samples of pass@k copies of each other."""
        if self.seed is not None:
            self.sampling["seed"] = episode_seed(self.seed, problem_id, sample)

    def run(self, episode: Episode, view: ProblemView) -> AgentRun:
        return self.loop.run(episode)

    def system_prompt_for(self, tools: list[dict]) -> str | None:
        """Lets a runner record the system prompt in the episode trace (see ChatLoop.system_prompt_for)."""
        return self.loop.system_prompt_for(tools)


def make_openai_agent(
    target: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    protocol: str = "openai",
    temperature: float = 0.0,
    top_p: float = 1.0,
    max_tokens: int | None = 2048,
    seed: int | None = None,
    timeout_s: float = 60.0,
    max_retries: int = 4,
    backoff_base_s: float = 1.0,
    backoff_max_s: float = 30.0,
    stop: list[str] | None = None,
    extra_body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    max_turns: int | None = None,
    version: str = "0",
) -> OpenAIAgent:
    """`openai:MODEL`; the endpoint comes from `base_url` or OPENAI_BASE_URL (default OpenAI's), the key
    from `api_key` or OPENAI_API_KEY (may be absent for a local server)."""
    if not target.strip():
        raise ValueError("openai agent: give a model name, e.g. openai:gpt-4o-mini")
    client = ChatCompletionsClient(
        base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL,
        api_key if api_key is not None else os.environ.get("OPENAI_API_KEY"),
        timeout_s=timeout_s,
        max_retries=max_retries,
        backoff_base_s=backoff_base_s,
        backoff_max_s=backoff_max_s,
        headers=headers,
    )
    return OpenAIAgent(
        target,
        client,
        protocol=protocol,
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        seed=seed,
        stop=stop,
        extra_body=extra_body,
        system_prompt=system_prompt,
        max_turns=max_turns,
        version=version,
    )
