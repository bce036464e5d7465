"""Where the inference proxy sends an allowlisted model's requests: an OpenAI-compatible endpoint (vLLM,
a local model server, an API) or the offline reference model.

An upstream is named by a spec string, so a configuration (an agent option, a CLI flag) can list them:
- `offline:NAME` — the built-in offline reference model (`reference_model`; NAME is
  `reference-agentic`, `reference-agentic-tags` or `reference-agentic-qwen3`);
- `http://HOST:PORT/v1#MODEL` or `https://…#MODEL` — an OpenAI-compatible endpoint and the model name
  to ask it for (without `#MODEL`, the public name the agent used). The API key is not part of the
  spec: it comes from the environment variable the proxy configuration names, so it never sits on a
  command line and never reaches the agent.

The HTTP client is the OpenAI agent's `ChatCompletionsClient` (retries with backoff on 408/429/5xx and
connection errors, `Retry-After` honoured, other 4xx at once).
"""

from __future__ import annotations

import os
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from shoparena.agents.chat_loop import ModelError
from shoparena.agents.openai_agent import ChatCompletionsClient, RequestRejected
from shoparena.inference.reference_model import PROTOCOL_OF_MODEL, ReferenceChatModel, ReferenceModelError

OFFLINE_SCHEME = "offline:"


class EpisodeContext(BaseModel):
    """What the proxy tells an upstream about the episode (the offline model plans within the step cap)."""

    model_config = ConfigDict(extra="forbid")

    step_cap: int
    tool_names: tuple[str, ...]


class UpstreamError(Exception):
    """The upstream could not answer; `status` is what the agent gets (400 for a request the upstream
    refused, 502 for an upstream that failed or was unreachable)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class Upstream(Protocol):
    label: str
    """How the log names it: `offline:NAME` or the endpoint URL and model (never a key)."""

    def complete(self, body: dict[str, Any], context: EpisodeContext) -> dict[str, Any]:
        """The chat-completion response for `body` (its `model` already the upstream's); raises
        UpstreamError."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class OfflineUpstream:
    """The offline reference model as an upstream."""

    def __init__(self, name: str = "reference-agentic"):
        self.model = ReferenceChatModel(name)
        self.label = f"{OFFLINE_SCHEME}{name}"

    def close(self) -> None:
        """Nothing to release."""

    def complete(self, body: dict[str, Any], context: EpisodeContext) -> dict[str, Any]:
        try:
            return self.model.complete(body, step_cap=context.step_cap, tools=context.tool_names)
        except ReferenceModelError as exc:
            raise UpstreamError(400, str(exc)) from None


class HttpUpstream:
    """An OpenAI-compatible endpoint; `model` is the name sent to it (None: the one the agent asked for)."""

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 2,
        backoff_base_s: float = 0.5,
    ):
        self.client = ChatCompletionsClient(
            base_url,
            api_key,
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_base_s=backoff_base_s,
            keep_alive=True,  # every request of every episode goes this way: no connection set-up each
        )
        self.model = model
        self.label = base_url.rstrip("/") + (f"#{model}" if model else "")

    def close(self) -> None:
        self.client.close()

    def complete(self, body: dict[str, Any], context: EpisodeContext) -> dict[str, Any]:
        if self.model:
            body = {**body, "model": self.model}
        try:
            return self.client.create(body)
        except RequestRejected as exc:
            raise UpstreamError(400, f"the upstream refused the request: {exc}") from None
        except ModelError as exc:
            raise UpstreamError(502, f"the upstream failed: {exc}") from None


def make_upstream(spec: str, *, api_key_env: str | None = None, timeout_s: float = 120.0) -> Upstream:
    """An upstream from its spec (see the module docstring); ValueError names what is wrong."""
    spec = spec.strip()
    if spec.startswith(OFFLINE_SCHEME):
        name = spec[len(OFFLINE_SCHEME) :]
        if name not in PROTOCOL_OF_MODEL:
            raise ValueError(
                f"upstream {spec!r}: no offline model {name!r}; use offline:"
                + " or offline:".join(PROTOCOL_OF_MODEL)
            )
        return OfflineUpstream(name)
    if spec.startswith(("http://", "https://")):
        url, _, model = spec.partition("#")
        api_key = os.environ.get(api_key_env) if api_key_env else None
        return HttpUpstream(url, model or None, api_key=api_key, timeout_s=timeout_s)
    raise ValueError(
        f"upstream {spec!r}: expected offline:NAME or an OpenAI-compatible base URL "
        "(http://HOST:PORT/v1#MODEL)"
    )
