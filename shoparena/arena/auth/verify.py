"""Authenticating a signed request (SPEC §6, issues 12 and 22): who sent it, and is it fresh, unaltered
and meant for this endpoint.

The cheap checks run before the body is read — header syntax and signature version, clock skew,
registration, role — so an unregistered or stale request never makes the server read (or hash) a
megabyte. Then the signature over the method, the target as it arrived and the exact body bytes, and
last the nonce, so a forged or misdirected request cannot burn a real client's nonce.
Every refusal is an `AuthRefused` with one of six reasons, answered as a 401.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from shoparena.arena.auth.keys import public_keypair
from shoparena.arena.auth.metagraph import Metagraph
from shoparena.arena.auth.nonces import NonceStore
from shoparena.arena.auth.signing import (
    HOTKEY_HEADER,
    HOTKEY_PATTERN,
    NONCE_HEADER,
    NONCE_PATTERN,
    SIGNATURE_HEADER,
    SIGNATURE_PATTERN,
    SIGNATURE_VERSION,
    SIGNED_HEADERS,
    TIMESTAMP_HEADER,
    TIMESTAMP_PATTERN,
    VERSION_HEADER,
    VERSION_PATTERN,
    signing_message,
)
from shoparena.arena.models import NeuronInfo


class AuthRefused(Exception):
    def __init__(self, reason: str, message: str, claimed: SignedHeaders | None = None):
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.claimed = claimed


@dataclass(frozen=True)
class SignedHeaders:
    hotkey: str
    timestamp: str
    nonce: str
    signature: str


@dataclass(frozen=True)
class Identity:
    """A verified caller."""

    hotkey: str
    role: str
    stake: float
    uid: int | None
    nonce: str


PATTERNS = {
    HOTKEY_HEADER: HOTKEY_PATTERN,
    TIMESTAMP_HEADER: TIMESTAMP_PATTERN,
    NONCE_HEADER: NONCE_PATTERN,
    SIGNATURE_HEADER: SIGNATURE_PATTERN,
    VERSION_HEADER: VERSION_PATTERN,
}
EXPECTED = {
    HOTKEY_HEADER: "an SS58 address",
    TIMESTAMP_HEADER: "integer Unix seconds (ASCII digits, no sign, point or leading zero)",
    NONCE_HEADER: "1–64 characters of [A-Za-z0-9_-]",
    SIGNATURE_HEADER: "0x + 128 hex digits",
    VERSION_HEADER: (
        f"{SIGNATURE_VERSION}: this arena verifies version {SIGNATURE_VERSION} signatures, over "
        "METHOD, the path and query, and hotkey:timestamp:nonce:sha256(body) (update your client)"
    ),
}


def parse_signed_headers(raw: Sequence[tuple[bytes, bytes]]) -> SignedHeaders:
    """The four headers from the raw header list, each exactly once and in its one accepted form.

    HTTP header names are case-insensitive, so `x-nonce` and `X-NONCE` are the same header: sending it
    twice in any spelling is refused rather than resolved, as is any byte outside the expected form."""
    wanted = {name.lower().encode("ascii"): name for name in SIGNED_HEADERS}
    found: dict[str, list[bytes]] = {name: [] for name in SIGNED_HEADERS}
    for key, value in raw:
        name = wanted.get(key.lower())
        if name is not None:
            found[name].append(value)
    values: dict[str, str] = {}
    for name in SIGNED_HEADERS:
        given = found[name]
        if not given:
            why = f"; expected {EXPECTED[name]}" if name == VERSION_HEADER else ""
            raise AuthRefused(
                "bad_headers",
                f"{name} is missing (a signed request carries {', '.join(SIGNED_HEADERS)}){why}",
            )
        if len(given) > 1:
            raise AuthRefused("bad_headers", f"{name} is given {len(given)} times; send it once")
        try:
            text = given[0].decode("ascii")
        except UnicodeDecodeError:
            raise AuthRefused(
                "bad_headers", f"{name} holds non-ASCII bytes; expected {EXPECTED[name]}"
            ) from None
        if not PATTERNS[name].fullmatch(text):
            raise AuthRefused("bad_headers", f"{name} is malformed; expected {EXPECTED[name]}")
        values[name] = text
    return SignedHeaders(
        hotkey=values[HOTKEY_HEADER],
        timestamp=values[TIMESTAMP_HEADER],
        nonce=values[NONCE_HEADER],
        signature=values[SIGNATURE_HEADER],
    )


class Authenticator:
    def __init__(self, metagraph: Metagraph, nonces: NonceStore, skew_s: int, clock: Callable[[], float]):
        self.metagraph = metagraph
        self.nonces = nonces
        self.skew_s = skew_s
        self.clock = clock

    def precheck(
        self, raw: Sequence[tuple[bytes, bytes]], roles: Collection[str]
    ) -> tuple[SignedHeaders, NeuronInfo]:
        """Everything that needs no body: header form, skew, registration and role."""
        claimed = parse_signed_headers(raw)
        offset = int(claimed.timestamp) - self.clock()
        if abs(offset) > self.skew_s:
            raise AuthRefused(
                "skew",
                f"X-Timestamp {claimed.timestamp} is {abs(offset):.0f} s {'ahead of' if offset > 0 else 'behind'} "
                f"the arena's clock; at most {self.skew_s} s is allowed (sync your clock)",
                claimed,
            )
        neuron = self.metagraph.get(claimed.hotkey)
        if neuron is None:
            raise AuthRefused(
                "unknown_hotkey", f"hotkey {claimed.hotkey} is not registered on this arena", claimed
            )
        if neuron.role not in roles:
            raise AuthRefused(
                "wrong_role",
                f"hotkey {claimed.hotkey} is registered as a {neuron.role}; this endpoint is for "
                f"{' or '.join(sorted(roles))}s",
                claimed,
            )
        return claimed, neuron

    def verify(
        self, claimed: SignedHeaders, neuron: NeuronInfo, method: str, target: str, body_digest: str
    ) -> Identity:
        """The signature over the method, the target (`signing.request_target`) and the exact body,
        then the nonce (claimed atomically, once)."""
        message = signing_message(
            method, target, claimed.hotkey, claimed.timestamp, claimed.nonce, body_digest
        )
        try:
            valid = public_keypair(claimed.hotkey).verify(message, bytes.fromhex(claimed.signature[2:]))
        except ValueError:
            valid = False
        if not valid:
            raise AuthRefused(
                "signature",
                f"the signature does not verify for hotkey {claimed.hotkey} over this request's method, "
                f"path and body ({method} {target[:200]}): wrong key, the request was altered after "
                "signing, or it was signed for another endpoint",
                claimed,
            )
        now = self.clock()
        expires_at = max(now, int(claimed.timestamp)) + self.skew_s
        if not self.nonces.claim(claimed.hotkey, claimed.nonce, expires_at, now):
            raise AuthRefused(
                "replay", f"nonce {claimed.nonce} was used already by hotkey {claimed.hotkey}", claimed
            )
        return Identity(
            hotkey=claimed.hotkey, role=neuron.role, stake=neuron.stake, uid=neuron.uid, nonce=claimed.nonce
        )
