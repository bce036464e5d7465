"""The judge's Chat Completions transport: one request per call, over the agents' HTTP client.

It does one request and says whether a failure is worth retrying; retries, fallback and the circuit
breaker are the judge's policy (`llm.py`), not the transport's. The HTTP work itself (timeouts on the
whole read, error details, loopback without proxies) is `ChatCompletionsClient`'s, shared with the
`openai:` agent.
"""

from __future__ import annotations

import os
from typing import Any

from shoparena.agents.openai_agent import (
    DEFAULT_BASE_URL,
    ChatCompletionsClient,
    RequestRejected,
    RetryableError,
)


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
        self._client = ChatCompletionsClient(self.base_url, self.api_key, timeout_s=timeout_s, max_retries=0)

    @property
    def url(self) -> str:
        return self._client.url

    def complete(self, payload: dict[str, Any]) -> str:
        try:
            data = self._client.post_once(payload)
        except RetryableError as exc:
            raise EndpointError(f"{self.url}: {exc}", retryable=True, status=exc.status) from None
        except RequestRejected as exc:
            raise EndpointError(str(exc), retryable=False, status=exc.status) from None
        choice = data["choices"][0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise EndpointError(
                f"{self.url} answered a choice without a message: {choice!r:.200}", retryable=True
            )
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if not content:
            content = message.get("reasoning_content") or message.get("reasoning") or ""
        return content if isinstance(content, str) else ""
