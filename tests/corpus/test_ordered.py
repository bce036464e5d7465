"""Workers append their chunks to shared files in parallel; the files must read in chunk order."""

from __future__ import annotations

import multiprocessing
import random

import pytest

from shoparena.corpus.ordered import OrderedAppender


def _lines(index: int) -> list[bytes]:
    return [f"chunk {index} line {k}\n".encode() * (index % 3) for k in range(index % 4)]


def _append(appender: OrderedAppender, indices: list[int]) -> None:
    for index in indices:
        appender.append(index, {"a": _lines(index), "b": [b"x" * index]})
    appender.close()


def test_parallel_appends_land_in_chunk_order(tmp_path):
    context = multiprocessing.get_context("fork")
    paths = {"a": tmp_path / "a.txt", "b": tmp_path / "b.bin"}
    for path in paths.values():
        path.touch()
    appender = OrderedAppender(context, paths)
    indices = list(range(40))
    random.Random(3).shuffle(indices)
    # each process takes every 4th index of a shuffled order, in increasing order, as pool workers do
    workers = [context.Process(target=_append, args=(appender, sorted(indices[k::4]))) for k in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    assert paths["a"].read_bytes() == b"".join(b"".join(_lines(i)) for i in range(40))
    assert paths["b"].read_bytes() == b"".join(b"x" * i for i in range(40))
    assert appender.end("b") == sum(range(40))


def test_a_chunk_that_writes_nothing_still_passes_the_turn(tmp_path):
    path = tmp_path / "a.txt"
    path.touch()
    appender = OrderedAppender(multiprocessing.get_context("fork"), {"a": path})
    assert appender.append(0, {"a": [b"first\n"]}) == {"a": 0}
    assert appender.append(1, {}) == {}
    assert appender.append(2, {"a": [b"third\n"]}) == {"a": 6}
    appender.close()
    assert path.read_bytes() == b"first\nthird\n"


@pytest.mark.parametrize("pieces", [600, 1500])
def test_more_buffers_than_one_system_call_takes(tmp_path, pieces):
    path = tmp_path / "a.txt"
    path.touch()
    appender = OrderedAppender(multiprocessing.get_context("fork"), {"a": path})
    data = [f"{i}\n".encode() for i in range(pieces)]
    appender.append(0, {"a": data})
    appender.close()
    assert path.read_bytes() == b"".join(data)
