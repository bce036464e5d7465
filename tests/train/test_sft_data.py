"""Training rows in: a corpus directory's splits (JSONL, or Parquet when that is all there is) and rows
files; a row that is not a conversation is refused with its file and line."""

from __future__ import annotations

import shutil

import orjson
import pytest

from shoparena.train.corpus_data import DataError, read_corpus, read_rows, read_training_data
from tests.jsonl import read_jsonl


def test_corpus_splits_and_manifest(tiny_corpus, tmp_path):
    splits = read_corpus(tiny_corpus)
    assert splits.train == read_jsonl(tiny_corpus / "train.jsonl") and splits.eval
    assert splits.manifest_sha256 and len(splits.manifest_sha256) == 64
    parquet_only = tmp_path / "pq"
    parquet_only.mkdir()
    for name in ("train.parquet", "eval.parquet", "manifest.json"):
        shutil.copy(tiny_corpus / name, parquet_only / name)
    again = read_training_data(parquet_only)
    assert again.train == splits.train and again.eval == splits.eval


def test_bad_rows_are_named(tmp_path):
    path = tmp_path / "rows.jsonl"
    good = {
        "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "tools": [],
    }
    path.write_bytes(
        orjson.dumps(good) + b"\n" + orjson.dumps({"messages": [{"role": "user", "content": "q"}]}) + b"\n"
    )
    with pytest.raises(DataError, match=r"rows.jsonl:2: no assistant message"):
        read_rows(path)
    path.write_bytes(orjson.dumps(good) + b"\n{not json\n")
    with pytest.raises(DataError, match=r"rows.jsonl:2: not JSON"):
        read_rows(path)
    path.write_bytes(orjson.dumps({"messages": [{"role": "robot", "content": "x"}]}) + b"\n")
    with pytest.raises(DataError, match="message 0 has no role"):
        read_rows(path)
    with pytest.raises(DataError, match="not a directory"):
        read_corpus(tmp_path / "missing")
    path.write_bytes(orjson.dumps(good) + b"\n")
    single = read_training_data(path)  # a rows file: training rows only
    assert single.train == [good] and single.eval == []
