from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.problems.io import (
    ProblemFileError,
    detect_format,
    dumps_problems,
    parse_problems,
    read_problems,
    write_problems,
)
from shoparena.problems.records import ProblemRecordError

UPSTREAM = {
    "shoppingbench_synthesize_product_test.jsonl": ("shoppingbench", {"product": 250}),
    "shoppingbench_synthesize_shop_test.jsonl": ("shoppingbench", {"shop": 250}),
    "shoppingbench_synthesize_voucher_test.jsonl": ("shoppingbench", {"voucher": 250}),
    "shoppingbench_synthesize_web_simpleqa_test.jsonl": ("shoppingbench", {"web": 150}),
    "oro_problem_suite_v3.json": ("arena", {"product": 10, "shop": 10, "voucher": 10}),
}


def _raw_records(path, fmt):
    if fmt == "arena":
        return json.loads(path.read_bytes())
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _canonical(records):
    return [orjson.dumps(r, option=orjson.OPT_SORT_KEYS) for r in records]


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_upstream_file_loads_without_errors(upstream_dir, name):
    fmt, buckets = UPSTREAM[name]
    result = read_problems(upstream_dir / name)
    assert result.rejects == []
    assert result.format == fmt
    assert result.bucket_counts() == buckets
    assert all(p.problem_id for p in result.problems)


def test_all_930_upstream_problems_load(upstream_dir):
    total = sum(len(read_problems(upstream_dir / name).problems) for name in UPSTREAM)
    assert total == 930


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_upstream_round_trips_with_metadata(upstream_dir, tmp_path, name):
    fmt, _ = UPSTREAM[name]
    first = read_problems(upstream_dir / name)
    out = tmp_path / name
    write_problems(out, first.problems, fmt=fmt)
    second = read_problems(out)
    assert second.format == fmt and second.rejects == []
    assert [p.to_record() for p in second.problems] == [p.to_record() for p in first.problems]


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_writing_original_format_reproduces_the_same_json_values(upstream_dir, name):
    fmt, _ = UPSTREAM[name]
    original = _raw_records(upstream_dir / name, fmt)
    problems = read_problems(upstream_dir / name).problems
    written = dumps_problems(problems, fmt=fmt, metadata=False)
    rewritten = json.loads(written) if fmt == "arena" else [json.loads(x) for x in written.splitlines()]
    assert rewritten == original
    # integers stay integers, floats stay floats: the canonical bytes match too
    assert _canonical(rewritten) == _canonical(original)


def test_bucket_from_arena_category(upstream_dir):
    problems = read_problems(upstream_dir / "oro_problem_suite_v3.json").problems
    for problem in problems:
        assert problem.bucket == problem.category.lower()
    web = {
        "query": "q",
        "category": "Knowledge",
        "Knowledge_Attribute": "Violin",
        "reward": {"product_id": "1", "shop_id": "2", "title": "t", "price": 3.0},
    }
    result = parse_problems(orjson.dumps([web]), "k.json")
    assert result.rejects == [] and result.problems[0].bucket == "web"


def test_missing_id_gets_a_stable_content_id():
    line = b'{"query": "Show me socks.", "reward": {"product_id": "9", "title": ["Socks"]}}\n'
    a = parse_problems(line, "a.jsonl").problems[0]
    b = parse_problems(b"\n\n" + line, "b.jsonl").problems[0]
    assert a.problem_id == b.problem_id and a.problem_id.startswith("product-")
    explicit = parse_problems(line.replace(b'{"query"', b'{"problem_id": "mine", "query"'), "c").problems[0]
    assert explicit.problem_id == "mine"


GOOD = {"query": "Show me socks.", "reward": {"product_id": "9", "title": ["Socks"]}}
VOUCHER = {
    "voucher_type": "platform",
    "threshold": 100,
    "discount_type": "fixed",
    "face_value": 20,
    "discount": None,
    "cap": None,
    "price_after_voucher": 180.0,
    "budget": 190,
}
SPEC = {"product_id": "9", "title": ["Socks"]}


