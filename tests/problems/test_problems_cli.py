from __future__ import annotations

import json

import orjson
import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.index.catalog_dir import build_synthetic

runner = CliRunner()


@pytest.fixture(scope="module")
def catalog_dir(tmp_path_factory):
    """A catalogue of its own: the session one is held open, and LMDB allows one open per process."""
    out = tmp_path_factory.mktemp("problems-cli") / "cat"
    build_synthetic(out, 1500, seed=13, workers=1)
    return out


def _generate(catalog_dir, out, *extra):
    args = [
        "problems",
        "generate",
        "--catalog",
        str(catalog_dir),
        "--n",
        "12",
        "--seed",
        "3",
        "--out",
        str(out),
    ]
    return runner.invoke(app, [*args, *extra])


def test_generate_writes_a_file_and_prints_bucket_counts(catalog_dir, tmp_path):
    out = tmp_path / "tasks.jsonl"
    result = _generate(catalog_dir, out, "--variants", "2")
    assert result.exit_code == 0, result.output
    assert "wrote 24 problems" in result.stdout
    assert "product" in result.stdout and "voucher" in result.stdout
    lines = out.read_bytes().splitlines()
    assert len(lines) == 24 and all(json.loads(line)["leak_cluster_id"] for line in lines)
    again = tmp_path / "again.jsonl"
    assert _generate(catalog_dir, again, "--variants", "2").exit_code == 0
    assert again.read_bytes() == out.read_bytes()


def test_generate_refuses_web_and_unknown_buckets(catalog_dir, tmp_path):
    result = _generate(catalog_dir, tmp_path / "x.jsonl", "--buckets", "product,web")
    assert result.exit_code != 0 and "knowledge source" in result.output
    result = _generate(catalog_dir, tmp_path / "x.jsonl", "--buckets", "gadgets")
    assert result.exit_code != 0 and "unknown bucket" in result.output
    result = _generate(tmp_path, tmp_path / "x.jsonl")
    assert result.exit_code != 0 and "not a catalogue directory" in result.output


def test_validate_upstream_files_pass(upstream_dir):
    files = sorted(str(p) for p in upstream_dir.iterdir() if p.suffix in (".jsonl", ".json"))
    result = runner.invoke(app, ["problems", "validate", *files])
    assert result.exit_code == 0, result.output
    assert result.stdout.count(": ok:") == 5


