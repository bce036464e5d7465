"""Stored survivors read back exactly, packed or not, from any chunk in any order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.corpus import spill


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.binary(max_size=3000), max_size=6), min_size=1, max_size=5), st.randoms())
def test_rows_read_back_as_written(tmp_path_factory, chunks, order):
    scratch = tmp_path_factory.mktemp("spill")
    where = []
    for index, rows in enumerate(chunks):
        offset = 0
        with spill.chunk_path(scratch, index, "cand").open("wb") as handle:
            for row in rows:
                packed = spill.pack(row)
                handle.write(packed)
                where.append((index, offset, len(packed), len(row), row))
                offset += len(packed)
    order.shuffle(where)
    with spill.SpillReader(scratch, keep=2) as read:
        for index, offset, stored, size, row in where:
            assert read(index, offset, stored, size) == row


def test_json_rows_get_smaller(tmp_path):
    row = (
        b'{"messages":['
        + b",".join(b'{"role":"tool","content":"[{\\"price\\": %d}]"}' % i for i in range(300))
        + b"]}"
    )
    assert len(spill.pack(row)) * 3 < len(row)
    assert spill.unpack(spill.pack(row), len(row)) == row
