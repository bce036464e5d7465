"""Signed requests, shared by the client and the server (SPEC §6, issue 12).

A request is signed by its hotkey's sr25519 key over `"{hotkey}:{timestamp}:{nonce}:{sha256_hex(body)}"`:
the exact body bytes are bound, so a body swapped after signing no longer verifies (the subnet we
follow signs without the body). The header formats are strict and canonical — one spelling per value —
so that the bytes the client signed and the bytes the server checks cannot differ by interpretation.
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
SIGNED_HEADERS = (HOTKEY_HEADER, TIMESTAMP_HEADER, NONCE_HEADER, SIGNATURE_HEADER)

HOTKEY_PATTERN = re.compile(r"[1-9A-HJ-NP-Za-km-z]{40,52}")
"""Base58 only (no 0, O, I, l): SS58 addresses of 32-byte keys are 47–48 characters."""
TIMESTAMP_PATTERN = re.compile(r"0|[1-9][0-9]{0,11}")
"""Integer Unix seconds, ASCII digits without sign, point or leading zeros: one spelling per instant."""
NONCE_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
SIGNATURE_PATTERN = re.compile(r"0x[0-9a-fA-F]{128}")
"""`0x` + the 64-byte sr25519 signature in hex."""


class Signer(Protocol):
    """What signs: a `bittensor_wallet.Keypair` (or anything with its two members)."""

    @property
    def ss58_address(self) -> str: ...

    def sign(self, data: bytes) -> bytes: ...


def body_sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def signing_message(hotkey: str, timestamp: str, nonce: str, body_digest: str) -> bytes:
    """The UTF-8 bytes both sides sign/verify; `body_digest` is `body_sha256(body)`."""
    return f"{hotkey}:{timestamp}:{nonce}:{body_digest}".encode()


def new_nonce() -> str:
    """24 characters of `[A-Za-z0-9_-]` from the OS's CSPRNG (144 bits: never repeats in practice)."""
    return secrets.token_urlsafe(18)


def signed_headers(
    signer: Signer, body: bytes, *, timestamp: int | None = None, nonce: str | None = None
) -> dict[str, str]:
    """The four headers that authenticate `body` as sent by `signer`'s hotkey, now."""
    hotkey = signer.ss58_address
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    nonce = new_nonce() if nonce is None else nonce
    signature = signer.sign(signing_message(hotkey, stamp, nonce, body_sha256(body)))
    return {
        HOTKEY_HEADER: hotkey,
        TIMESTAMP_HEADER: stamp,
        NONCE_HEADER: nonce,
        SIGNATURE_HEADER: "0x" + bytes(signature).hex(),
    }