def test_validate_reports_located_errors_and_fails(tmp_path):
    bad = tmp_path / "bad.jsonl"
    good = b'{"query": "Show me socks.", "reward": {"product_id": "9", "title": ["Socks"]}}'
    bad.write_bytes(good + b"\n{oops\n" + b'{"reward": {"product_id": "9", "title": ["Socks"]}}\n')
    result = runner.invoke(app, ["problems", "validate", str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:2: (line): invalid JSON" in result.output
    assert f"{bad}:3: query: required field is missing" in result.output
    assert "2 error(s): 1 valid problem(s)" in result.output


def test_suite_generation_then_tamper_fails_validation(catalog_dir, tmp_path):
    out = tmp_path / "v1.json"
    result = _generate(catalog_dir, out, "--suite", "formal", "--version", "v1")
    assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["problems", "validate", str(out)]).exit_code == 0
    clash = _generate(catalog_dir, out, "--suite", "formal", "--version", "v1", "--n", "6")
    assert clash.exit_code != 0 and "new file" in clash.output
    data = orjson.loads(out.read_bytes())
    data["problems"][0]["voucher"] = None
    out.write_bytes(orjson.dumps(data))
    result = runner.invoke(app, ["problems", "validate", str(out)])
    assert result.exit_code == 1 and "modified after it was frozen" in result.output


def test_stats_table_and_json(upstream_dir):
    path = upstream_dir / "oro_problem_suite_v3.json"
    table = runner.invoke(app, ["problems", "stats", str(path)])
    assert table.exit_code == 0 and "constraints" in table.stdout and "difficulty" in table.stdout
    data = json.loads(runner.invoke(app, ["problems", "stats", str(path), "--json"]).stdout)
    assert data["n_problems"] == 30 and data["buckets"] == {"product": 10, "shop": 10, "voucher": 10}
    assert data["difficulty"] == {"easy": 21, "medium": 9}
    assert data["constraints"]["title"] == sum(int(k) * v for k, v in data["items_per_problem"].items())
    # every row counts gold items, so no share is above 100% (an item asking 3 attributes counts once)
    assert all(n <= data["constraints"]["title"] for n in data["constraints"].values())
    assert "%" in table.stdout and not any(f"{n}%" in table.stdout for n in range(101, 1000))


def test_help_has_examples():
    for command in ("generate", "validate", "stats"):
        result = runner.invoke(app, ["problems", command, "--help"])
        assert result.exit_code == 0 and "Examples" in result.stdout


def _task(query: str, product_id: str, **extra) -> dict:
    return {"query": query, "reward": {"product_id": product_id, "title": ["Socks"]}, **extra}


def test_validate_reports_duplicate_problem_ids_with_each_place(tmp_path):
    """`eval` refuses a file whose records share a problem_id, so `validate` must fail it, naming every place."""
    jsonl = tmp_path / "dups.jsonl"
    rows = [
        _task("Show me socks.", "1", problem_id="p-1"),
        _task("Find a red scarf.", "2"),  # no id: one is derived from the query and reward
        _task("Show me other socks.", "3", problem_id="p-1"),
        _task("Unique task.", "4", problem_id="p-4"),
        _task("Find a red scarf.", "2"),  # the same content: the same derived id as line 2
        _task("Yet more socks.", "5", problem_id="p-1"),
    ]
    jsonl.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    result = runner.invoke(app, ["problems", "validate", str(jsonl)])
    assert result.exit_code == 1
    assert f"problem_id 'p-1' is shared by 3 records: {jsonl}:1, {jsonl}:3, {jsonl}:6" in result.output
    assert f"is shared by 2 records: {jsonl}:2, {jsonl}:5" in result.output
    assert "2 duplicate problem_id(s): 6 valid problem(s)" in result.output

    arena = tmp_path / "dups.json"
    arena.write_bytes(orjson.dumps([rows[0], rows[3], rows[2]]))
    result = runner.invoke(app, ["problems", "validate", str(arena)])
    assert result.exit_code == 1
    assert f"problem_id 'p-1' is shared by 2 records: {arena}:[0], {arena}:[2]" in result.output

    stats = runner.invoke(app, ["problems", "stats", str(jsonl), "--json"])
    assert stats.exit_code == 0 and orjson.loads(stats.stdout)["duplicate_ids"] == 2

    unique = tmp_path / "unique.jsonl"
    unique.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows[:2] + rows[3:4]))
    assert runner.invoke(app, ["problems", "validate", str(unique)]).exit_code == 0


def test_validate_hostile_files_are_clear_errors(tmp_path):
    files = {
        "empty.jsonl": b"",
        "empty_list.json": b"[]",
        "binary.jsonl": b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x01\n",
        "bad_suite.json": b'{"problems": [], "content_hash": "x"}',
        "scalars.json": b'[1, "two", null]',
        "wrong_types.jsonl": b'{"query": 5, "reward": {"product_id": "1", "title": ["x"]}, "problem_id": {"a": 1}}\n',
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "a_directory").mkdir()
    expected = {
        "empty.jsonl": "empty.jsonl: empty file",
        "empty_list.json": "holds no problems (an empty list)",
        "binary.jsonl": "binary.jsonl:1: (line): not UTF-8 text (binary data?)",
        "bad_suite.json": "not a valid suite header: name: Field required",
        "scalars.json": "scalars.json:[1]: (record): expected a JSON object, got str",
        "wrong_types.jsonl": "wrong_types.jsonl:1: query: Input should be a valid string",
        "a_directory": "a_directory: cannot read: Is a directory",
        "missing.jsonl": "missing.jsonl: cannot read: No such file or directory",
    }
    for name, message in expected.items():
        result = runner.invoke(app, ["problems", "validate", str(tmp_path / name)])
        assert result.exit_code == 1, (name, result.output)
        assert message in result.output, (name, result.output)
        assert "Traceback" not in result.output
    assert (
        "problem_id: Input should be a valid string"
        in runner.invoke(app, ["problems", "validate", str(tmp_path / "wrong_types.jsonl")]).output
    )


def test_a_byte_order_mark_does_not_cost_line_one(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + orjson.dumps(_task("Show me socks.", "1")) + b"\n")
    result = runner.invoke(app, ["problems", "validate", str(path)])
    assert result.exit_code == 0 and "ok: 1 valid problem(s)" in result.output
