"""Signed requests, shared by the client and the server (SPEC §6, issues 12 and 22).

A request is signed by its hotkey's sr25519 key over (version 2, `X-Signature-Version: 2`)

    shoparena-sig-v2\n{METHOD}\n{target}\n{hotkey}:{timestamp}:{nonce}:{sha256_hex(body)}

where `target` is the request target as sent — the raw path, plus `?` and the raw query when there is
one. The exact body bytes are bound, so a body swapped after signing no longer verifies (the subnet we
follow signs without the body); the method and target are bound, so a request caught on its way cannot
be replayed at another endpoint that takes the same body (version 1 signed only the last line: a
validator's heartbeat `{"lease_id"}` was accepted by `/v1/validator/code`). The version header makes an
old client's request fail as `bad_headers` naming the version, never as a puzzling `signature`.

The header formats are strict and canonical — one spelling per value — so that the bytes the client
signed and the bytes the server checks cannot differ by interpretation.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from typing import Protocol

HOTKEY_HEADER = "X-Hotkey"
TIMESTAMP_HEADER = "X-Timestamp"
NONCE_HEADER = "X-Nonce"
SIGNATURE_HEADER = "X-Signature"
VERSION_HEADER = "X-Signature-Version"
SIGNED_HEADERS = (HOTKEY_HEADER, TIMESTAMP_HEADER, NONCE_HEADER, SIGNATURE_HEADER, VERSION_HEADER)
SIGNATURE_VERSION = "2"
"""What `VERSION_HEADER` carries; the only version a server accepts."""
MESSAGE_PREFIX = f"shoparena-sig-v{SIGNATURE_VERSION}"

HOTKEY_PATTERN = re.compile(r"[1-9A-HJ-NP-Za-km-z]{40,52}")
"""Base58 only (no 0, O, I, l): SS58 addresses of 32-byte keys are 47–48 characters."""
TIMESTAMP_PATTERN = re.compile(r"0|[1-9][0-9]{0,11}")
"""Integer Unix seconds, ASCII digits without sign, point or leading zeros: one spelling per instant."""
NONCE_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
SIGNATURE_PATTERN = re.compile(r"0x[0-9a-fA-F]{128}")
"""`0x` + the 64-byte sr25519 signature in hex."""
VERSION_PATTERN = re.compile(re.escape(SIGNATURE_VERSION))
METHOD_PATTERN = re.compile(r"[A-Z]{1,16}")


class Signer(Protocol):
    """What signs: a `bittensor_wallet.Keypair` (or anything with its two members)."""

    @property
    def ss58_address(self) -> str: ...

    def sign(self, data: bytes) -> bytes: ...


def body_sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def request_target(path: str | bytes, query: str | bytes = b"") -> str:
    """The signed form of a request target: the raw path, then `?query` only when the query is not
    empty (`/x?` and `/x` are one target). Bytes outside ASCII are kept as latin-1, which HTTP/1.1
    heads are read as, so no spelling of a target maps onto another."""
    if isinstance(path, bytes):
        path = path.decode("latin-1")
    if isinstance(query, bytes):
        query = query.decode("latin-1")
    if not query and "?" in path:
        path, _, query = path.partition("?")
    return f"{path}?{query}" if query else path


def signing_message(
    method: str, target: str, hotkey: str, timestamp: str, nonce: str, body_digest: str
) -> bytes:
    """The bytes both sides sign/verify; `target` is `request_target(...)`, `body_digest` is
    `body_sha256(body)`."""
    return f"{MESSAGE_PREFIX}\n{method}\n{target}\n{hotkey}:{timestamp}:{nonce}:{body_digest}".encode(
        "latin-1"
    )


def new_nonce() -> str:
    """24 characters of `[A-Za-z0-9_-]` from the OS's CSPRNG (144 bits: never repeats in practice)."""
    return secrets.token_urlsafe(18)


def signed_headers(
    signer: Signer,
    method: str,
    target: str,
    body: bytes,
    *,
    timestamp: int | None = None,
    nonce: str | None = None,
) -> dict[str, str]:
    """The five headers that authenticate `method target` with `body` as sent by `signer`'s hotkey,
    now. `target` is the path and query exactly as they go on the wire (percent-encoded)."""
    if not METHOD_PATTERN.fullmatch(method):
        raise ValueError(f"method {method!r}: expected an upper-case HTTP method such as POST")
    hotkey = signer.ss58_address
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    nonce = new_nonce() if nonce is None else nonce
    message = signing_message(method, request_target(target), hotkey, stamp, nonce, body_sha256(body))
    return {
        HOTKEY_HEADER: hotkey,
        TIMESTAMP_HEADER: stamp,
        NONCE_HEADER: nonce,
        SIGNATURE_HEADER: "0x" + bytes(signer.sign(message)).hex(),
        VERSION_HEADER: SIGNATURE_VERSION,
    }
