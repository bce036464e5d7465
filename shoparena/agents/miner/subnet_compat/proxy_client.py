"""`src.agent.proxy_client` of SN15 (issue 23): `ProxyClient`, the HTTP client subnet miners reach the
search server and the model with, here answered by the episode's tool server and inference proxy.

The subnet's proxy paths map onto the episode:
- `GET /search/find_product` (q, page, shop_id, price, sort, service) → the `find_product` tool. The
  template URL-quotes `q` itself before the client encodes it again, and the subnet's search server
  reads the once-decoded text; here `q` is decoded (`unquote_plus`) to the words the miner meant.
- `GET /search/view_product_information` (product_ids) → the `view_product_information` tool.
- `POST /inference/chat/completions` (an OpenAI chat request) → `miner_sdk.chat`, the model named in
  the request reaching the upstream the proxy maps it to (the offline reference model by default).

As there: a call returns the JSON answer, or None once the retries are spent (`max_retries` attempts,
waiting `retry_delay` × 2^attempt, or `rate_limit_retry_delay` × 2^attempt after a 429, at most 10 s).
What is retried is a request that never became an answered call (the server unreachable, a 429 or a
5xx from the proxy, an inference refusal); a tool call the episode recorded and refused is answered
already — it returns None at once, since sending it again would record it again. Any other path
returns None, as the subnet's proxy answers 404. No API key is ever sent (`api_key` is kept for the
signature only) and nothing is written to disk: the episode's verified log is the record.
"""

import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote_plus, urlencode

import miner_sdk

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 120
DEFAULT_MAX_RETRIES = 3
DEFAULT_RETRY_DELAY = 2
DEFAULT_RATE_LIMIT_RETRY_DELAY = 5
MAX_DELAY_S = 10
SEARCH_TOOLS = {
    "/search/find_product": "find_product",
    "/search/view_product_information": "view_product_information",
}
INFERENCE_PREFIX = "/inference/"
FIND_PRODUCT_INTS = ("page",)


class InferenceStats:
    """Counts of inference calls that succeeded and failed (in memory only)."""

    def __init__(self, stats_file: str | None = None):
        self.success = 0
        self.failed = 0

    def record_success(self) -> None:
        self.success += 1

    def record_failure(self) -> None:
        self.failed += 1


class RequestLog:
    """The subnet writes a JSONL request log; here the episode's verified log is the record."""

    def __init__(self, log_file: str | None = None):
        self.entries = 0

    def record(self, *args: Any, **kwargs: Any) -> None:
        self.entries += 1

    def record_attempt(self, *args: Any, **kwargs: Any) -> None:
        pass


class _Retry(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class ProxyClient:
    """The subnet's client, same constructor and methods (see the module docstring)."""

    def __init__(
        self,
        proxy_url: str | None = None,
        timeout: int = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        retry_delay: float = DEFAULT_RETRY_DELAY,
        rate_limit_retry_delay: float = DEFAULT_RATE_LIMIT_RETRY_DELAY,
        api_key: str | None = None,
    ):
        self.proxy_url = proxy_url or "http://proxy:80"
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_delay = retry_delay
        self.rate_limit_retry_delay = rate_limit_retry_delay
        self.api_key = api_key
        self.inference_stats = InferenceStats()
        self.request_log = RequestLog()

    def _build_url(self, path: str, params: dict | None = None) -> str:
        url = self.proxy_url.rstrip("/") + path
        kept = {k: v for k, v in (params or {}).items() if v is not None}
        return url + ("?" + urlencode(kept, doseq=True) if kept else "")

    def _with_retries(self, attempt: Callable[[], Any], operation: str) -> Any:
        for i in range(self.max_retries):
            try:
                return attempt()
            except _Retry as exc:
                logger.warning("%s failed (%s), retry %d/%d", operation, exc, i + 1, self.max_retries)
                if i < self.max_retries - 1:
                    base = self.rate_limit_retry_delay if exc.status == 429 else self.retry_delay
                    time.sleep(min(base * (2**i), MAX_DELAY_S))
        logger.error("Failed %s after %d retries", operation, self.max_retries)
        return None

    def get(self, path: str, params: dict | None = None) -> Any | None:
        """A search through the episode's tool server; None when it could not be answered."""
        tool = SEARCH_TOOLS.get(path.split("?", 1)[0])
        if tool is None:
            logger.error("Resource not found: %s", path)
            return None
        arguments = {k: v for k, v in (params or {}).items() if v is not None}
        if tool == "find_product":
            if isinstance(arguments.get("q"), str):
                arguments["q"] = unquote_plus(arguments["q"])
            for name in FIND_PRODUCT_INTS:
                if isinstance(arguments.get(name), str) and arguments[name].strip().isdigit():
                    arguments[name] = int(arguments[name])
        arguments = {k: (str(v) if isinstance(v, (list, tuple)) else v) for k, v in arguments.items()}

        def attempt() -> Any:
            try:
                reply = miner_sdk.call_tool(tool, **arguments)
            except miner_sdk.ToolServerError as exc:
                raise _Retry(exc.status, str(exc)) from None
            if not reply.get("ok"):
                logger.warning("GET %s: %s", path, reply.get("error"))
                return None
            return reply.get("result")

        result = self._with_retries(attempt, f"GET {path}")
        self.request_log.record("GET", path, params=params)
        return result

    def post(self, path: str, json_data: dict | None = None) -> dict | None:
        """A chat completion through the episode's inference proxy; None after the retries."""
        if not path.startswith(INFERENCE_PREFIX) or not path.rstrip("/").endswith("/chat/completions"):
            logger.error("Resource not found: %s", path)
            return None
        body = dict(json_data or {})
        messages = body.pop("messages", [])
        body.pop("stream", None)  # no streaming here; the subnet's template asks for none either

        def attempt() -> dict:
            try:
                return miner_sdk.chat(messages, **body)
            except miner_sdk.ToolServerError as exc:
                raise _Retry(exc.status, str(exc)) from None

        result = self._with_retries(attempt, f"POST {path}")
        if result is None:
            self.inference_stats.record_failure()
        else:
            self.inference_stats.record_success()
        self.request_log.record("POST", path, json_data=json_data)
        return result
