"""The shared records keep their JSON byte for byte: lines written before the records moved (and the
score was typed) read back and serialise to the same bytes, in the runner's layout and the store's."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from shoparena.records.score import ScoreSummary
from shoparena.records.trajectory import TrajectoryRecord
from shoparena.store.records import canonical_bytes

DATA = Path(__file__).parent / "data"
RUNNER_LINES = (DATA / "runner-lines.jsonl").read_bytes().splitlines(keepends=True)
"""Two lines of `make demo`'s trajectories.jsonl (agentic and pipeline, judged), written by the code
before `shoparena.records` existed: score and judge spliced onto the end of the worker's JSON."""
STORE_LINE = (DATA / "store-export-line.jsonl").read_bytes()
"""The first line's record as `store export` wrote it then (the canonical bytes, model field order)."""


def runner_layout(record: TrajectoryRecord) -> bytes:
    """The runner's line: the record without score and judge, then those two appended."""
    body = orjson.dumps(record.model_dump(mode="json", exclude={"score", "judge"}))
    judge = orjson.dumps(record.judge.model_dump(mode="json")) if record.judge else b"null"
    score = orjson.dumps(record.score.model_dump(mode="json"))
    return body[:-1] + b',"score":' + score + b',"judge":' + judge + b"}\n"


@pytest.mark.parametrize("line", RUNNER_LINES, ids=["agentic", "pipeline"])
def test_a_recorded_runner_line_round_trips_byte_for_byte(line: bytes):
    record = TrajectoryRecord.model_validate_json(line)
    assert runner_layout(record) == line
    assert isinstance(record.score, ScoreSummary) and record.score.success is True


def test_the_store_bytes_of_a_recorded_line_are_unchanged():
    record = TrajectoryRecord.model_validate_json(RUNNER_LINES[0])
    assert canonical_bytes(record) + b"\n" == STORE_LINE
    assert canonical_bytes(TrajectoryRecord.model_validate_json(STORE_LINE)) + b"\n" == STORE_LINE


SCORE_VALUES = {
    "index": st.none() | st.integers(0, 500),
    "problem_id": st.none() | st.text(max_size=8),
    "bucket": st.sampled_from(["product", "shop", "voucher"]),
    "sample": st.integers(0, 9),
    "success": st.none() | st.booleans(),
    "rule": st.none() | st.floats(0, 1),
    "shop": st.none() | st.booleans(),
    "budget": st.none() | st.booleans(),
    "gold_rate": st.floats(0, 1),
    "answered": st.booleans(),
    "scoreable": st.booleans(),
    "product_ids": st.lists(st.text(max_size=6), max_size=3),
    **{
        key: value
        for axis in ("title", "price", "service", "sku_attr", "knowledge")
        for key, value in (
            (axis, st.none() | st.floats(0, 1)),
            (f"{axis}_hits", st.integers(0, 5)),
            (f"{axis}_checks", st.integers(0, 5)),
        )
    },
    "format_ok": st.none() | st.booleans(),
    "steps": st.none() | st.integers(0, 30),
    "terminated": st.none() | st.booleans(),
}


@given(st.fixed_dictionaries({}, optional=SCORE_VALUES))
def test_a_score_holds_exactly_the_fields_it_was_given(given_fields: dict):
    """Any subset of the fields (hand-made records hold only `success`) serialises as it was read."""
    ordered = {key: given_fields[key] for key in ScoreSummary.model_fields if key in given_fields}
    data = orjson.dumps(ordered)
    assert orjson.dumps(ScoreSummary.model_validate_json(data).model_dump(mode="json")) == data


def test_every_scoring_axis_has_its_score_fields():
    from shoparena.scoring.rules import AXES

    fields = set(ScoreSummary.model_fields)
    assert all({axis, f"{axis}_hits", f"{axis}_checks"} <= fields for axis in AXES)


@pytest.mark.parametrize(
    ("score", "where"),
    [({"success": 1}, "score.success"), ({"rule": "0.5"}, "score.rule"), ({"sucess": True}, "score.sucess")],
)
def test_a_mistyped_score_is_refused_with_its_field(score: dict, where: str):
    data = orjson.loads(RUNNER_LINES[0])
    data["score"] = score
    with pytest.raises(ValidationError) as caught:
        TrajectoryRecord.model_validate(data)
    assert where in str(caught.value)


def test_every_reader_of_trajectory_files_reports_a_bad_line_alike(tmp_path):
    """The runner (resume), `shoparena judge` and `store ingest` name a bad line's problem the same way."""
    from shoparena.agents.base import RunnerError
    from shoparena.eval.run_dir import read_trajectories
    from shoparena.judge import OfflineJudge, judge_file
    from shoparena.records.trajectory import invalid_record_reason
    from shoparena.store.ingest import Reject, read_records

    bad = orjson.dumps({**orjson.loads(RUNNER_LINES[0]), "record_id": 7, "sample": "first"}) + b"\n"
    with pytest.raises(ValidationError) as caught:
        TrajectoryRecord.model_validate_json(bad)
    reason = invalid_record_reason(caught.value)
    assert reason == (
        "not a trajectory record: record_id: Input should be a valid string; "
        "sample: Input should be a valid integer, unable to parse string as an integer"
    )
    path = tmp_path / "trajectories.jsonl"
    path.write_bytes(RUNNER_LINES[0] + bad + RUNNER_LINES[1])
    with pytest.raises(RunnerError) as resumed:
        read_trajectories(path)
    assert f"{path}:2: {reason};" in str(resumed.value)
    assert judge_file(path, tmp_path / "judged.jsonl", OfflineJudge()).rejects[0].error == reason
    # The store parses strictly (a string is never coerced into a number), so its pydantic message for
    # `sample` is the strict one; the fields named and the shape of the line are the same.
    (stored,) = [r.reason for _, r in read_records([path]) if isinstance(r, Reject)]
    assert stored == (
        "not a trajectory record: record_id: Input should be a valid string; "
        "sample: Input should be a valid integer"
    )
