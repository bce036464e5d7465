"""`shoparena score` end to end on a real generated catalogue, plus answer-file parsing and matching."""

from __future__ import annotations

import orjson
import pytest
from typer.testing import CliRunner

from shoparena.catalog.models import Product
from shoparena.cli import app
from shoparena.problems.models import Problem
from shoparena.scoring.answers import Answer, match_answers, read_answers
from shoparena.scoring.similarity import LexicalSimilarity
from shoparena.scoring.suite import score_answers

runner = CliRunner()


def _catalog_products(catalog, n: int) -> list[Product]:
    return [Product.model_validate(catalog.store.dict_by_ord(i)) for i in range(n)]


def _problems_from(products: list[Product]) -> list[Problem]:
    """Product tasks whose gold is a catalogue product, plus one shop task over one shop's items."""
    problems = []
    for product in products[:6]:
        attributes = [{k: [v[0]]} for k, v in list(product.attributes.items())[:2]]
        reward = {
            "product_id": product.product_id,
            "title": [product.title],
            "price": [{"between": [product.price * 0.5, product.price * 2]}],
        }
        if attributes:
            reward["attributes"] = attributes
        problems.append(Problem(query=f"find {product.title}", reward=reward))
    by_shop: dict[str, list[Product]] = {}
    for product in products:
        by_shop.setdefault(product.shop_id, []).append(product)
    shop_items = next(items for items in by_shop.values() if len(items) >= 2)[:2]
    problems.append(
        Problem(
            query="two from one shop",
            reward=[{"product_id": p.product_id, "title": [p.title]} for p in shop_items],
        )
    )
    return problems


@pytest.fixture(scope="module")
def scenario(small_catalog, small_catalog_dir, tmp_path_factory):
    products = _catalog_products(small_catalog, 400)
    problems = _problems_from(products)
    root = tmp_path_factory.mktemp("score")
    problems_path = root / "problems.jsonl"
    problems_path.write_bytes(b"\n".join(orjson.dumps(p.to_record()) for p in problems) + b"\n")
    gold = [p.rewards[0].product_id for p in problems[:6]]
    shop_ids = [spec.product_id for spec in problems[6].rewards]
    lines = [
        orjson.dumps({"problem_id": problems[0].problem_id, "product_ids": [gold[0]]}),
        orjson.dumps({"index": 1, "product_ids": f"{gold[1]}, extra-id"}),
        orjson.dumps({"index": 2, "product_ids": [products[300].product_id]}),  # some other product
        b"{not json",
        orjson.dumps({"index": 99, "product_ids": ["x"]}),
        orjson.dumps({"problem_id": "nope", "product_ids": ["x"]}),
        orjson.dumps({"product_ids": ["x"]}),
        orjson.dumps({"index": 6, "product_ids": ",".join(shop_ids), "steps": 5, "terminated": True}),
        orjson.dumps({"index": 0, "product_ids": ["again"]}),
    ]
    answers_path = root / "answers.jsonl"
    answers_path.write_bytes(b"\n".join(lines) + b"\n")
    return small_catalog_dir, problems_path, answers_path, problems, root


