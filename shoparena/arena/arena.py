"""An opened arena: its configuration and everything the server and the job layer work through.

arena = init_arena("arena/", catalog="cat/", problems="bank.jsonl")   # once
arena = open_arena("arena/")
arena.metagraph.register(hotkey, "miner")
arena.ledger.by_status("queued"); arena.ledger.add_result(result)
arena.store.add(record)          # the trajectory store, in the same database
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from shoparena.arena.auth.audit import AuditLog
from shoparena.arena.auth.metagraph import Metagraph
from shoparena.arena.auth.nonces import NonceStore, open_nonce_store
from shoparena.arena.codestore import CodeStore, LocalCodeStore, open_code_store
from shoparena.arena.config import ArenaConfig, new_config, read_config, write_config
from shoparena.arena.errors import ArenaConfigError
from shoparena.arena.ledger import SubmissionLedger
from shoparena.store import StoreError, TrajectoryStore, open_store
from shoparena.store.engine import upgrade_to_head

ARENA_MIGRATIONS = "shoparena.arena:migrations"
METAGRAPH_CACHE_S = 1.0
"""How stale the server's view of registrations made by another process may be."""


@dataclass
class Arena:
    dir: Path
    config: ArenaConfig
    store: TrajectoryStore
    metagraph: Metagraph
    ledger: SubmissionLedger
    audit: AuditLog
    code: CodeStore
    nonces: NonceStore

    def close(self) -> None:
        self.nonces.close()
        self.store.close()

    def __enter__(self) -> Arena:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _open_state(url: str) -> TrajectoryStore:
    """The trajectory store and the arena's tables, both migrated to head, on one engine."""
    try:
        store = open_store(url)
    except StoreError as exc:
        raise ArenaConfigError(str(exc)) from None
    try:
        upgrade_to_head(store.engine, ARENA_MIGRATIONS)
    except BaseException:
        store.close()
        raise
    return store


def open_arena(arena_dir: str | os.PathLike, *, nonce_store: str | None = None) -> Arena:
    """Open an arena directory; `nonce_store` overrides the configured one (e.g. `serve --nonce-store`)."""
    arena_dir = Path(arena_dir)
    config = read_config(arena_dir)
    if nonce_store is not None:
        config = config.model_copy(update={"nonce_store": nonce_store})
    code = open_code_store(config.code_store, arena_dir)
    store = _open_state(config.store_url(arena_dir))
    try:
        nonces = open_nonce_store(config.nonce_store, arena_dir, config.nonce_prefix)
    except BaseException:
        store.close()
        raise
    engine = store.engine
    return Arena(
        dir=arena_dir,
        config=config,
        store=store,
        metagraph=Metagraph(engine, cache_s=METAGRAPH_CACHE_S, burn_uid=config.competition.burn_uid),
        ledger=SubmissionLedger(engine),
        audit=AuditLog(engine),
        code=code,
        nonces=nonces,
    )


def init_arena(
    arena_dir: str | os.PathLike, catalog: str | os.PathLike, problems: str | os.PathLike, **settings
) -> Arena:
    """Make a new arena directory (config, state database, code directory) and open it.

    `settings`: store, code_store, nonce_store and any other `ArenaConfig` field."""
    arena_dir = Path(arena_dir)
    config = new_config(arena_dir, Path(catalog), Path(problems), **settings)
    created = not arena_dir.exists()
    try:
        arena_dir.mkdir(parents=True, exist_ok=True)
        code = open_code_store(config.code_store, arena_dir)
        if isinstance(code, LocalCodeStore):
            code.root.mkdir(parents=True, exist_ok=True)
        _open_state(config.store_url(arena_dir)).close()
        write_config(arena_dir, config)
    except BaseException:
        if created:  # a failed init (a bad --store, an unreachable database) leaves no half-made arena
            shutil.rmtree(arena_dir, ignore_errors=True)
        raise
    return open_arena(arena_dir)
