"""sr25519 keys for signing arena requests: key files of our own, or existing Bittensor wallets.

A key file is `{"ss58_address": "5…", "secret_seed": "0x<64 hex>"}` (mode 0600), loadable with
`bittensor_wallet.Keypair.create_from_seed(secret_seed)`; the address is kept beside the seed so a
reader can see whose key it is, and loading checks the two still belong together.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

import orjson
from bittensor_wallet import Keypair
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shoparena.arena.auth.signing import HOTKEY_PATTERN
from shoparena.arena.errors import KeyFileError

DEFAULT_WALLET_PATH = "~/.bittensor/wallets"
KEY_FILE_MODE = 0o600


class KeyFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ss58_address: str
    secret_seed: str = Field(pattern=r"^0x[0-9a-f]{64}$")


def keypair_from_seed(secret_seed: str) -> Keypair:
    return Keypair.create_from_seed(secret_seed)


def public_keypair(ss58_address: str) -> Keypair:
    """A verify-only keypair; raises ValueError for anything that is not a valid SS58 address."""
    if not HOTKEY_PATTERN.fullmatch(ss58_address):
        raise ValueError(f"{ss58_address!r} is not an SS58 address")
    return Keypair(ss58_address=ss58_address)


def canonical_hotkey(ss58_address: str) -> str:
    """The address as the server compares it: valid SS58 in the generic-substrate format (42), the one
    Bittensor hotkeys use. A key spelled in another network's format is refused rather than silently
    treated as a second identity of the same public key."""
    try:
        keypair = public_keypair(ss58_address)
    except ValueError as exc:
        raise ValueError(f"{ss58_address!r} is not a valid SS58 address ({exc})") from None
    generic = Keypair(public_key="0x" + bytes(keypair.public_key).hex()).ss58_address
    if generic != ss58_address:
        raise ValueError(
            f"{ss58_address!r} is an SS58 address of another network; the arena uses the generic "
            f"format 42 ({generic})"
        )
    return ss58_address


def new_key_file() -> KeyFile:
    seed = "0x" + secrets.token_bytes(32).hex()
    return KeyFile(ss58_address=keypair_from_seed(seed).ss58_address, secret_seed=seed)


def write_key_file(path: Path, key: KeyFile | None = None, *, overwrite: bool = False) -> KeyFile:
    """Write a key file readable by its owner only; it is created 0600 (never briefly wider) and an
    existing file is kept unless `overwrite`."""
    key = key or new_key_file()
    path = Path(path)
    if not path.parent.is_dir():
        raise KeyFileError(f"{path}: directory {path.parent} does not exist")
    data = orjson.dumps(key.model_dump(), option=orjson.OPT_INDENT_2) + b"\n"
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
    try:
        fd = os.open(path, flags, KEY_FILE_MODE)
    except FileExistsError:
        raise KeyFileError(f"{path} exists already; pass --force to replace it (its key is lost)") from None
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot create: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, KEY_FILE_MODE)  # an existing file keeps its mode on O_TRUNC
        os.write(fd, data)
    finally:
        os.close(fd)
    return key


def key_file_too_open(path: Path) -> bool:
    """True when group or others may read the key file (ssh refuses such keys; we warn)."""
    return bool(Path(path).stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO))


def load_key_file(path: Path) -> Keypair:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot read key file: {exc.strerror or exc}") from None
    try:
        key = KeyFile.model_validate_json(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(file)'}: {e['msg']}" for e in exc.errors())
        raise KeyFileError(
            f'{path}: not a key file ({problems}); expected {{"ss58_address": "5…", "secret_seed": '
            '"0x<64 hex>"}, as `shoparena keys new` writes'
        ) from None
    keypair = keypair_from_seed(key.secret_seed)
    if keypair.ss58_address != key.ss58_address:
        raise KeyFileError(
            f"{path}: ss58_address {key.ss58_address} does not belong to the secret seed (its address is "
            f"{keypair.ss58_address}); the file was edited or mixed up"
        )
    return keypair


def load_wallet_hotkey(name: str, hotkey: str = "default", path: str | None = None) -> Keypair:
    """The hotkey of an existing Bittensor wallet (`~/.bittensor/wallets/NAME/hotkeys/HOTKEY`)."""
    from bittensor_wallet import Wallet

    wallet_path = os.path.expanduser(path or DEFAULT_WALLET_PATH)
    try:
        keypair = Wallet(name=name, hotkey=hotkey, path=wallet_path).hotkey
    except Exception as exc:  # the wallet library raises its own (Rust-side) error types
        reason = str(exc).removeprefix("Generic error: ")
        raise KeyFileError(f"wallet {name!r} hotkey {hotkey!r} under {wallet_path}: {reason}") from None
    if keypair is None or keypair.public_key is None:
        raise KeyFileError(f"wallet {name!r} hotkey {hotkey!r} under {wallet_path} has no usable key")
    return keypair
