"""Key files, wallets, and the signed-request format shared by client and server."""

from __future__ import annotations

import hashlib
import os
import stat

import orjson
import pytest
from bittensor_wallet import Keypair, Wallet
from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.arena.auth.keys import (
    canonical_hotkey,
    key_file_too_open,
    load_key_file,
    load_wallet_hotkey,
    new_key_file,
    public_keypair,
    write_key_file,
)
from shoparena.arena.auth.signing import (
    body_sha256,
    request_target,
    signed_headers,
    signing_message,
)
from shoparena.arena.auth.verify import AuthRefused, parse_signed_headers
from shoparena.arena.errors import KeyFileError

KEY = new_key_file()
SIGNER = Keypair.create_from_seed(KEY.secret_seed)


def ss58_encode(public_key: bytes, prefix: int) -> str:
    """SS58 for one-byte network prefixes (what Substrate tools print for other networks)."""
    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    data = bytes([prefix]) + public_key
    data += hashlib.blake2b(b"SS58PRE" + data, digest_size=64).digest()[:2]
    number, text = int.from_bytes(data, "big"), ""
    while number:
        number, digit = divmod(number, 58)
        text = alphabet[digit] + text
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + text


def verifies(
    headers: dict[str, str], body: bytes, method: str = "POST", target: str = "/v1/miner/submit"
) -> bool:
    message = signing_message(
        method, target, headers["X-Hotkey"], headers["X-Timestamp"], headers["X-Nonce"], body_sha256(body)
    )
    return public_keypair(headers["X-Hotkey"]).verify(message, bytes.fromhex(headers["X-Signature"][2:]))


def sign(body: bytes, method: str = "POST", target: str = "/v1/miner/submit", **overrides) -> dict[str, str]:
    return signed_headers(SIGNER, method, target, body, **overrides)


def test_key_file_is_private_and_loads_with_bittensor(tmp_path):
    path = tmp_path / "key.json"
    key = write_key_file(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = orjson.loads(path.read_bytes())
    assert set(data) == {"ss58_address", "secret_seed"}
    assert data["secret_seed"].startswith("0x") and len(data["secret_seed"]) == 66
    assert Keypair.create_from_seed(data["secret_seed"]).ss58_address == key.ss58_address
    assert load_key_file(path).ss58_address == key.ss58_address
    assert not key_file_too_open(path)


def test_key_file_is_never_overwritten_unless_forced(tmp_path):
    path = tmp_path / "key.json"
    first = write_key_file(path)
    with pytest.raises(KeyFileError, match="exists already"):
        write_key_file(path)
    assert load_key_file(path).ss58_address == first.ss58_address
    os.chmod(path, 0o644)
    second = write_key_file(path, overwrite=True)
    assert second.ss58_address != first.ss58_address
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # an existing wider file is narrowed


def test_key_file_errors_name_the_problem(tmp_path):
    path = tmp_path / "key.json"
    with pytest.raises(KeyFileError, match="cannot read"):
        load_key_file(path)
    path.write_text('{"ss58_address": "5x"}')
    with pytest.raises(KeyFileError, match="secret_seed"):
        load_key_file(path)
    other = new_key_file()
    path.write_bytes(orjson.dumps({"ss58_address": other.ss58_address, "secret_seed": KEY.secret_seed}))
    with pytest.raises(KeyFileError, match="does not belong to the secret seed"):
        load_key_file(path)
    os.chmod(path, 0o644)
    assert key_file_too_open(path)


def test_wallet_hotkey_signs_like_its_key(tmp_path):
    wallet = Wallet(name="w", hotkey="h", path=str(tmp_path))
    wallet.create_if_non_existent(coldkey_use_password=False, hotkey_use_password=False, suppress=True)
    keypair = load_wallet_hotkey("w", "h", str(tmp_path))
    assert keypair.ss58_address == wallet.hotkey.ss58_address
    headers = signed_headers(keypair, "POST", "/v1/miner/submit", b"{}")
    assert verifies(headers, b"{}")
    with pytest.raises(KeyFileError, match="does not exist"):
        load_wallet_hotkey("w", "missing", str(tmp_path))


def test_canonical_hotkey_refuses_other_formats_and_junk():
    assert canonical_hotkey(KEY.ss58_address) == KEY.ss58_address
    assert ss58_encode(SIGNER.public_key, prefix=42) == SIGNER.ss58_address
    polkadot = ss58_encode(SIGNER.public_key, prefix=0)  # the same public key in Polkadot's format
    assert public_keypair(polkadot).public_key == SIGNER.public_key
    with pytest.raises(ValueError, match="another network"):
        canonical_hotkey(polkadot)
    for junk in ("", "5" * 48, KEY.ss58_address[:-1], KEY.ss58_address + "1", "0x" + "ab" * 32):
        with pytest.raises(ValueError):
            canonical_hotkey(junk)


@settings(max_examples=60, deadline=None)
@given(body=st.binary(max_size=512), mutation=st.binary(min_size=1, max_size=8), at=st.integers(0, 600))
def test_signature_binds_the_exact_body(body, mutation, at):
    headers = sign(body)
    assert verifies(headers, body)
    position = at % (len(body) + 1)
    swapped = body[:position] + mutation + body[position:]
    assert not verifies(headers, swapped)
    if body:
        assert not verifies(headers, body[:-1])


def test_signature_binds_hotkey_timestamp_and_nonce():
    headers = sign(b"x", timestamp=1_700_000_000, nonce="abc")
    assert verifies(headers, b"x")
    for field, value in (
        ("X-Timestamp", "1700000001"),
        ("X-Nonce", "abd"),
        ("X-Hotkey", new_key_file().ss58_address),
    ):
        assert not verifies({**headers, field: value}, b"x")


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("POST", "/v1/validator/code"),  # the heartbeat's body fits this endpoint too (issue 22)
        ("GET", "/v1/validator/heartbeat"),
        ("POST", "/v1/validator/heartbeat?x=1"),
        ("POST", "/v1/validator/heartbeat/"),
        ("POST", "/v1/validator/%68eartbeat"),
        ("post", "/v1/validator/heartbeat"),
    ],
)
def test_signature_binds_the_method_and_target(method, target):
    headers = sign(b'{"lease_id": "l"}', "POST", "/v1/validator/heartbeat")
    assert verifies(headers, b'{"lease_id": "l"}', "POST", "/v1/validator/heartbeat")
    assert not verifies(headers, b'{"lease_id": "l"}', method, request_target(target))