def test_score_command_table_json_and_rejects(scenario):
    catalog_dir, problems_path, answers_path, _problems, root = scenario
    out = root / "scores.json"
    args = ["score", "--catalog", str(catalog_dir), "--problems", str(problems_path)]
    args += ["--answers", str(answers_path), "--similarity", "lexical", "--json", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "overall" in result.output and "ASR" in result.output
    assert "answers.jsonl:4" in result.output and "not JSON" in result.output
    assert "index 99 is out of range" in result.output
    assert "'nope' is not in the problems file" in result.output
    assert "needs 'problem_id' or 'index'" in result.output
    assert "a second answer for problem 0" in result.output
    assert "5 answer line(s) skipped" in result.output

    document = orjson.loads(out.read_bytes())
    rows = {row["index"]: row for row in document["problems"]}
    assert set(rows) == {0, 1, 2, 6}  # upstream mode: unanswered problems are left out
    assert rows[0]["success"] and rows[0]["gold_rate"] == 1.0 and rows[0]["shop"] is None
    assert rows[1]["success"]  # the extra id is ignored for a product task
    assert rows[6]["success"] and rows[6]["shop"] is True and rows[6]["budget"] is None
    assert rows[2]["bucket"] == "product" and rows[2]["title_checks"] == 1
    aggregate = document["aggregate"]
    assert aggregate["n_problems"] == 7 and aggregate["unanswered"] == [3, 4, 5]
    assert len(aggregate["rejects"]) == 5
    overall = aggregate["metrics"]["overall"]
    assert overall["n"] == 4
    assert overall["metrics"]["asr"]["value"] == pytest.approx(sum(r["success"] for r in rows.values()) / 4)
    assert overall["metrics"]["length"]["value"] == pytest.approx(0.2)


def test_strict_mode_counts_the_whole_suite(scenario):
    catalog_dir, problems_path, answers_path, _problems, root = scenario
    out = root / "strict.json"
    args = ["score", "--catalog", str(catalog_dir), "--problems", str(problems_path)]
    args += [
        "--answers",
        str(answers_path),
        "--similarity",
        "lexical",
        "--mode",
        "strict",
        "--json",
        str(out),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    document = orjson.loads(out.read_bytes())
    assert len(document["problems"]) == 7
    missing = [row for row in document["problems"] if not row["answered"]]
    assert {row["index"] for row in missing} == {3, 4, 5} and not any(r["success"] for r in missing)
    assert document["aggregate"]["metrics"]["overall"]["n"] == 7


def test_score_command_clear_errors(scenario, tmp_path):
    catalog_dir, problems_path, answers_path, _problems, _root = scenario
    base = ["score", "--catalog", str(catalog_dir), "--problems", str(problems_path)]
    result = runner.invoke(app, [*base, "--answers", str(tmp_path / "none.jsonl")])
    assert result.exit_code == 2 and "is not a file" in result.output
    result = runner.invoke(app, [*base, "--answers", str(answers_path), "--mode", "lenient"])
    assert result.exit_code == 2 and "--mode must be upstream or strict" in result.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "q", "reward": {"product_id": "1"}}\n')
    result = runner.invoke(
        app, ["score", "--catalog", str(catalog_dir), "--problems", str(bad), "--answers", str(answers_path)]
    )
    assert result.exit_code == 2 and "bad.jsonl:1" in result.output
    result = runner.invoke(
        app,
        [
            "score",
            "--catalog",
            str(tmp_path),
            "--problems",
            str(problems_path),
            "--answers",
            str(answers_path),
        ],
    )
    assert result.exit_code == 2 and "cannot open catalogue" in result.output


def test_answers_forms_and_samples(tmp_path, scenario):
    _catalog_dir, _p, _a, problems, _root = scenario
    path = tmp_path / "a.jsonl"
    path.write_text(
        '{"index": 0, "product_ids": "a, b"}\n\n'
        '{"index": 0, "sample": 1, "product_ids": [1, 2], "format_ok": false}\n'
        '{"index": 0, "product_ids": {"a": 1}}\n'
        "[1, 2]\n"
    )
    good, bad = read_answers(path)
    assert [a.product_ids for _, a in good] == [["a", "b"], ["1", "2"]]
    assert [(r.line, r.reason.split(":")[0]) for r in bad] == [(4, "product_ids"), (5, "not a JSON object")]
    episodes, rejects = match_answers(problems, good)
    assert [(e.index, e.answer.sample) for e in episodes] == [(0, 0), (0, 1)] and not rejects


def test_pass_at_k_through_score_answers(small_catalog, scenario):
    _catalog_dir, _p, _a, problems, _root = scenario
    gold = problems[0].rewards[0].product_id
    answers = [Answer(index=0, sample=i, product_ids=[gold] if i < 2 else ["zzz"]) for i in range(4)]
    result = score_answers(problems, answers, small_catalog, LexicalSimilarity(), "upstream", pass_k=(1, 2))
    one, two = result.pass_at_k
    assert one.value.value == pytest.approx(0.5)
    assert two.value.value == pytest.approx(1 - 1 / 6)  # 1 − C(2,2)/C(4,2)


def _score(scenario, answers_path, *extra):
    catalog_dir, problems_path, _answers, _problems, _root = scenario
    args = ["score", "--catalog", str(catalog_dir), "--problems", str(problems_path)]
    args += ["--answers", str(answers_path), "--similarity", "lexical", "--bootstrap", "50", *extra]
    return runner.invoke(app, args)


def test_upstream_denominator_is_flagged_in_the_table_and_strict_denominator_counts_failures(
    scenario, tmp_path
):
    """1 of 7 answered, correctly: upstream's ASR is 1.000 over the answered one, and the table must say so."""
    _catalog_dir, _p, _a, problems, _root = scenario
    answers = tmp_path / "one.jsonl"
    answers.write_bytes(
        orjson.dumps({"index": 0, "product_ids": [problems[0].rewards[0].product_id]}) + b"\n"
    )

    out = tmp_path / "upstream.json"
    result = _score(scenario, answers, "--json", out)
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stdout.split())
    warning = "ASR over 1 answered of 7 problems; 6 unanswered left out — use --strict-denominator"
    assert f"⚠ {warning}" in flat  # in the table's own caption, on stdout with the numbers
    assert "ASR (answered only)" in flat
    aggregate = orjson.loads(out.read_bytes())["aggregate"]
    assert aggregate["warning"].startswith(warning)
    assert (aggregate["left_out"], aggregate["strict_denominator"]) == (6, False)
    assert aggregate["metrics"]["overall"]["metrics"]["asr"]["value"] == 1.0

    out = tmp_path / "strict-denominator.json"
    result = _score(scenario, answers, "--strict-denominator", "--json", out)
    assert result.exit_code == 0, result.output
    assert "⚠" not in result.stdout and "answered only" not in result.stdout
    aggregate = orjson.loads(out.read_bytes())["aggregate"]
    assert (aggregate["mode"], aggregate["left_out"], aggregate["warning"]) == ("upstream", 0, None)
    overall = aggregate["metrics"]["overall"]
    assert overall["n"] == 7 and overall["metrics"]["asr"]["value"] == pytest.approx(1 / 7)
    assert "6 problem(s) have no answer: counted as failures" in result.stderr

    strict = _score(scenario, answers, "--mode", "strict")
    assert strict.exit_code == 0 and "⚠" not in strict.stdout  # strict mode's denominator is the suite


