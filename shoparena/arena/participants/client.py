"""The miner's and the validator's side of the API: signed requests, typed answers, and every refusal
raised as `ArenaRefused` carrying the server's reason (401s) or error code and message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import orjson
from pydantic import TypeAdapter, ValidationError

from shoparena.arena.auth.signing import Signer, signed_headers
from shoparena.arena.errors import ArenaError
from shoparena.arena.models import (
    ArenaInfo,
    JobOffer,
    LeaseView,
    Refusal,
    ResultAccepted,
    ResultPost,
    SubmissionSummary,
    SubmissionView,
    SubmitAccepted,
    SubmitRejected,
    WhoAmI,
)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
DEFAULT_ARENA_URL = "http://127.0.0.1:8742"


class ArenaRefused(ArenaError):
    """The arena answered with an error status."""

    def __init__(self, status: int, refusal: Refusal):
        super().__init__(refusal.message)
        self.status = status
        self.error = refusal.error
        self.reason = refusal.reason
        self.message = refusal.message
        self.retry_after_s = refusal.retry_after_s


class ArenaClient:
    def __init__(
        self, url: str, signer: Signer, *, timeout: float = 60.0, clock: Callable[[], float] | None = None
    ):
        """`clock` (Unix seconds) stamps the signed requests [default: the system clock]; a simulated
        arena's clients pass the arena's own clock so its skew check agrees."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ArenaError(f"--arena {url!r}: expected an http(s) URL such as {DEFAULT_ARENA_URL}")
        self.url = url.rstrip("/")
        self.signer = signer
        self.clock = clock
        # A local arena is never reached through a proxy from the environment.
        self._http = httpx.Client(timeout=timeout, trust_env=parts.hostname not in LOOPBACK_HOSTS)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ArenaClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, body: bytes = b"") -> httpx.Response:
        """`method path` with `body`, signed over the target exactly as httpx puts it on the wire
        (its percent-encoding, the URL's own path prefix), so the server checks the bytes we signed."""
        stamp = None if self.clock is None else int(self.clock())
        request = self._http.build_request(method, self.url + path, content=body)
        headers = signed_headers(
            self.signer, request.method, request.url.raw_path.decode("ascii"), body, timestamp=stamp
        )
        if body:
            headers["Content-Type"] = "application/json"
        request.headers.update(headers)
        try:
            return self._http.send(request)
        except httpx.HTTPError as exc:
            raise ArenaError(f"cannot reach the arena at {self.url}: {exc or type(exc).__name__}") from None

    def _checked(self, response: httpx.Response, *ok: int) -> Any:
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code in ok:
            return data
        try:
            refusal = Refusal.model_validate(data)
        except ValidationError:
            text = response.text[:300].strip() or response.reason_phrase
            refusal = Refusal(error=f"http_{response.status_code}", message=text)
        raise ArenaRefused(response.status_code, refusal)

    def submit(self, name: str, code: str) -> SubmitAccepted | SubmitRejected:
        """202 → SubmitAccepted, 422 → SubmitRejected (with its violations); anything else raises."""
        body = orjson.dumps({"name": name, "code": code})
        response = self.request("POST", "/v1/miner/submit", body)
        data = self._checked(response, 202, 422)
        if response.status_code == 422:
            return SubmitRejected.model_validate(data)
        return SubmitAccepted.model_validate(data)

    def submission(self, submission_id: str) -> SubmissionView:
        response = self.request("GET", f"/v1/miner/submissions/{quote(submission_id, safe='')}")
        return SubmissionView.model_validate(self._checked(response, 200))

    def submissions(self) -> list[SubmissionSummary]:
        response = self.request("GET", "/v1/miner/submissions")
        return TypeAdapter(list[SubmissionSummary]).validate_python(self._checked(response, 200))

    def whoami(self) -> WhoAmI:
        return WhoAmI.model_validate(self._checked(self.request("GET", "/v1/whoami"), 200))

    # -- validators ---------------------------------------------------------------------------------

    def arena_info(self) -> ArenaInfo:
        return ArenaInfo.model_validate(self._checked(self.request("GET", "/v1/validator/arena"), 200))

    def claim(self) -> JobOffer | None:
        """A job under a new lease, or None when nothing is waiting."""
        response = self.request("POST", "/v1/validator/claim", b"{}")
        if response.status_code == 204:
            return None
        return JobOffer.model_validate(self._checked(response, 200))

    def heartbeat(self, lease_id: str) -> LeaseView:
        body = orjson.dumps({"lease_id": lease_id})
        return LeaseView.model_validate(
            self._checked(self.request("POST", "/v1/validator/heartbeat", body), 200)
        )

    def release(self, lease_id: str, reason: str) -> LeaseView:
        body = orjson.dumps({"lease_id": lease_id, "reason": reason[:2000] or "released"})
        return LeaseView.model_validate(
            self._checked(self.request("POST", "/v1/validator/release", body), 200)
        )

    def code(self, lease_id: str) -> tuple[bytes, str | None]:
        """The submission's code and the sha256 the arena says it has (the caller checks both)."""
        response = self.request("POST", "/v1/validator/code", orjson.dumps({"lease_id": lease_id}))
        if response.status_code != 200:
            self._checked(response, 200)
        return response.content, response.headers.get("X-Code-Sha256")

    def post_result(self, post: ResultPost | bytes) -> ResultAccepted:
        """201 (stored) or 200 (this result was stored before): `created` says which."""
        body = post if isinstance(post, bytes) else post.model_dump_json().encode()
        response = self.request("POST", "/v1/validator/result", body)
        return ResultAccepted.model_validate(self._checked(response, 200, 201))