def test_the_signed_message_is_versioned_and_canonical():
    message = signing_message("GET", "/v1/x?a=1", "5H", "17", "n", "d")
    assert message == b"shoparena-sig-v2\nGET\n/v1/x?a=1\n5H:17:n:d"
    assert sign(b"")["X-Signature-Version"] == "2"
    # an empty query is no query; raw bytes and text, path+query together or apart, are one target
    assert request_target("/v1/x?") == request_target(b"/v1/x", b"") == "/v1/x"
    assert request_target(b"/v1/x", b"a=1&b") == request_target("/v1/x?a=1&b") == "/v1/x?a=1&b"
    with pytest.raises(ValueError, match="upper-case"):
        signed_headers(SIGNER, "get", "/v1/x", b"")


@pytest.mark.parametrize("version", ["1", "3", "2 ", "v2", ""])
def test_another_signature_version_is_bad_headers_naming_the_version(version):
    headers = {**sign(b""), "X-Signature-Version": version}
    with pytest.raises(AuthRefused, match="version 2") as caught:
        parse_signed_headers(raw(headers))
    assert caught.value.reason == "bad_headers"
    old_client = {k: v for k, v in sign(b"").items() if k != "X-Signature-Version"}
    with pytest.raises(AuthRefused, match=r"X-Signature-Version is missing.*version 2"):
        parse_signed_headers(raw(old_client))


def raw(headers: dict[str, str] | list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    items = headers.items() if isinstance(headers, dict) else headers
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in items]


def test_header_names_are_case_insensitive_but_never_repeated():
    headers = sign(b"")
    upper = {k.upper(): v for k, v in headers.items()}
    assert parse_signed_headers(raw(upper)).hotkey == SIGNER.ss58_address
    doubled = [*headers.items(), ("x-NONCE", "other")]
    with pytest.raises(AuthRefused, match="given 2 times") as caught:
        parse_signed_headers(raw(doubled))
    assert caught.value.reason == "bad_headers"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("X-Timestamp", "1700000000.0"),
        ("X-Timestamp", "-1700000000"),
        ("X-Timestamp", "+1700000000"),
        ("X-Timestamp", "01700000000"),
        ("X-Timestamp", "1" * 13),
        ("X-Timestamp", "1e9"),
        ("X-Timestamp", " 1700000000"),
        ("X-Timestamp", "١٧٠٠٠٠٠٠٠٠"),
        ("X-Nonce", ""),
        ("X-Nonce", "a" * 65),
        ("X-Nonce", "abc:def"),
        ("X-Nonce", "abc def"),
        ("X-Nonce", "nonce/../x"),
        ("X-Nonce", "é"),
        ("X-Signature", "ab" * 64),
        ("X-Signature", "0x" + "ab" * 63),
        ("X-Signature", "0x" + "zz" * 64),
        ("X-Hotkey", "5" + "0" * 47),
        ("X-Hotkey", "x" * 200),
    ],
)
def test_malformed_header_values_are_bad_headers(field, value):
    headers = {**sign(b""), field: value}
    with pytest.raises(AuthRefused) as caught:
        parse_signed_headers([(k.lower().encode(), v.encode()) for k, v in headers.items()])
    assert caught.value.reason == "bad_headers"
    assert field in caught.value.message


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_only_canonical_timestamps_parse(text):
    headers = {**sign(b""), "X-Timestamp": text}
    try:
        encoded = [(k.lower().encode(), v.encode("utf-8")) for k, v in headers.items()]
        parsed = parse_signed_headers(encoded)
    except AuthRefused as exc:
        assert exc.reason == "bad_headers"
        return
    assert (
        parsed.timestamp.isascii()
        and parsed.timestamp.isdigit()
        and str(int(parsed.timestamp)) == parsed.timestamp
    )