def test_answers_files_with_nothing_usable_fail(scenario, tmp_path):
    cases = {
        "empty.jsonl": (b"", "the file holds no answers"),
        "binary.jsonl": (b"\x89PNG\r\n\x1a\n\xff\xfe\x00\n", "binary.jsonl:1: not UTF-8 text"),
        "array.json": (b'[{"index": 0, "product_ids": ["x"]}]\n', "not a JSON object: a JSON array"),
        "wrong_types.jsonl": (
            b'{"index": true, "product_ids": ["x"]}\n{"index": "0", "product_ids": ["x"]}\n'
            b'{"index": 0, "sample": 1.5, "product_ids": ["x"]}\n{"index": 0, "terminated": "yes"}\n',
            "wrong_types.jsonl:1: index: Input should be a valid integer",
        ),
    }
    for name, (data, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        result = _score(scenario, path)
        assert result.exit_code == 1, (name, result.output)
        assert message in result.output and "no usable answer to score" in result.output, (
            name,
            result.output,
        )
        assert "Traceback" not in result.output
    wrong = _score(scenario, tmp_path / "wrong_types.jsonl")
    assert "4 line(s) skipped" in wrong.output

    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + orjson.dumps({"index": 0, "product_ids": ["x"]}) + b"\n")
    result = _score(scenario, bom, "--json", tmp_path)  # and a directory as the --json file
    assert result.exit_code == 2 and "cannot write" in result.output
    assert "skipped" not in result.output  # the byte-order mark did not cost line 1


def test_answers_by_a_problem_id_several_problems_share_are_rejected(scenario, tmp_path):
    _catalog_dir, _p, _a, problems, _root = scenario
    twice = [*problems[:3], problems[1]]  # problem 1 again at index 3: its id is shared
    episodes, rejects = match_answers(
        twice,
        [
            (1, Answer(problem_id=problems[1].problem_id, product_ids=["a"])),
            (2, Answer(problem_id=problems[1].problem_id, index=3, product_ids=["b"])),
            (3, Answer(problem_id=problems[0].problem_id, product_ids=["c"])),
        ],
        source="a.jsonl",
    )
    assert [(e.index, e.answer.product_ids) for e in episodes] == [(3, ["b"]), (0, ["c"])]
    assert [(r.line, r.reason) for r in rejects] == [
        (
            1,
            f"problem_id {problems[1].problem_id!r} names several problems (indexes 1, 3) in the problems "
            "file; give the answer's 'index' too",
        )
    ]
