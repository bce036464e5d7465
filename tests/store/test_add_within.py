"""`TrajectoryStore.add_within`: records stored inside the caller's transaction commit and roll back
with the caller's own rows, on SQLite and PostgreSQL, with the store's duplicate and conflict rules."""

from __future__ import annotations

import math

import pytest

from shoparena.store import StoreError
from shoparena.store.engine import write_transaction
from shoparena.store.errors import RecordConflictError


class Abort(Exception):
    pass


def test_records_commit_and_roll_back_with_the_callers_transaction(store, records):
    batch = records[:3]
    with pytest.raises(Abort), write_transaction(store.engine) as connection:
        assert store.add_within(connection, batch) == 3
        raise Abort  # the caller's own write failed: nothing of the transaction stays
    assert store.count() == 0
    with write_transaction(store.engine) as connection:
        assert store.add_within(connection, batch) == 3
    assert sorted(store.record_ids()) == sorted(record.record_id for record in batch)
    with write_transaction(store.engine) as connection:
        assert store.add_within(connection, batch) == 0  # stored already, byte for byte: no new row
    assert store.count() == 3


def test_a_changed_record_or_an_unstorable_one_raises(store, records):
    original = records[0]
    with write_transaction(store.engine) as connection:
        store.add_within(connection, [original])
    changed = original.model_copy(update={"sample": original.sample + 1})
    with pytest.raises(RecordConflictError), write_transaction(store.engine) as connection:
        store.add_within(connection, [changed])
    broken = original.model_copy(
        update={"record_id": "nan-record", "score": original.score.model_copy(update={"rule": math.nan})}
    )
    with pytest.raises(StoreError, match="nan-record"), write_transaction(store.engine) as connection:
        store.add_within(connection, [broken])
    assert store.record_ids() == [original.record_id]
