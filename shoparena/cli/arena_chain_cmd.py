"""`shoparena arena chain sync|history`: the arena's view of the chain.

`sync` without `--netuid` lists the arena's own metagraph (the local chain: `arena register` keeps
it); with `--netuid` it reads a Bittensor subnet's metagraph (the `[chain]` extra) into the arena:
hotkeys with a validator permit become validators, the rest miners, with their uids and stake.
`history` prints the append-only weights ledger `ARENA/chain/weights.jsonl` (every weight vector the
arena pushed, locally or on chain, with its u16 values), validating each line.

Pushing a race's weights is the race engine's job; it calls `LocalChain`/`BittensorChain.set_weights`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from shoparena.cli.common import console, fail, print_json, say, say_err

chain_app = typer.Typer(
    name="chain",
    help="The chain side of the arena: `sync` the metagraph (local or a Bittensor subnet), read the "
    "weights `history`.",
    no_args_is_help=True,
)

DirOption = Annotated[Path, typer.Option("--dir", help="The arena directory (`arena init` made it).")]


def connect_subtensor(network: str) -> Any:
    """A classic `bittensor.Subtensor` on `network` (finney, test, local or a ws:// endpoint)."""
    try:
        import bittensor
    except ImportError:
        raise fail(
            "--netuid needs the Bittensor SDK: pip install -e '.[chain]' (or `make`, which installs it)"
        ) from None
    return bittensor.Subtensor(network=network)


def _open(arena_dir: Path):
    from shoparena.arena import ArenaError, open_arena

    try:
        return open_arena(arena_dir)
    except ArenaError as exc:
        raise fail(str(exc)) from None


def _neurons_table(neurons, title: str) -> Table:
    table = Table("uid", "hotkey", "role", "stake", "source", title=title, title_justify="left")
    for n in neurons:
        table.add_row("" if n.uid is None else str(n.uid), n.hotkey, n.role, f"{n.stake:g}", n.source)
    return table


@chain_app.command("sync")
def sync_cmd(
    arena_dir: DirOption,
    netuid: Annotated[
        int | None,
        typer.Option(
            "--netuid",
            min=0,
            help="A Bittensor subnet to read the metagraph from (needs the Bittensor SDK, the `chain` extra). Without it, "
            "the arena's local metagraph is listed.",
            show_default=False,
        ),
    ] = None,
    network: Annotated[
        str, typer.Option("--network", help="Bittensor network or endpoint: finney, test, local, ws://….")
    ] = "finney",
    as_json: Annotated[bool, typer.Option("--json", help="Print the neurons (and rejects) as JSON.")] = False,
) -> None:
    """Bring the metagraph into the arena: validators (validator permit) and miners with uid and stake.

    Examples:
      shoparena arena chain sync --dir arena
      shoparena arena chain sync --dir arena --network finney --netuid 42
    """
    from shoparena.arena.competition.chain import BittensorChain, ChainError, LocalChain

    with _open(arena_dir) as arena:
        if netuid is None:
            chain = LocalChain(arena.dir, arena.metagraph)
            neurons, rejected = chain.sync_metagraph(), []
        else:
            subtensor = connect_subtensor(network)
            chain = BittensorChain(subtensor, None, netuid, arena.dir, metagraph=arena.metagraph)
            try:
                neurons = chain.sync_metagraph()
            except ChainError as exc:
                raise fail(str(exc)) from None
            rejected = chain.rejected
    if as_json:
        print_json(
            {
                "chain": chain.name,
                "neurons": [n.model_dump(mode="json") for n in neurons],
                "rejected": [r.model_dump() for r in rejected],
            }
        )
        return
    console.print(_neurons_table(neurons, f"{chain.name} · {len(neurons)} neuron(s)"))
    for reject in rejected:
        say_err(f"skipped uid {reject.uid} ({reject.hotkey}): {reject.reason}")
    if netuid is not None:
        say(f"arena {arena_dir}: metagraph synced from subnet {netuid} on {network}")


@chain_app.command("history")
def history_cmd(
    arena_dir: DirOption,
    as_json: Annotated[bool, typer.Option("--json", help="Print the ledger's entries as JSON.")] = False,
) -> None:
    """Every weight vector the arena pushed (oldest first), read from ARENA/chain/weights.jsonl.

    Exit status 1 names the first invalid line when the ledger was damaged or edited.

    Examples:
      shoparena arena chain history --dir arena
      shoparena arena chain history --dir arena --json
    """
    from shoparena.arena.competition.chain import LEDGER_FILE, ChainLedgerError, LocalChain

    if not (arena_dir / "arena.json").exists():
        raise fail(f"{arena_dir} is not an arena directory (no arena.json); make one with `arena init`")
    try:
        entries = LocalChain(arena_dir).history()
    except ChainLedgerError as exc:
        raise fail(str(exc), code=1) from None
    if as_json:
        print_json([e.model_dump(mode="json", by_alias=True) for e in entries])
        return
    if not entries:
        say(f"{arena_dir / LEDGER_FILE}: no weights pushed yet")
        return
    table = Table(
        "seq",
        "at (UTC)",
        "chain",
        "action",
        "race",
        "weights (uid: w)",
        "ok",
        title=str(arena_dir / LEDGER_FILE),
    )
    for e in entries:
        shown = ", ".join(f"{uid}: {w:.4f}" for uid, w in zip(e.uids, e.weights, strict=True))
        ok = "yes" if e.success else f"no ({e.message})" if e.message else "no"
        table.add_row(
            str(e.seq), e.at.strftime("%Y-%m-%d %H:%M:%S"), e.chain, e.action, e.race_id or "-", shown, ok
        )
    console.print(table)


def register(arena_app: typer.Typer) -> None:
    arena_app.add_typer(chain_app, name="chain")
