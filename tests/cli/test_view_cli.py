"""`shoparena view RUN [PROBLEM]`: the per-problem table and one episode, over real eval runs — the
reference agent judged offline, and a miner file that crashes in the sandbox (which must get no judge
verdict, and whose view shows the miner's own frame under its own file name) — plus report.html's
episodes section and one line for every bad input."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems

runner = CliRunner()
MINERS = Path(__file__).resolve().parents[1] / "agents" / "miners"


def eval_cli(catalog: Path, problems: Path, out: Path, agent: str, *extra: str):
    args = [
        "eval",
        "--catalog",
        str(catalog),
        "--problems",
        str(problems),
        "--agent",
        agent,
        "--out",
        str(out),
    ]
    args += ["--executor", "inline", "--similarity", "lexical", "--bootstrap", "0", "--judge", "offline"]
    return runner.invoke(app, [*args, "--quiet", *extra])


def view(*args: str):
    return runner.invoke(app, ["view", *map(str, args)])


@pytest.fixture(scope="module")
def problems(small_catalog, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("view") / "problems.jsonl"
    write_problems(
        path, ProblemGenerator(small_catalog, seed=5).generate(3, buckets=("product", "shop", "voucher"))
    )
    return path


@pytest.fixture(scope="module")
def agentic_run(small_catalog_dir, problems, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("view-agentic") / "run"
    result = eval_cli(small_catalog_dir, problems, out, "reference:agentic")
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def crashed_run(small_catalog_dir, problems, tmp_path_factory, sandbox_ready) -> Path:
    """The crashing miner (it searches, then raises IndexError in its own helper) run in the sandbox."""
    root = tmp_path_factory.mktemp("view-crash")
    miner = root / "my_bot.py"
    shutil.copy(MINERS / "crashing_miner.py", miner)
    out = root / "run"
    result = eval_cli(
        small_catalog_dir, problems, out, f"file:{miner}", "--limit", "2", "--option", "timeout_s=60"
    )
    assert result.exit_code == 1, result.output  # every episode errored: the command fails, the records stay
    return out


def records(run: Path) -> list[dict]:
    return [orjson.loads(line) for line in (run / "trajectories.jsonl").read_bytes().splitlines()]


def test_the_table_has_one_plain_row_per_episode(agentic_run):
    result = view(agentic_run)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["problem", "bucket", "ok", "rule", "judge", "failing", "turns", "error"]
    recs = records(agentic_run)
    assert len(lines) == 1 + len(recs) + 1 and "│" not in result.output  # plain text when piped
    for record, line in zip(recs, lines[1:], strict=False):
        assert line.startswith(record["problem"]["problem_id"])
        assert ("yes" if record["score"]["success"] else "no") in line.split()
        assert f"{record['judge']['gate']} {record['judge']['quality']:.1f}" in line
    assert lines[-1].startswith(f"{len(recs)} episode(s):")


def test_json_rows_name_each_failing_constraint(agentic_run):
    result = view(agentic_run, "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["episodes"]
    for record, row in zip(records(agentic_run), rows, strict=True):
        score = record["score"]
        assert row["problem_id"] == record["problem"]["problem_id"] and row["success"] == score["success"]
        failed_axes = [
            a for a in ("title", "price", "service", "sku_attr", "knowledge") if (score[a] or 1) < 1
        ]
        assert [name for name in row["failing"] if name in failed_axes] == failed_axes
        # one shop is a constraint of a shop problem; a voucher problem checks it inside its budget
        assert ("shop" in row["failing"]) == (score["shop"] is False and score.get("budget") is None)
        assert not (row["success"] and row["failing"]), row  # a success fails nothing
        assert row["turns"] == sum(1 for m in record["messages"] if m["role"] == "assistant")


def test_an_episode_shows_turns_calls_recommendation_constraints_and_the_judge(agentic_run):
    record = records(agentic_run)[0]
    pid = record["problem"]["problem_id"]
    result = view(agentic_run, pid[:12])  # a unique start of the id is enough
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"episode {pid}" in out and f"query: {record['problem']['query']}" in out
    first = next(m for m in record["messages"] if m["role"] == "assistant")
    assert f"reasoning: {first['reasoning_content'].strip()}" in out
    call = record["calls"][0]
    assert f"→ [{call['origin']}] {call['name']}(" in out and "product(s):" in out
    assert f"recommendation: {', '.join(record['outcome']['recommended_product_ids'])}" in out
    assert "constraints" in out and ("ok   title" in out or "FAIL title" in out)
    assert f"judge: gate {record['judge']['gate']} · quality {record['judge']['quality']:.1f}" in out
    assert record["judge"]["cited_spans"] and "cited: “" in out
    as_json = json.loads(view(agentic_run, pid, "--json").stdout)
    assert as_json["row"]["problem_id"] == pid and as_json["judge"] == record["judge"]
    assert as_json["turns"][0]["calls"][0]["origin"] == call["origin"]


def test_a_failed_budget_is_named(agentic_run, tmp_path):
    """A voucher episode over its budget: the row and the episode say `budget`, not just `no`."""
    lines = []
    for record in records(agentic_run):
        if record["problem"]["bucket"] == "voucher":
            record["score"].update(success=False, budget=False)
        lines.append(orjson.dumps(record))
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    row = next(r for r in json.loads(view(path, "--json").stdout)["episodes"] if r["bucket"] == "voucher")
    assert "budget" in row["failing"]
    result = view(path, row["problem_id"])
    assert re.search(
        r"FAIL budget( \(items from (one shop|several shops)\))? — the total, after the voucher, "
        "must be within the budget",
        result.output,
    ), result.output


def test_a_crashed_miner_gets_no_judge_verdict_and_its_row_says_why(crashed_run):
    """The attack: a miner that crashes must not be judged (a crash's trace is no reasoning)."""
    recs = records(crashed_run)
    assert recs and all(r["outcome"]["error"] and r["judge"] is None for r in recs)
    metrics = json.loads((crashed_run / "metrics.json").read_text())
    assert metrics["judge"] is None and metrics["counts"]["errors_by_kind"] == {"agent crashed": len(recs)}
    # eval's own summary of the crash names the miner's line, not the harness's runner frame
    example = metrics["error_examples"]["agent crashed"]
    assert example.endswith("(at my_bot.py:7 in parse_budget)") and "_shoparena_runner" not in example
    result = view(crashed_run)
    assert result.exit_code == 0, result.output
    for line in result.output.splitlines()[1:-1]:
        assert "agent_main failed: IndexError" in line and "(at my_bot.py:7 in parse_budget)" in line
        assert " – " in line and "agent crashed" in line  # no judge; failing says how it ended
    # `shoparena judge` over the same records judges none of them and counts no judge failure
    judged = runner.invoke(
        app,
        [
            "judge",
            "--input",
            str(crashed_run / "trajectories.jsonl"),
            "--out",
            str(crashed_run.parent / "j.jsonl"),
            "--json",
        ],
    )
    report = json.loads(judged.stdout)
    assert report["summary"]["judged"] == 0 and report["judge_failures"] == 0


def test_a_crashed_episode_shows_the_miners_own_frame(crashed_run):
    pid = records(crashed_run)[0]["problem"]["problem_id"]
    out = view(crashed_run, pid).output
    assert "judge: not judged: the episode failed (agent crashed)" in out
    mine = out[out.index("your code (my_bot.py):") :]
    assert 'File "my_bot.py", line 7, in parse_budget' in mine
    assert 'File "my_bot.py", line 12, in agent_main' in mine
    assert "IndexError: list index out of range" in mine
    assert "_shoparena_runner" not in mine  # the harness's frame is not the miner's
    assert "→ [code] find_product(" in out  # what it did before it crashed
    assert "FAIL finished (agent crashed: no answer counted, nothing checked)" in out


def test_report_html_lists_the_episodes_with_links_to_each(agentic_run, crashed_run):
    page = (agentic_run / "report.html").read_text()
    assert "<h2 id='episodes'>Episodes</h2>" in page
    for record in records(agentic_run):
        pid = record["problem"]["problem_id"]
        anchor = f"ep-{pid}"
        assert f'<a href="#{anchor}">{pid}</a>' in page and f"id='{anchor}'" in page
    crashed = (crashed_run / "report.html").read_text()
    assert "IndexError" in crashed and "not judged: the episode failed" in crashed
    assert "File &quot;my_bot.py&quot;, line 7, in parse_budget" in crashed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("{tmp}/nowhere",), "{tmp}/nowhere: no such run directory or trajectories file"),
        (("{tmp}/empty",), "{tmp}/empty holds no trajectories.jsonl: not an eval run directory"),
        (("{tmp}",), "holds no trajectories.jsonl; the runs under it: {tmp}/runs/a"),
        (("{tmp}/blank.jsonl",), "{tmp}/blank.jsonl holds no trajectory record"),
        (("{tmp}/garbage.jsonl",), "{tmp}/garbage.jsonl:1: not JSON"),
        (
            ("{run}", "no-such-problem"),
            "no problem 'no-such-problem' in {run}/trajectories.jsonl; `shoparena view",
        ),
        (("{run}", "{near}"), "no problem '{near}' in {run}/trajectories.jsonl; did you mean {pid}"),
        (("{run}", "{pid}", "--sample", "4"), "problem '{pid}' has no sample 4 (it has [0])"),
        (("{run}", "--sample", "-1"), "--sample: Input should be greater than or equal to 0 (got -1)"),
    ],
)
def test_bad_inputs_get_one_line(agentic_run, tmp_path, args, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "runs" / "a").mkdir(parents=True)
    shutil.copy(agentic_run / "trajectories.jsonl", tmp_path / "runs" / "a" / "trajectories.jsonl")
    (tmp_path / "blank.jsonl").write_text("\n")
    (tmp_path / "garbage.jsonl").write_bytes(b"\x00\x01 not json\n{}\n")
    pid = records(agentic_run)[0]["problem"]["problem_id"]
    near = pid[:-3] + "zzz"
    fill = {"tmp": tmp_path, "run": agentic_run, "pid": pid, "near": near}
    result = view(*(arg.format(**fill) for arg in args))
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "error: " + message.format(**fill) in text or message.format(**fill) in text, text
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) <= 3
