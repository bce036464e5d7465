"""`miner try` / `arena.tryout`: a miner file run the way the arena runs it — admission, the sandboxed
strict evaluation, the judge and the ledger's score — before it is submitted; and `miner new`."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from shoparena.admission import check_submission
from shoparena.arena.canonical import result_scores
from shoparena.arena.models import EvaluationSettings
from shoparena.arena.participants.tryout import (
    TryoutError,
    TryoutSettings,
    arena_settings,
    try_agent,
)
from shoparena.cli import app
from shoparena.cli.miner_try_cmd import EXIT_BELOW_THRESHOLD, TEMPLATES
from shoparena.season.roster import miner_source
from tests.arena.arena_helpers import make_arena

MINERS = Path(__file__).resolve().parents[2] / "agents" / "miners"
FAST = EvaluationSettings(similarity="lexical", timeout_s=60)
runner = CliRunner()


@pytest.fixture
def settings(tmp_path, small_catalog_dir, problems_file) -> TryoutSettings:
    return TryoutSettings(
        out=tmp_path / "try", catalog=small_catalog_dir, problems=problems_file, limit=3, evaluation=FAST
    )


def season_miner(name: str, tmp_path):
    path = tmp_path / f"{name}.py"
    path.write_text(miner_source(name), encoding="utf-8")
    return path


def test_an_admitted_file_is_evaluated_scored_and_judged_as_the_arena_would(tmp_path, settings):
    agent = season_miner("keyword_verify", tmp_path)
    report = try_agent(agent, settings)
    assert report.admitted and report.violations == []
    assert len(report.outcomes) == 3
    assert all(o.judge_quality is not None and o.record_id for o in report.outcomes)
    assert report.scores == result_scores(report.outcomes)
    assert report.qualifies == ((report.scores.final_score or 0) >= settings.qualify_threshold)
    # the run holds the bytes it tried, the records, and is named after the code
    code_dir = report.run_dir.parent
    assert code_dir.name == report.code_sha256[:12]
    assert (code_dir / "agent.py").read_bytes() == agent.read_bytes()
    lines = (report.run_dir / "trajectories.jsonl").read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines]
    assert [r["record_id"] for r in records] == [o.record_id for o in report.outcomes]
    run = orjson.loads((report.run_dir / "run.json").read_bytes())
    assert (run["mode"], run["agent_options"]["sandbox"]) == ("strict", "bwrap")


def test_the_run_and_its_report_say_where_the_problems_came_from(tmp_path, settings, problems_file):
    """The tryout runs a list (reordered, cut to --limit), yet its run.json and report.html name the
    problems file and the cut, not a placeholder."""
    from shoparena.report import write_run_reports

    report = try_agent(season_miner("keyword_verify", tmp_path), settings)
    source = orjson.loads((report.run_dir / "run.json").read_bytes())["problems_source"]
    assert source == f"{problems_file.resolve()} (the first 3)"
    _, html_path = write_run_reports(report.run_dir)
    page = html_path.read_text()
    assert str(problems_file.resolve()) in page and "in-memory" not in page


def test_the_same_bytes_resume_and_changed_bytes_make_a_new_run(tmp_path, settings):
    agent = season_miner("keyword_verify", tmp_path)
    first = try_agent(agent, settings)
    again = try_agent(agent, settings)
    assert again.run_dir == first.run_dir and again.outcomes == first.outcomes
    wider = try_agent(agent, settings.model_copy(update={"limit": 4}))
    assert wider.run_dir != first.run_dir and len(wider.outcomes) == 4
    agent.write_text(agent.read_text() + "\n# v2\n")
    changed = try_agent(agent, settings)
    assert changed.code_sha256 != first.code_sha256 and changed.run_dir.parent != first.run_dir.parent


def test_a_rejected_file_never_runs(tmp_path, settings):
    agent = tmp_path / "bad.py"
    agent.write_text("import socket\n\ndef agent_main(problem_data):\n    return socket.gethostname()\n")
    report = try_agent(agent, settings)
    assert not report.admitted and not report.qualifies
    assert [v.rule for v in report.violations] == [v.rule for v in check_submission(agent.read_bytes())]
    assert report.run_dir is None and not settings.out.exists()


def test_a_file_that_hangs_is_killed_at_the_arenas_timeout_and_fails(tmp_path, settings):
    agent = season_miner("sleeper", tmp_path)
    quick = settings.model_copy(
        update={"limit": 1, "evaluation": EvaluationSettings(similarity="lexical", timeout_s=3)}
    )
    report = try_agent(agent, quick)
    assert report.admitted
    [outcome] = report.outcomes
    assert not outcome.success and outcome.error and "timeout" in outcome.error.lower()
    assert outcome.judge_quality is None and outcome.judge_gate is None  # a timeout is not judged
    assert report.scores.asr == 0 and not report.qualifies


def test_an_arena_directory_gives_its_settings_threshold_and_bank(tmp_path, small_catalog_dir, problems_file):
    make_arena(
        tmp_path / "arena",
        small_catalog_dir,
        problems_file,
        {},
        evaluation=EvaluationSettings(similarity="lexical", timeout_s=42),
    ).close()
    settings = arena_settings(tmp_path / "arena", TryoutSettings(out=tmp_path / "try"))
    assert settings.evaluation.timeout_s == 42 and settings.evaluation.similarity == "lexical"
    assert settings.problems is not None and settings.problems.read_bytes() == problems_file.read_bytes()
    own = arena_settings(
        tmp_path / "arena", TryoutSettings(catalog=small_catalog_dir, problems=tmp_path / "mine.jsonl")
    )
    assert own.problems == tmp_path / "mine.jsonl"


def test_bad_inputs_are_refused_by_name(tmp_path, small_catalog_dir, problems_file):
    agent = season_miner("keyword_verify", tmp_path)
    with pytest.raises(TryoutError, match="no such file"):
        try_agent(tmp_path / "missing.py", TryoutSettings(out=tmp_path / "t"))
    with pytest.raises(TryoutError, match="needs the --catalog"):
        try_agent(agent, TryoutSettings(out=tmp_path / "t", problems=problems_file))
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"query": 3}\n')
    with pytest.raises(TryoutError, match=r"broken\.jsonl"):
        try_agent(agent, TryoutSettings(out=tmp_path / "t", catalog=small_catalog_dir, problems=broken))


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_miner_new_writes_an_admissible_file_and_never_overwrites(tmp_path, template):
    agent = tmp_path / "agent.py"
    result = runner.invoke(app, ["miner", "new", str(agent), "--template", template])
    assert result.exit_code == 0, result.output
    assert check_submission(agent.read_bytes()) == []
    agent.write_text("mine")
    result = runner.invoke(app, ["miner", "new", str(agent)])
    assert result.exit_code == 2 and "--force" in result.output and agent.read_text() == "mine"


def test_miner_try_exit_codes_and_json(tmp_path, small_catalog_dir, problems_file):
    common = [
        "--catalog",
        str(small_catalog_dir),
        "--problems",
        str(problems_file),
        "--similarity",
        "lexical",
    ]
    good = season_miner("keyword_verify", tmp_path)
    result = runner.invoke(
        app, ["miner", "try", str(good), "--out", str(tmp_path / "t"), "--limit", "2", *common]
    )
    assert result.exit_code in (0, EXIT_BELOW_THRESHOLD), result.output
    assert "qualify" in result.output and "final score" in result.output
    assert "first gate (reasoned)" in result.output  # a code-only file is told why its q is 0.1
    crashing = season_miner("crashing", tmp_path)
    result = runner.invoke(
        app, ["miner", "try", str(crashing), "--out", str(tmp_path / "t"), "--limit", "1", "--json", *common]
    )
    assert result.exit_code == EXIT_BELOW_THRESHOLD, result.output
    answer = orjson.loads(result.stdout)
    assert answer["admitted"] and not answer["qualifies"] and answer["scores"]["asr"] == 0
    assert answer["outcomes"][0]["error"]
    bad = tmp_path / "bad.py"
    bad.write_text("import subprocess\n\ndef agent_main(problem_data):\n    return []\n")
    result = runner.invoke(app, ["miner", "try", str(bad), "--out", str(tmp_path / "t"), *common])
    assert result.exit_code == 1 and "security.banned_import" in result.output
    result = runner.invoke(app, ["miner", "try", str(good), "--sandbox", "jail", *common])
    assert result.exit_code == 2 and "sandbox" in result.output


def test_miner_try_on_a_crash_shows_the_miners_own_frame_and_advice_about_the_crash(
    tmp_path, small_catalog_dir, problems_file
):
    """The file raises in its own helper: the output shows that frame under the file's own name (not
    the sandbox copy's agent.py, not the harness's runner frame), and advises on the crash, not on the
    judge's gates (a crashed problem is not judged)."""
    agent = tmp_path / "my_bot.py"
    agent.write_bytes((MINERS / "crashing_miner.py").read_bytes())
    args = [
        "miner",
        "try",
        str(agent),
        "--out",
        str(tmp_path / "t"),
        "--limit",
        "1",
        "--similarity",
        "lexical",
    ]
    result = runner.invoke(
        app,
        [*args, "--catalog", str(small_catalog_dir), "--problems", str(problems_file)],
        env={"COLUMNS": "300"},
    )
    assert result.exit_code == EXIT_BELOW_THRESHOLD, result.output
    out = result.output
    assert f"(at {agent}:7 in parse_budget)" in out  # the table's row: the file as the user named it
    assert "1 of 1 problem(s) ended in an error (agent crashed on 1): each scores 0 and is not judged" in out
    frame = out[out.index(f"where {agent} raised") :]
    assert f'File "{agent}", line 7, in parse_budget' in frame
    assert (
        f'File "{agent}", line 12, in agent_main' in frame and "IndexError: list index out of range" in frame
    )
    assert "_shoparena_runner" not in out and "agent.py" not in out.replace("my_bot.py", "")
    assert "reasoned" not in out and "judge q none judged" in out
    page = next((tmp_path / "t").glob("*/run-*/report.html")).read_text()
    assert f"File &quot;{agent}&quot;, line 7" in page
    # `shoparena view` of the run, later and without the file at hand, names it as the user did too
    run_dir = next((tmp_path / "t").glob("*/run-*"))
    table = runner.invoke(app, ["view", str(run_dir)], env={"COLUMNS": "300"})
    assert table.exit_code == 0 and f"(at {agent}:7 in parse_budget)" in table.output, table.output
    problem = orjson.loads((run_dir / "trajectories.jsonl").read_bytes().splitlines()[0])["problem"]
    episode = runner.invoke(app, ["view", str(run_dir), problem["problem_id"]], env={"COLUMNS": "300"})
    assert episode.exit_code == 0, episode.output
    assert f"your code ({agent})" in episode.output
    assert f'File "{agent}", line 7, in parse_budget' in episode.output
    assert f"· {agent} (run as " in episode.output.splitlines()[0]


def test_a_failed_voucher_row_names_the_failing_constraint():
    from rich.console import Console

    from shoparena.arena.models import ProblemResultIn
    from shoparena.arena.participants.tryout import TryoutReport
    from shoparena.cli.miner_try_cmd import outcome_table
    from shoparena.report.episodes import EpisodeRow

    outcome = ProblemResultIn(
        problem_id="voucher-1", bucket="voucher", success=False, rule_score=1.0, judge_quality=0.9,
        judge_gate="passed", end_reason="terminated with status success", steps_used=6,
    )  # fmt: skip
    row = EpisodeRow(problem_id="voucher-1", bucket="voucher", success=False, failing=["budget"], anchor="a")
    report = TryoutReport(
        agent="a.py", code_sha256="0" * 64, violations=[], outcomes=[outcome], qualify_threshold=0.2,
        similarity="lexical",
    )  # fmt: skip
    console = Console(width=200, record=True)
    console.print(outcome_table(report, {"voucher-1": row}))
    assert "failed budget" in console.export_text()
