"""The build end to end on real reference-agent runs: conservation, axis split, dedup, leak-guarded split,
never-touch suites, manifest hashes and a TRL-shaped export that reads back."""

from __future__ import annotations

import hashlib

import orjson
import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.corpus.axis import axis_by_structure, classify_axis
from shoparena.corpus.export import read_parquet_rows
from shoparena.corpus.models import DEDUP_RANKED_OUT, NEVER_TOUCH, RejectedRow
from shoparena.corpus.normalise import normalise_record
from shoparena.corpus.pipeline import CorpusConfig, build_corpus
from shoparena.corpus.split import LeakError, check_disjoint
from shoparena.corpus.trace import trace_calls
from tests.corpus.conftest import DISTINCT_QUERIES, openai_row, write_jsonl
from tests.jsonl import read_jsonl


def _conserved(result) -> None:
    c = result.counts
    assert c["inputs"] == c["train"] + c["eval"] + c["rejected"] + c["axis_b"] + c["deduplicated"]


def _rejects_read_back(out) -> set[str]:
    """rejects.jsonl's contract is `RejectedRow`: every line reads back as one, and writes back to the
    same bytes. Returns the reasons seen."""
    reasons = set()
    for line in (out / "rejects.jsonl").read_bytes().splitlines():
        reject = RejectedRow.model_validate_json(line)
        assert reject.to_json() == line
        reasons.add(reject.reason)
    return reasons


