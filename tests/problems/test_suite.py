from __future__ import annotations

import orjson
import pytest

from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import read_problems
from shoparena.problems.suite import (
    SuiteExistsError,
    SuiteIntegrityError,
    read_suite,
    write_suite,
)


@pytest.fixture(scope="module")
def problems(small_catalog):
    return ProblemGenerator(small_catalog, seed=21).generate(9)


def test_written_suite_verifies_and_stamps_problems(tmp_path, problems):
    path = tmp_path / "formal-v1.json"
    suite = write_suite(path, "formal", "v1", problems, created="2025-01-01T00:00:00+00:00")
    loaded = read_suite(path)
    assert loaded.header == suite.header and loaded.header.n_problems == 9
    assert all(p.suite == "formal" and p.suite_version == "v1" for p in loaded.problems)
    assert [p.problem_id for p in loaded.problems] == [p.problem_id for p in problems]
    result = read_problems(path)
    assert result.format == "suite" and result.suite.name == "formal" and result.rejects == []


def _tamper(path, change):
    data = orjson.loads(path.read_bytes())
    change(data)
    path.write_bytes(orjson.dumps(data))


def test_a_silently_edited_suite_is_refused(tmp_path, problems):
    path = tmp_path / "s.json"
    write_suite(path, "formal", "v2", problems)
    _tamper(path, lambda d: d["problems"][3].update(query=d["problems"][3]["query"] + " (cheaper)"))
    with pytest.raises(SuiteIntegrityError, match=r"suite 'formal' version 'v2' was modified.*content hash"):
        read_suite(path)
    with pytest.raises(SuiteIntegrityError):
        read_problems(path)


def test_a_dropped_problem_is_reported_as_a_count_change(tmp_path, problems):
    path = tmp_path / "s.json"
    write_suite(path, "formal", "v3", problems)
    _tamper(path, lambda d: d["problems"].pop())
    with pytest.raises(SuiteIntegrityError, match="frozen with 9 problems but now holds 8"):
        read_suite(path)


def test_writing_never_overwrites_a_different_suite(tmp_path, problems):
    path = tmp_path / "s.json"
    write_suite(path, "formal", "v1", problems, created="2025-01-01T00:00:00+00:00")
    before = path.read_bytes()
    again = write_suite(path, "formal", "v1", problems, created="2030-01-01T00:00:00+00:00")
    assert path.read_bytes() == before and again.header.created.startswith("2025")  # same content: no-op
    with pytest.raises(SuiteExistsError, match="write the new version to a new file"):
        write_suite(path, "formal", "v1", problems[:-1])
    with pytest.raises(SuiteExistsError):
        write_suite(path, "formal", "v2", problems)
    assert path.read_bytes() == before
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    with pytest.raises(SuiteExistsError, match="not a suite file"):
        write_suite(other, "formal", "v9", problems)
