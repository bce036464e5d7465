"""`shoparena keys`: sr25519 key files for signing arena requests."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shoparena.cli.common import fail, print_json, say
from shoparena.cli.key_options import (
    KeyOption,
    WalletHotkeyOption,
    WalletOption,
    WalletPathOption,
    load_signer,
)

keys_app = typer.Typer(
    name="keys",
    help="sr25519 keys for signing arena requests (a key file, or an existing Bittensor wallet's hotkey).",
    no_args_is_help=True,
)


@keys_app.command("new")
def new_cmd(
    out: Annotated[Path, typer.Option("--out", help="Key file to write (created with mode 0600).")],
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing file (its key is lost).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the address as JSON.")] = False,
) -> None:
    """Make a new keypair: {"ss58_address", "secret_seed"} in --out, readable by you only.

    Examples:
      shoparena keys new --out miner.json
      shoparena keys new --out validator.json --json
    """
    from shoparena.arena.auth.keys import write_key_file
    from shoparena.arena.errors import KeyFileError

    try:
        key = write_key_file(out, overwrite=force)
    except KeyFileError as exc:
        raise fail(str(exc)) from None
    if as_json:
        print_json({"ss58_address": key.ss58_address, "path": str(out)})
        return
    say(f"wrote {out} (mode 0600): hotkey [bold]{key.ss58_address}[/]")
    say("keep the file secret; give the arena operator the hotkey to register")


@keys_app.command("show")
def show_cmd(
    key: KeyOption = None,
    wallet: WalletOption = None,
    hotkey: WalletHotkeyOption = "default",
    wallet_path: WalletPathOption = None,
) -> None:
    """Print the SS58 address (hotkey) of a key file or wallet hotkey.

    Examples:
      shoparena keys show --key miner.json
      shoparena keys show --wallet my-wallet --hotkey default
    """
    say(load_signer(key, wallet, hotkey, wallet_path).ss58_address)


def register(app: typer.Typer) -> None:
    app.add_typer(keys_app, name="keys")
