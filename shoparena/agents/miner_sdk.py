"""The tool client for miner files: `call_tool("find_product", q="yoga mat")`.

Standard library only and no shoparena imports, so a miner process can load it without the package
(the file agent also puts it on the miner's path as `miner_sdk`). It reads where to send calls from
the environment the file agent sets: SHOPARENA_TOOL_URL and SHOPARENA_SESSION.

Every call made here lands in the episode's verified log. Calls are recorded as emitted by code
(`origin="code"`) unless the miner says its model emitted them (`origin="llm"`): the server cannot
see a model, so the claim of model authorship is the miner's to make, and it is recorded as made.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

URL_ENV = "SHOPARENA_TOOL_URL"
SESSION_ENV = "SHOPARENA_SESSION"
DEFAULT_TIMEOUT_S = 60.0


class ToolServerError(RuntimeError):
    """The server refused the request before any call was made (bad token, too large, unreachable)."""

    def __init__(self, status: int, message: str):
        super().__init__(f"tool server answered {status}: {message}")
        self.status = status


def _endpoint() -> tuple[str, str]:
    url, token = os.environ.get(URL_ENV), os.environ.get(SESSION_ENV)
    if not url or not token:
        raise ToolServerError(0, f"{URL_ENV} and {SESSION_ENV} must be set (the file agent sets them)")
    return url.rstrip("/"), token


def _request(method: str, path: str, payload: dict | None, timeout_s: float) -> tuple[int, dict]:
    url, token = _endpoint()
    data = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(
        url + path,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        body = exc.read()
        try:
            return exc.code, json.loads(body or b"{}")
        except ValueError:
            return exc.code, {"ok": False, "error": body.decode("utf-8", "replace")[:500]}
    except (urllib.error.URLError, OSError) as exc:
        raise ToolServerError(0, f"cannot reach {url}: {exc}") from None


def call_tool(name: str, origin: str = "code", call_id: str | None = None, **arguments: Any) -> dict:
    """Call one tool; returns `{"ok", "result", "error", "text", "call_id", "step", "ended"}`.

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
