"""The tool client for miner files: `call_tool("find_product", q="yoga mat")`.

Standard library only and no shoparena imports, so a miner process can load it without the package
(the file agent also puts it on the miner's path as `miner_sdk`). It reads where to send calls from
the environment the file agent sets: SHOPARENA_SESSION, and where the server is — inside the
sandbox, SHOPARENA_PROXY_SOCKET (the one Unix socket a sandbox without a network is given; HTTP runs
over it), else SHOPARENA_TOOL_URL as `http://HOST:PORT` or `unix:///PATH/TO.sock` (which wins when
both are set). Each call opens its own connection: a call is never re-sent on a reused connection
the server may have closed, since sending it twice would record it twice.

Every call made here lands in the episode's verified log. Who emitted a call is decided by the
server, not claimed: a call is recorded as `llm` only when its name and arguments match a tool call
of a response `chat()` got from the inference proxy earlier in the episode (each such call counts
once), and as `code` otherwise. `call_tool`'s `origin` argument is still accepted, but changes
nothing; the reply's `origin` says what was recorded.

`chat(messages, tools=..., model=...)` asks the episode's inference proxy for one chat completion
(OpenAI Chat Completions request and response, no streaming). The proxy forwards only allowlisted
models and limits requests and tokens per problem; a refusal raises ToolServerError with its status.

The proxy also checks what the model was shown: a call is `llm` only when every product id in it
occurs in a `tool` message of that request holding a real result of this episode. `tool_message(reply)`
writes a call's reply as such a message: its `text` as the server sent it, or a compact form the proxy
accepts (`compact=True` drops the fields of `COMPACT_DROP_FIELDS` from every object, `limit=N` keeps
the first N items of a page). Ids the model read only in text the code wrote (a system or user
message, an edited or summarised result) make the call the code's.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import urllib.parse
from typing import Any

URL_ENV = "SHOPARENA_TOOL_URL"
SOCKET_ENV = "SHOPARENA_PROXY_SOCKET"
SESSION_ENV = "SHOPARENA_SESSION"
DEFAULT_TIMEOUT_S = 60.0
CHAT_TIMEOUT_S = 300.0
"""A model may think for minutes; the episode's own timeout still bounds the run."""
UNIX_SCHEME = "unix://"
COMPACT_DROP_FIELDS = ("description", "short_description", "sold_count")
"""The fields `tool_message(compact=True)` removes from every object of a result: the one fixed list
the inference proxy accepts (`shoparena.harness.verified_history.COMPACT_DROP_FIELDS`)."""


class ToolServerError(RuntimeError):
    """The server refused the request before any call was made (bad token, too large, unreachable)."""

    def __init__(self, status: int, message: str):
        super().__init__(f"tool server answered {status}: {message}")
        self.status = status