@pytest.fixture(scope="module")
def built(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("built") / "corpus"
    config = CorpusConfig(
        inputs=[runs.agentic, runs.pipeline],
        out=out,
        catalog=runs.catalog,
        min_quality=0.1,
        per_problem=1,
        eval_size=4,
        problems=[runs.problems],
        seed=5,
    )
    return build_corpus(config)


def test_counts_axis_and_files(built, runs):
    _conserved(built)
    c = built.counts
    n_agentic, n_pipeline = len(runs.records(runs.agentic)), len(runs.records(runs.pipeline))
    assert c["inputs"] == n_agentic + n_pipeline
    axis_b = read_jsonl(built.out / "axis_b.jsonl")
    assert len(axis_b) + built.reasons.get("too_long", 0) >= n_pipeline - 1
    assert {r["metadata"]["axis"] for r in axis_b} == {"B"}
    assert all(r["metadata"]["agent_id"].startswith("reference:pipeline") for r in axis_b)
    kept = read_jsonl(built.out / "train.jsonl") + read_jsonl(built.out / "eval.jsonl")
    assert kept and all(r["metadata"]["axis"] == "A" for r in kept)
    assert len({r["metadata"]["problem_id"] for r in kept}) == len(kept)  # per_problem=1
    manifest = orjson.loads((built.out / "manifest.json").read_bytes())
    for name, info in manifest["files"].items():
        assert hashlib.sha256((built.out / name).read_bytes()).hexdigest() == info["sha256"]
    report = (built.out / "report.md").read_text()
    assert "conservation checked" in report and (built.out / "funnel.png").stat().st_size > 1000
    assert _rejects_read_back(built.out) == set(built.reasons)


def test_split_disjoint_by_problem_and_cluster(built):
    train = read_jsonl(built.out / "train.jsonl")
    eval_ = read_jsonl(built.out / "eval.jsonl")
    assert eval_, "an eval set was drawn"
    pairs = lambda rows: {(r["metadata"]["problem_id"], r["metadata"]["leak_cluster_id"]) for r in rows}  # noqa: E731
    check_disjoint(pairs(train), pairs(eval_))
    # paraphrase variants (two surface forms per task share a leak cluster) never straddle
    assert not {c for _, c in pairs(train)} & {c for _, c in pairs(eval_)}
    assert {r["metadata"]["split"] for r in train} == {"train"}


def test_trl_export_reads_back(built):
    rows = read_jsonl(built.out / "train.jsonl")
    assert set(rows[0]) == {"messages", "tools", "metadata"}
    calls = [c for r in rows for m in r["messages"] for c in m.get("tool_calls") or []]
    assert calls and all(isinstance(c["function"]["arguments"], dict) for c in calls)
    assert all(t["type"] == "function" and "parameters" in t["function"] for r in rows for t in r["tools"])
    assert read_parquet_rows(built.out / "train.parquet") == rows
    import pyarrow.parquet as pq

    assert pq.read_schema(built.out / "train.parquet").names == ["messages", "tools", "metadata"]


def test_axis_by_structure_matches_origin_on_reference_runs(runs):
    """The structural rule, measured on labelled traces with their origin stripped."""
    labelled = [(r, "A") for r in runs.records(runs.agentic)] + [
        (r, "B") for r in runs.records(runs.pipeline)
    ]
    correct = 0
    for record, label in labelled:
        row = normalise_record(record, "x")
        assert classify_axis(row) == (label, "origin")
        correct += axis_by_structure(trace_calls(row.messages)) == label
    assert correct / len(labelled) >= 0.95


def test_axis_from_row_level_origin():
    assert classify_axis(normalise_record(openai_row(origin="code"), "x")) == ("B", "origin")
    assert classify_axis(normalise_record(openai_row(origin="llm"), "x")) == ("A", "origin")
    bare = openai_row(extra_calls=3)
    for m in bare["messages"]:
        m.pop("reasoning_content", None)
    assert classify_axis(normalise_record(bare, "x")) == ("B", "structure")


def test_planted_paraphrases_never_straddle(tmp_path):
    """Rows without problem ids or clusters: paraphrases cluster by MinHash on the query text."""
    base = DISTINCT_QUERIES
    rows = []
    for i, text in enumerate(base * 4):
        variant = i // len(base)
        query = [text, f"please find {text}", f"i want {text} please", f"looking for a {text}"][variant]
        rows.append(openai_row(query=query, problem_id=None, bucket=["product", "shop"][i % 2]))
    for seed in range(6):
        out = tmp_path / f"out{seed}"
        result = build_corpus(
            CorpusConfig(
                inputs=[write_jsonl(tmp_path / "in.jsonl", rows)],
                out=out,
                eval_size=8,
                seed=seed,
                parquet=False,
            )
        )
        _conserved(result)
        train = read_jsonl(out / "train.jsonl")
        eval_ = read_jsonl(out / "eval.jsonl")
        assert eval_ and train

        def norm(rows):
            return {
                " ".join(
                    w
                    for w in r["metadata"]["query"].split()
                    if w not in ("please", "find", "i", "want", "looking", "for", "a")
                )
                for r in rows
            }

        assert not norm(train) & norm(eval_)
        assert result.counts["clusters"] == len(base)


def test_never_touch_problems_stay_out(runs, tmp_path):
    result = build_corpus(
        CorpusConfig(
            inputs=[runs.agentic],
            out=tmp_path / "out",
            min_quality=0.1,
            never_touch=[runs.problems],
            parquet=False,
            report=False,
        )
    )
    _conserved(result)
    assert result.counts["train"] == result.counts["eval"] == 0
    assert result.reasons["never_touch"] > 0
    assert NEVER_TOUCH in _rejects_read_back(tmp_path / "out")


def test_never_touch_by_paraphrased_query(tmp_path):
    from shoparena.problems.io import write_problems
    from shoparena.problems.models import Problem

    suite = tmp_path / "suite.jsonl"
    write_problems(
        suite,
        [
            Problem(
                query="red ceramic coffee mug with lid dishwasher safe 350ml",
                reward={"product_id": "1", "title": ["mug"]},
            )
        ],
    )
    rows = [
        openai_row(
            query="please find red ceramic coffee mug with lid dishwasher safe 350ml", problem_id=None
        ),
        openai_row(query="bamboo cutting board large with juice groove", problem_id=None),
    ]
    result = build_corpus(
        CorpusConfig(
            inputs=[write_jsonl(tmp_path / "in.jsonl", rows)],
            out=tmp_path / "o",
            never_touch=[suite],
            eval_size=0,
        )
    )
    assert result.reasons == {"never_touch": 1} and result.counts["train"] == 1


def test_leak_check_fails_loudly():
    with pytest.raises(LeakError, match="problem ids"):
        check_disjoint([("p1", "c1")], [("p1", "c2")])
    with pytest.raises(LeakError, match="leak clusters"):
        check_disjoint([("p1", "c1")], [("p2", "c1")])


def test_dedup_keeps_the_best_and_diverse(tmp_path):
    shallow = openai_row(extra_calls=1, problem_id="same")
    deep_a = openai_row(extra_calls=3, problem_id="same")
    deep_a2 = openai_row(extra_calls=3, problem_id="same")
    deep_a2["messages"][1]["reasoning_content"] = "another wording, same shape"
    deep_b = openai_row(extra_calls=3, problem_id="same")  # same key, different shape: a parallel view
    deep_b["messages"][1]["tool_calls"].append(
        {
            "id": "v1",
            "type": "function",
            "function": {"name": "view_product_information", "arguments": '{"product_ids": "P9"}'},
        }
    )
    deep_b["messages"].insert(3, {"role": "tool", "tool_call_id": "v1", "content": "[]"})
    source = write_jsonl(tmp_path / "in.jsonl", [shallow, deep_a, deep_a2, deep_b])
    result = build_corpus(CorpusConfig(inputs=[source], out=tmp_path / "o", per_problem=2, eval_size=0))
    _conserved(result)
    assert result.counts["deduplicated"] == 2
    kept = read_jsonl(tmp_path / "o" / "train.jsonl")
    assert sorted(r["metadata"]["signals"]["shape"] for r in kept) == ["FFFRT", "FVFFRT"]
    rejects = read_jsonl(tmp_path / "o" / "rejects.jsonl")
    assert _rejects_read_back(tmp_path / "o") == {DEDUP_RANKED_OUT}
    assert all(r["row"]["metadata"]["signals"] is not None for r in rejects)


def test_cli_and_two_workers(runs, tmp_path):
    broken = tmp_path / "mixed.jsonl"
    broken.write_bytes(
        (runs.agentic / "trajectories.jsonl").read_bytes() + b"{oops\n" + orjson.dumps({"x": 1}) + b"\n"
    )
    result = CliRunner().invoke(
        app,
        [
            "corpus",
            "build",
            "--input",
            str(broken),
            "--input",
            str(runs.pipeline),
            "--out",
            str(tmp_path / "c"),
            "--min-quality",
            "0.1",
            "--workers",
            "2",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    manifest = orjson.loads(result.stdout)
    assert manifest["reasons"]["unreadable"] == 1 and manifest["reasons"]["unknown_shape"] == 1
    c = manifest["counts"]
    assert c["inputs"] == c["train"] + c["eval"] + c["rejected"] + c["axis_b"] + c["deduplicated"]
    missing = CliRunner().invoke(
        app, ["corpus", "build", "--input", str(tmp_path / "nope"), "--out", str(tmp_path / "d")]
    )
    assert missing.exit_code == 2 and "does not exist" in missing.output


def _broken_trajectories(record: dict) -> list[dict]:
    """One canonical record broken in each place the lazy reader checks by hand."""
    messages_not_list = {**record, "messages": {"role": "user"}}
    tool_not_object = {**record, "tools": [*record["tools"], "find_product"]}
    call_without_origin = {
        **record,
        "calls": [{k: v for k, v in record["calls"][0].items() if k != "origin"}],
    }
    bad_message = {**record, "messages": [record["messages"][0], 7]}
    bad_judge = {**record, "judge": {**record["judge"], "quality": 0.42}}
    no_problem = {k: v for k, v in record.items() if k != "problem"}
    return [messages_not_list, tool_not_object, call_without_origin, bad_message, bad_judge, no_problem]


def test_lazily_read_records_are_judged_like_parsed_ones(runs, tmp_path, monkeypatch):
    """Canonical records take a lazy reading path in the build; its rejects (reason and detail) must be
    those of normalising the fully parsed record, and one or two workers (several chunks each) must
    write byte-identical outputs."""
    from shoparena.corpus import rowstage

    monkeypatch.setattr(rowstage, "CHUNK", 5)
    record = runs.records(runs.agentic)[0]
    broken = _broken_trajectories(record)
    source = tmp_path / "mixed.jsonl"
    source.write_bytes(
        (runs.agentic / "trajectories.jsonl").read_bytes()
        + b"".join(orjson.dumps(b) + b"\n" for b in broken)
        + (runs.pipeline / "trajectories.jsonl").read_bytes()
    )
    outs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        build_corpus(CorpusConfig(inputs=[source], out=out, min_quality=0.1, workers=workers, report=False))
        outs.append(out)
    for name in ("train.jsonl", "eval.jsonl", "axis_b.jsonl", "rejects.jsonl", "manifest.json"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    _rejects_read_back(outs[1])
    rejects = {r["source"]: r for r in read_jsonl(outs[1] / "rejects.jsonl")}
    first = len(runs.records(runs.agentic)) + 1
    for line, record in enumerate(broken, start=first):
        with pytest.raises(ValueError) as expected:
            normalise_record(record, f"mixed.jsonl:{line}")
        got = rejects[f"mixed.jsonl:{line}"]
        assert (got["reason"], got["detail"]) == (expected.value.reason, expected.value.detail)
        assert got["raw"] == record


def test_require_success_drops_failed_episodes_and_nothing_else(runs, tmp_path):
    """A failed episode's row (its record says so) leaves as `outcome_failed` only when asked."""
    records = runs.records(runs.agentic)
    failed_ids = {r["record_id"] for r in records[::3]}
    flipped = [
        {**r, "score": {**r["score"], "success": False}} if r["record_id"] in failed_ids else r
        for r in records
    ]
    source = write_jsonl(tmp_path / "in.jsonl", flipped)
    failed_ids = {r["record_id"] for r in flipped if r["score"]["success"] is False}  # the run's own too

    def build(out, **options):
        return build_corpus(
            CorpusConfig(
                inputs=[source], out=tmp_path / out, min_quality=0.1, parquet=False, report=False, **options
            )
        )

    plain = build("plain")
    strict = build("strict", require_success=True)
    _conserved(strict)
    assert "outcome_failed" not in plain.reasons
    assert strict.reasons["outcome_failed"] == len(failed_ids) > 0
    kept = [row for name in ("train.jsonl", "eval.jsonl") for row in read_jsonl(tmp_path / "strict" / name)]
    assert kept and not {row["metadata"]["record_id"] for row in kept} & failed_ids
    rejects = [
        RejectedRow.model_validate_json(line)
        for line in (tmp_path / "strict" / "rejects.jsonl").read_bytes().splitlines()
    ]
    assert {r.row["metadata"]["record_id"] for r in rejects if r.reason == "outcome_failed"} == failed_ids