def test_bad_records_are_located_and_do_not_stop_the_load():
    no_budget = {k: v for k, v in VOUCHER.items() if k != "budget"}
    lines = [
        orjson.dumps(GOOD),  # 1
        b'{"query": "broken", "reward": ',  # 2 invalid JSON
        orjson.dumps({"reward": SPEC}),  # 3 missing query
        orjson.dumps({"query": "five", "reward": [SPEC] * 5}),  # 4 reward list of 5
        orjson.dumps({"query": "p", "reward": {**SPEC, "price": [{"around": [1, 2]}]}}),  # 5 bad mode
        orjson.dumps({"query": "v", "reward": [SPEC], "voucher": no_budget}),  # 6 voucher without budget
        b"",  # 7 blank: skipped
        orjson.dumps([1, 2]),  # 8 not an object
        orjson.dumps(
            {"query": "s", "reward": [SPEC, {**SPEC, "sku_options": [{"a": "b"}, {"c": "d"}]}]}
        ),  # 9
        orjson.dumps(GOOD | {"query": "Show me more socks."}),  # 10
    ]
    result = parse_problems(b"\n".join(lines) + b"\n", "bad.jsonl")
    assert len(result.problems) == 2
    by_line = {}
    for error in result.rejects:
        by_line.setdefault(error.location, []).append(error)
    assert set(by_line) == {f"bad.jsonl:{n}" for n in (2, 3, 4, 5, 6, 8, 9)}
    assert "invalid JSON" in by_line["bad.jsonl:2"][0].reason
    assert by_line["bad.jsonl:3"][0].field == "query" and "missing" in by_line["bad.jsonl:3"][0].reason
    assert by_line["bad.jsonl:4"][0].field == "reward" and "got 5" in by_line["bad.jsonl:4"][0].reason
    (mode_error,) = by_line["bad.jsonl:5"]  # only the branch the record's shape asks for
    assert mode_error.field == "reward.price.0.around" and "between" in mode_error.reason
    assert [e.field for e in by_line["bad.jsonl:6"]] == ["voucher.budget"]
    assert "JSON object" in by_line["bad.jsonl:8"][0].reason
    assert by_line["bad.jsonl:9"][0].field == "reward.1.sku_options"
    assert str(by_line["bad.jsonl:3"][0]).startswith("bad.jsonl:3: query: ")


def test_a_reversed_price_range_is_refused_by_name():
    reversed_range = {**SPEC, "price": [{"between": [500, 100]}]}
    result = parse_problems(orjson.dumps({"query": "p", "reward": reversed_range}) + b"\n", "r.jsonl")
    (error,) = result.rejects
    assert error.location == "r.jsonl:1" and "reversed: [500, 100]" in error.reason
    fine = {**SPEC, "price": [{"between": [100, 100]}]}
    assert len(parse_problems(orjson.dumps({"query": "p", "reward": fine}) + b"\n", "r.jsonl").problems) == 1


def test_json_list_errors_name_the_index():
    records = [GOOD, {"query": "", "reward": SPEC}, {"query": "v", "reward": [SPEC], "category": "Voucher"}]
    result = parse_problems(orjson.dumps(records), "suite.json")
    assert result.format == "arena" and len(result.problems) == 1
    locations = {e.location: e for e in result.rejects}
    assert set(locations) == {"suite.json:[1]", "suite.json:[2]"}
    assert locations["suite.json:[1]"].field == "query"
    assert "needs a 'voucher'" in locations["suite.json:[2]"].reason


def test_strict_mode_stops_at_the_first_error():
    data = orjson.dumps(GOOD) + b"\nnot json\n" + orjson.dumps({"reward": SPEC}) + b"\n"
    with pytest.raises(ProblemRecordError, match=r"x.jsonl:2: \(line\): invalid JSON"):
        parse_problems(data, "x.jsonl", strict=True)


def test_file_level_errors(tmp_path):
    with pytest.raises(ProblemFileError, match="cannot read"):
        read_problems(tmp_path / "missing.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("  \n")
    with pytest.raises(ProblemFileError, match="empty"):
        read_problems(empty)
    broken = tmp_path / "broken.json"
    broken.write_text('[{"query": 1},')
    with pytest.raises(ProblemFileError, match=r"broken\.json: invalid JSON"):
        read_problems(broken)


def test_format_detection_is_by_content():
    one_line = orjson.dumps(GOOD)
    assert detect_format(one_line) == "shoppingbench"
    assert detect_format(b"  \n" + orjson.dumps([GOOD])) == "arena"
    assert detect_format(orjson.dumps({"name": "s", "content_hash": "x", "problems": []})) == "suite"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.just(orjson.dumps(GOOD)),
            st.binary(max_size=40).filter(lambda b: b"\n" not in b and b"\r" not in b),
            st.builds(lambda q: orjson.dumps({"query": q, "reward": SPEC}), st.text(max_size=20)),
            st.builds(lambda n: orjson.dumps({"query": "x", "reward": [SPEC] * n}), st.integers(0, 7)),
        ),
        max_size=12,
    )
)
def test_any_jsonl_lines_are_all_accounted_for(lines):
    """Whatever the lines hold, the load never raises and each non-blank line is a problem or a reject."""
    lines = [
        b"{" + line if line.lstrip()[:1] in (b"[", b"") else line for line in lines
    ]  # stay in JSONL mode
    data = b"\n".join(lines)
    if not data.strip():
        return
    result = parse_problems(data, "f.jsonl")
    rejected_lines = {e.location for e in result.rejects}
    nonblank = [line for line in data.splitlines() if line.strip()]
    assert len(result.problems) + len(rejected_lines) == len(nonblank)
