"""The rank table gives back exactly the rows put in (types included: a problem id of digits stays
text), grouped by problem in input order, across insert batches."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.corpus.ranktable import CandidateRow, RankTable

texts = st.text(min_size=1, max_size=8)
problem_ids = st.one_of(texts, st.integers(0, 99).map(str), st.just("1e3"))


@st.composite
def candidate_rows(draw) -> list[CandidateRow]:
    rows = []
    for seq in sorted(draw(st.sets(st.integers(0, 10**12), max_size=30))):
        rows.append(
            CandidateRow(
                seq=seq,
                problem_id=draw(problem_ids),
                bucket=draw(st.none() | st.sampled_from(["product", "shop", "voucher"])),
                query=draw(texts),
                hint=draw(st.none() | texts),
                key="[1,2,0,0,0.9]",
                shape=draw(st.text("FVCRT", max_size=6)),
                digest=f"{seq:016x}",
                chunk=seq // 256,
                offset=draw(st.integers(0, 2**40)),
                length=draw(st.integers(0, 2**20)),
                trl_length=draw(st.integers(0, 2**20)),
                stored=draw(st.integers(0, 2**20)),
            )
        )
    return rows


@settings(max_examples=60, deadline=None)
@given(rows=candidate_rows(), batch=st.integers(1, 7))
def test_rows_come_back_grouped_by_problem(tmp_path_factory, rows, batch):
    table = RankTable(tmp_path_factory.mktemp("rank") / "rank.sqlite", batch=batch)
    try:
        for row in rows:
            table.candidates.add(row)
        groups = list(table.by_problem())
        assert [row for group in groups for row in group] == sorted(rows, key=lambda r: (r.problem_id, r.seq))
        assert all(type(row) is CandidateRow for group in groups for row in group)
        assert all(isinstance(row.problem_id, str) for group in groups for row in group)
        assert len(groups) == len({r.problem_id for r in rows})
        assert all(len({r.problem_id for r in group}) == 1 for group in groups)

        for row in rows[::2]:
            table.kept.add(row.ranked())
        for row in rows[1::2]:
            table.dropped.add(row.ranked(f"ranked out of {row.problem_id}"))
        assert list(table.kept.rows("seq")) == [row.ranked() for row in rows[::2]]
        dropped = list(table.dropped.rows("seq"))
        assert [r.detail for r in dropped] == [f"ranked out of {r.problem_id}" for r in rows[1::2]]
    finally:
        table.close()