def _endpoint() -> tuple[str, str]:
    url, token = os.environ.get(URL_ENV), os.environ.get(SESSION_ENV)
    if not url and os.environ.get(SOCKET_ENV):
        url = UNIX_SCHEME + os.environ[SOCKET_ENV]
    if not url or not token:
        raise ToolServerError(
            0, f"{SESSION_ENV} and {SOCKET_ENV} or {URL_ENV} must be set (the file agent sets them)"
        )
    return url.rstrip("/"), token


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over a Unix socket: the same requests, a path instead of a host and port."""

    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def _connection(url: str, timeout_s: float) -> http.client.HTTPConnection:
    if url.startswith(UNIX_SCHEME):
        return _UnixConnection(url[len(UNIX_SCHEME) :], timeout_s)
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ToolServerError(0, f"{URL_ENV} must be http://HOST:PORT or unix:///PATH, got {url!r}")
    return http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout_s)


def _request(method: str, path: str, payload: dict | None, timeout_s: float) -> tuple[int, dict]:
    url, token = _endpoint()
    data = json.dumps(payload).encode() if payload is not None else None
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    connection = _connection(url, timeout_s)
    try:
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        status, body = response.status, response.read()
    except (OSError, http.client.HTTPException) as exc:
        raise ToolServerError(0, f"cannot reach {url}: {exc}") from None
    finally:
        connection.close()
    try:
        return status, json.loads(body or b"{}")
    except ValueError:
        return status, {"ok": False, "error": body.decode("utf-8", "replace")[:500]}


def call_tool(name: str, origin: str = "code", call_id: str | None = None, **arguments: Any) -> dict:
    """Call one tool; returns `{"ok", "result", "error", "text", "call_id", "step", "ended", "origin"}`.

    `origin` is accepted for compatibility and decides nothing: the server records `llm` only for a
    call that matches a tool call of an earlier `chat()` response (the reply's `origin` says which).

    A call the episode recorded (including a refused one: bad arguments, unknown tool, episode over)
    comes back as that observation with `ok` false, exactly what a model would be shown; only a
    request that never became a call raises ToolServerError.
    """
    payload: dict[str, Any] = dict(arguments)
    payload["origin"] = origin
    if call_id is not None:
        payload["call_id"] = call_id
    status, body = _request(
        "POST", "/v1/tools/" + urllib.parse.quote(name, safe=""), payload, DEFAULT_TIMEOUT_S
    )
    if "call_id" not in body:
        raise ToolServerError(status, str(body.get("error", body)))
    return body


def list_tools() -> list[dict]:
    """The OpenAI function schemas of the episode's tool profile."""
    status, body = _request("GET", "/v1/tools", None, DEFAULT_TIMEOUT_S)
    if status != 200:
        raise ToolServerError(status, str(body.get("error", body)))
    return body["tools"]


def chat(
    messages: list[dict],
    tools: list[dict] | None = None,
    model: str | None = None,
    **params: Any,
) -> dict:
    """One chat completion through the episode's inference proxy; returns the response object
    (`choices[0]["message"]` holds the assistant message, with `tool_calls` when the model called tools).

    `params` are further Chat Completions fields (temperature, max_tokens, tool_choice, …); `model`
    None is the proxy's default model. Raises ToolServerError when the proxy refuses the request
    (a model not allowed, rate or token limits, a request too large) or the model cannot answer.
    """
    payload: dict[str, Any] = {"messages": messages, **params}
    if tools is not None:
        payload["tools"] = tools
    if model is not None:
        payload["model"] = model
    status, body = _request("POST", "/v1/inference/chat/completions", payload, CHAT_TIMEOUT_S)
    if status != 200 or "choices" not in body:
        raise ToolServerError(status, str(body.get("error", body)))
    return body


def _compact(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _compact(item) for key, item in value.items() if key not in COMPACT_DROP_FIELDS}
    if isinstance(value, list):
        return [_compact(item) for item in value]
    return value


def tool_message(
    reply: dict, *, compact: bool = False, limit: int | None = None, tool_call_id: str | None = None
) -> dict:
    """The `tool` chat message that shows the model a call's result (`reply` is what `call_tool`
    returned) in a form the inference proxy verifies as a real result of this episode, so the calls
    the model makes from it count as the model's (`llm`).

    By default the content is the reply's `text`, exactly as the server sent it. `compact=True`
    drops `COMPACT_DROP_FIELDS` from every object of the result; `limit=N` (N ≥ 1) keeps the first N
    items of a result that is a list (a search page), in their order. Nothing else is accepted: a
    subset, another order or an edited value is the code's text, and ids in it do not count.
    `tool_call_id` defaults to the reply's `call_id`.
    """
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    content = reply.get("text", "")
    result = reply.get("result")
    if reply.get("ok") and (compact or limit is not None) and isinstance(result, list | dict):
        value = result[:limit] if limit is not None and isinstance(result, list) else result
        content = json.dumps(_compact(value) if compact else value, ensure_ascii=False)
    return {
        "role": "tool",
        "tool_call_id": tool_call_id if tool_call_id is not None else reply.get("call_id"),
        "content": content,
    }
