"""The signing-key options every command that signs takes: `--key KEY.json`, or an existing Bittensor
wallet's hotkey (`--wallet NAME [--hotkey NAME] [--wallet-path DIR]`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shoparena.cli.common import err_console, fail

KeyOption = Annotated[
    Path | None,
    typer.Option("--key", help="Key file from `shoparena keys new` (mode 0600).", show_default=False),
]
WalletOption = Annotated[
    str | None,
    typer.Option(
        "--wallet", help="Sign with this Bittensor wallet's hotkey instead of --key.", show_default=False
    ),
]
WalletHotkeyOption = Annotated[str, typer.Option("--hotkey", help="The wallet's hotkey name.")]
WalletPathOption = Annotated[
    str | None,
    typer.Option(
        "--wallet-path", help="Wallets directory \\[default: ~/.bittensor/wallets].", show_default=False
    ),
]


def load_signer(
    key: Path | None, wallet: str | None, hotkey: str = "default", wallet_path: str | None = None
):
    """The keypair the options name; exits with a clear error when they name none or two."""
    from shoparena.arena.auth.keys import key_file_too_open, load_key_file, load_wallet_hotkey
    from shoparena.arena.errors import KeyFileError

    if (key is None) == (wallet is None):
        raise fail("sign with exactly one of --key KEY.json or --wallet NAME [--hotkey NAME]")
    try:
        if key is not None:
            keypair = load_key_file(key)
            if key_file_too_open(key):
                err_console.print(f"[yellow]warning:[/] {key} is readable by others; run `chmod 600 {key}`")
            return keypair
        return load_wallet_hotkey(wallet, hotkey, wallet_path)
    except KeyFileError as exc:
        raise fail(str(exc)) from None
