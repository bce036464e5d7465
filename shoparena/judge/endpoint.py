"""A minimal OpenAI-compatible Chat Completions client on the standard library (no new dependency).

It does one request and says whether a failure is worth retrying; retries, fallback and the circuit
breaker are the judge's policy (`llm.py`), not the transport's.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlparse

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class EndpointError(RuntimeError):
    """A request that produced no completion; `retryable` says whether trying again can help."""

    def __init__(self, message: str, *, retryable: bool, status: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class ChatEndpoint:
    """POST {base_url}/chat/completions; `complete` returns the assistant text."""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, timeout_s: float = 60.0):
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout_s = timeout_s
        handlers: list[Any] = []
        if urlparse(self.base_url).hostname in LOOPBACK_HOSTS:
            handlers.append(urllib.request.ProxyHandler({}))  # a local server is never behind a proxy
        self._opener = urllib.request.build_opener(*handlers)

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def complete(self, payload: dict[str, Any]) -> str:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            self.url, data=json.dumps(payload).encode(), headers=headers, method="POST"
        )
        try:
            with self._opener.open(request, timeout=self.timeout_s) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode(errors="replace")
            raise EndpointError(
                f"HTTP {exc.code} from {self.url}: {detail}",
                retryable=exc.code in RETRYABLE_STATUS,
                status=exc.code,
            ) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise EndpointError(f"no response from {self.url}: {reason}", retryable=True) from None
        try:
            data = json.loads(body)
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise EndpointError(
                f"{self.url} answered something that is not a chat completion: {body[:200]!r}",
                retryable=True,
            ) from None
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if not content and isinstance(message, dict):
            content = message.get("reasoning_content") or message.get("reasoning") or ""
        return content if isinstance(content, str) else ""
