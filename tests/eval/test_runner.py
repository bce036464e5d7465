"""The eval runner end to end on a real generated catalogue and real generated problems.

The agents here are test doubles (named so): they drive real harness episodes through `Episode.call`,
but their answers are scripted, so success counts — and therefore pass@k — are known in advance.
They are registered as an agent kind, which the runner hands to its worker processes.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from typer.testing import CliRunner

from shoparena.agents.base import AGENT_KINDS, Agent, AgentRun, ProblemView, RunnerError
from shoparena.cli import app
from shoparena.eval.config import EvalConfig, WorkerConfig
from shoparena.eval.episodes import RETRYABLE_ERRORS, EpisodeTask, error_kind, record_answer
from shoparena.eval.executors import TIMEOUT_ERROR, ProcessExecutor, make_executor
from shoparena.eval.run_dir import METRICS_FILE, RUN_FILE, TRAJECTORIES_FILE, read_trajectories
from shoparena.eval.runner import run_eval
from shoparena.harness.episode import Episode
from shoparena.problems.generator import ProblemGenerator
from shoparena.problems.io import write_problems
from shoparena.records.trajectory import TokenUsage, TrajectoryRecord
from shoparena.records.verdict import JudgeVerdict
from shoparena.scoring.metrics import pass_at_k

cli = CliRunner()
DOUBLE_KIND = "double"
OUTAGE_ERROR = (
    "http://127.0.0.1:9/v1/chat/completions: gave up after 1 attempts; last error: connection failed: "
    "[Errno 111] Connection refused"
)
"""What `ChatCompletionsClient` reports for an endpoint that refuses connections (the chat loop
records it as the episode's error)."""


class ScriptedDoubleAgent(Agent):
    """Test double: searches the query, then recommends either the gold ids it was told (scripted
    success) or, after viewing the top hit, an id the catalogue lacks (scripted failure), then
    terminates — all through real tool calls.

    `plan[problem_id]` is a list of booleans: the i-th time this agent sees a problem it answers with
    the gold ids iff plan[i] (inline runs see samples in order). `sleep_s[problem_id]` makes it slow.
    `outage_on` lists problems whose model endpoint is down while the file `outage_flag` exists: the
    episode then ends with the error the OpenAI-compatible client reports for a refused connection.
    """

    kind = DOUBLE_KIND

    def __init__(
        self,
        name: str,
        gold: dict[str, list[str]] | None = None,
        plan: dict[str, list[bool]] | None = None,
        always_gold: bool = False,
        sleep_s: dict[str, float] | None = None,
        block_signals: bool = False,
        crash_on: list[str] | None = None,
        outage_on: list[str] | None = None,
        outage_flag: str | None = None,
        api_key: str | None = None,
    ):
        super().__init__(name, version="1.0")
        self.gold = gold or {}
        self.plan = plan or {}
        self.always_gold = always_gold
        self.sleep_s = sleep_s or {}
        self.block_signals = block_signals
        self.crash_on = set(crash_on or [])
        self.outage_on = set(outage_on or [])
        self.outage_flag = Path(outage_flag) if outage_flag else None
        self.seen: dict[str, int] = {}
        self.next_episode: tuple[str, int] | None = None

    def begin_episode(self, problem_id: str, sample: int) -> None:
        self.next_episode = (problem_id, sample)

    def run(self, episode: Episode, view: ProblemView) -> AgentRun:
        told, self.next_episode = self.next_episode, None
        pid = view.problem_id
        count = self.seen.get(pid, 0)
        self.seen[pid] = count + 1
        usage = TokenUsage()
        usage.add(prompt=len(view.query), completion=5)
        hits = episode.call("find_product", {"q": view.query}, origin="code")
        if pid in self.crash_on:
            raise RuntimeError("scripted crash")
        if pid in self.outage_on and self.outage_flag is not None and self.outage_flag.exists():
            return AgentRun(usage=usage, error=OUTAGE_ERROR)
        if pid in self.sleep_s:
            if self.block_signals:  # where an alarm cannot reach: only the parent's kill ends this
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(self.sleep_s[pid])
        plan = self.plan.get(pid)
        use_gold = self.always_gold or (plan is not None and count < len(plan) and plan[count])
        found = hits.result if hits.ok and isinstance(hits.result, list) else []
        # scripted failure: an id the catalogue lacks (a real top hit sometimes satisfies the task)
        ids = self.gold[pid] if use_gold and pid in self.gold else ["no-such-product"]
        if found and not use_gold:
            episode.call(
                "view_product_information", {"product_ids": str(found[0]["product_id"])}, origin="code"
            )
        episode.call("recommend_product", {"product_ids": ",".join(ids)}, origin="code")
        episode.call("terminate", {"status": "success"}, origin="code")
        return AgentRun(usage=usage, notes=[f"begin_episode{told}"])


def make_double(target: str, **options) -> ScriptedDoubleAgent:
    return ScriptedDoubleAgent(target, **options)


@pytest.fixture(autouse=True)
def run_double_kind(monkeypatch):
    monkeypatch.setitem(AGENT_KINDS, DOUBLE_KIND, f"{__name__}:make_double")


@pytest.fixture(scope="module")
def run_suite(small_catalog, tmp_path_factory):
    """12 generated problems (product, shop, voucher) written as a problems file, with their gold ids."""
    problems = ProblemGenerator(small_catalog, seed=3).generate(12, buckets=("product", "shop", "voucher"))
    path = tmp_path_factory.mktemp("suite") / "problems.jsonl"
    write_problems(path, problems)
    gold = {p.problem_id: [spec.product_id for spec in p.rewards] for p in problems}
    return path, problems, gold


def eval_config(catalog, problems, agent: str, out, **fields) -> EvalConfig:
    """These tests' config: inline, lexical similarity and no bootstrap unless a test says otherwise."""
    defaults = {"executor": "inline", "similarity": "lexical", "bootstrap": 0}
    return EvalConfig(catalog=catalog, problems=problems, agent=agent, out=out, **{**defaults, **fields})


def _strip_volatile(record: TrajectoryRecord) -> dict:
    data = record.model_dump(mode="json")
    for key in ("record_id", "run_id", "timings"):
        data.pop(key)
    for call in data["calls"]:
        call.pop("latency_s")
    return data


def _records(run_dir) -> list[TrajectoryRecord]:
    return read_trajectories(run_dir / TRAJECTORIES_FILE).records


def _asr(run_dir) -> float:
    return orjson.loads((run_dir / METRICS_FILE).read_bytes())["headline"]["asr"]["value"]


# -- records --------------------------------------------------------------------------------------


def test_every_episode_becomes_one_full_record(small_catalog_dir, run_suite, tmp_path):
    path, problems, gold = run_suite
    half = {pid: ids for i, (pid, ids) in enumerate(gold.items()) if i % 2 == 0}
    result = run_eval(
        eval_config(
            small_catalog_dir,
            path,
            "double:half",
            tmp_path / "run",
            options={"gold": half, "always_gold": True},
            bootstrap=50,
        )
    )
    records = _records(tmp_path / "run")
    assert len(records) == len(problems) == result.episodes_run
    assert {r.problem.problem_id for r in records} == set(gold)
    for record in records:
        assert record.agent.agent_id == "double:half" and record.agent.version == "1.0"
        assert record.agent.spec == "double:half"
        assert record.problem.index == next(
            i for i, p in enumerate(problems) if p.problem_id == record.key[0]
        )
        names = [c.name for c in record.calls]
        assert names[0] == "find_product" and names[-2:] == ["recommend_product", "terminate"]
        assert all(c.origin == "code" for c in record.calls)
        assert record.messages[0] == {"role": "user", "content": problems[record.problem.index].query}
        assert any(m.get("tool_calls") for m in record.messages)
        assert record.outcome.terminated == "success" and record.outcome.steps_used == len(names)
        assert record.usage.completion_tokens == 5
        assert record.scoring_pipeline_version == "rules-1" and record.scoring_mode == "upstream"
        assert record.score.success == (record.key[0] in half)
        assert record.timings.wall_s >= record.timings.tool_s > 0
    metrics = result.metrics
    assert metrics["headline"]["asr"]["value"] == pytest.approx(len(half) / len(problems))
    assert metrics["counts"]["episodes"] == len(problems) and metrics["counts"]["missing_episodes"] == 0
    run = orjson.loads((tmp_path / "run" / RUN_FILE).read_bytes())
    assert run["status"] == "complete" and run["agent"]["agent_id"] == "double:half"


def test_api_keys_never_reach_run_json(small_catalog_dir, run_suite, tmp_path):
    path, _, _ = run_suite
    run_eval(
        eval_config(
            small_catalog_dir, path, "double:x", tmp_path / "r", options={"api_key": "sk-secret-123"}, limit=1
        )
    )
    for name in (RUN_FILE, METRICS_FILE, TRAJECTORIES_FILE):
        assert b"sk-secret-123" not in (tmp_path / "r" / name).read_bytes()
    assert orjson.loads((tmp_path / "r" / RUN_FILE).read_bytes())["agent_options"] == {
        "api_key": "<redacted>"
    }


# -- resume ---------------------------------------------------------------------------------------


def test_resume_after_limited_run_has_no_duplicates_or_gaps(small_catalog_dir, run_suite, tmp_path):
    path, problems, _ = run_suite
    out = tmp_path / "run"
    common = dict(samples=2)
    first = run_eval(eval_config(small_catalog_dir, path, "double:r", out, limit=4, **common))
    assert first.episodes_run == 8
    second = run_eval(eval_config(small_catalog_dir, path, "double:r", out, **common))
    assert second.episodes_resumed == 8 and second.episodes_run == 2 * len(problems) - 8
    keys = [r.key for r in _records(out)]
    assert len(keys) == len(set(keys)) == 2 * len(problems)
    assert set(keys) == {(p.problem_id, s) for p in problems for s in range(2)}
    assert len({r.run_id for r in _records(out)}) == 1
    third = run_eval(eval_config(small_catalog_dir, path, "double:r", out, **common))
    assert third.episodes_run == 0 and third.metrics["counts"]["episodes"] == 2 * len(problems)


def test_resume_repairs_a_line_cut_short_by_an_interrupted_run(small_catalog_dir, run_suite, tmp_path):
    path, problems, _ = run_suite
    out = tmp_path / "run"
    run_eval(eval_config(small_catalog_dir, path, "double:t", out))
    trajectories = out / TRAJECTORIES_FILE
    data = trajectories.read_bytes()
    lines = data.splitlines(keepends=True)
    cut_key = TrajectoryRecord.model_validate(orjson.loads(lines[-1])).key
    trajectories.write_bytes(data[: len(data) - len(lines[-1]) // 2])  # a write killed mid-line
    log = read_trajectories(trajectories)
    assert log.truncated_tail and len(log.records) == len(problems) - 1
    result = run_eval(eval_config(small_catalog_dir, path, "double:t", out))
    assert result.dropped_partial_line and result.episodes_run == 1
    for raw in trajectories.read_bytes().splitlines():
        orjson.loads(raw)  # every line whole again
    keys = [r.key for r in _records(out)]
    assert sorted(keys) == sorted({(p.problem_id, 0) for p in problems}) and keys[-1] == cut_key


def test_a_bad_line_in_the_middle_is_corruption_not_a_cut(small_catalog_dir, run_suite, tmp_path):
    path, _, _ = run_suite
    out = tmp_path / "run"
    run_eval(eval_config(small_catalog_dir, path, "double:c", out, limit=3))
    lines = (out / TRAJECTORIES_FILE).read_bytes().splitlines(keepends=True)
    (out / TRAJECTORIES_FILE).write_bytes(lines[0] + b'{"not": "a record"}\n' + b"".join(lines[1:]))
    with pytest.raises(RunnerError, match=r"trajectories.jsonl:2: not a trajectory record"):
        run_eval(eval_config(small_catalog_dir, path, "double:c", out))


def test_resume_refuses_a_different_configuration(small_catalog_dir, run_suite, tmp_path):
    path, _, _ = run_suite
    out = tmp_path / "run"
    run_eval(eval_config(small_catalog_dir, path, "double:a", out, limit=2))
    with pytest.raises(RunnerError, match=r"different configuration.*mode: 'upstream' before, 'strict' now"):
        run_eval(eval_config(small_catalog_dir, path, "double:a", out, mode="strict"))
    with pytest.raises(RunnerError, match="agent_spec"):
        run_eval(eval_config(small_catalog_dir, path, "double:b", out))


# -- pass@k ---------------------------------------------------------------------------------------


def test_pass_at_k_through_the_runner_matches_hand_computed_values(small_catalog_dir, run_suite, tmp_path):
    path, problems, gold = run_suite
    chosen = problems[:3]
    plan = {
        chosen[0].problem_id: [False, False, False],  # c = 0
        chosen[1].problem_id: [False, True, False],  # c = 1
        chosen[2].problem_id: [True, True, True],  # c = 3
    }
    result = run_eval(
        eval_config(
            small_catalog_dir,
            path,
            "double:k",
            tmp_path / "run",
            options={"gold": gold, "plan": plan},
            samples=3,
            limit=3,
            bootstrap=100,
        )
    )
    by_k = {item["k"]: item["value"]["value"] for item in result.metrics["pass_at_k"]}
    assert by_k[1] == pytest.approx((0 + 1 / 3 + 1) / 3)
    assert by_k[2] == pytest.approx((0 + (1 - 1 / 3) + 1) / 3)  # 1 − C(2,2)/C(3,2) for c = 1
    assert by_k[3] == pytest.approx((0 + 1 + 1) / 3)
    assert result.metrics["headline"]["asr"]["value"] == pytest.approx(4 / 9)
    successes = {(r.key, r.score.success) for r in _records(tmp_path / "run")}
    assert ((chosen[1].problem_id, 1), True) in successes and ((chosen[1].problem_id, 0), False) in successes
    for item in result.metrics["pass_at_k"]:
        value = item["value"]
        assert value["low"] <= value["value"] <= value["high"]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_is_monotone_and_bounded(nck):
    n, c, k = nck
    value = pass_at_k(n, c, k)
    assert 0 <= value <= 1
    if k < n:
        assert pass_at_k(n, c, k + 1) >= value - 1e-12
    assert (value == 0) == (c == 0)


# -- timeouts and crashes -------------------------------------------------------------------------


@pytest.mark.parametrize("executor", ["inline", "process"])
def test_a_slow_episode_times_out_and_the_worker_recovers(small_catalog_dir, run_suite, tmp_path, executor):
    path, problems, gold = run_suite
    slow = problems[1].problem_id
    result = run_eval(
        eval_config(
            small_catalog_dir,
            path,
            "double:slow",
            tmp_path / "run",
            options={"gold": gold, "always_gold": True, "sleep_s": {slow: 30}},
            limit=4,
            executor=executor,
            workers=1,
            timeout=1.0,
        )
    )
    records = {r.problem.problem_id: r for r in _records(tmp_path / "run")}
    assert len(records) == 4
    assert records[slow].outcome.error == TIMEOUT_ERROR and records[slow].score.success is False
    assert [c.name for c in records[slow].calls] == ["find_product"]  # the partial trace is kept
    assert all(r.score.success for pid, r in records.items() if pid != slow)
    assert result.metrics["counts"]["errors_by_kind"] == {TIMEOUT_ERROR: 1}
    assert result.metrics["headline"]["asr"]["value"] == pytest.approx(3 / 4)
    assert result.wall_s < 20


def test_a_worker_the_alarm_cannot_reach_is_killed_and_replaced(small_catalog_dir, run_suite):
    _, problems, _ = run_suite
    stuck = problems[0].problem_id
    config = WorkerConfig(
        catalog_dir=str(small_catalog_dir),
        agent_spec="double:stuck",
        agent_options={"sleep_s": {stuck: 60}, "block_signals": True},
        episode_timeout_s=0.5,
        kill_grace_s=0.5,
        agent_kinds=dict(AGENT_KINDS),
    )
    tasks = [EpisodeTask(index=i, sample=0, problem=p) for i, p in enumerate(problems[:3])]
    with ProcessExecutor(config, workers=1) as pool:
        pool.start()
        started = time.monotonic()
        results = {o.digest.answer.problem_id: o for o in pool.run(tasks)}
        assert time.monotonic() - started < 15
        assert pool.replaced == 1
    records = {
        pid: TrajectoryRecord.model_validate_json(o.body[:-1] + b',"score":{}}') for pid, o in results.items()
    }
    assert results[stuck].digest.error == TIMEOUT_ERROR == records[stuck].outcome.error
    assert all(results[p.problem_id].digest.error is None for p in problems[1:3])
    assert all(records[p.problem_id].outcome.terminated == "success" for p in problems[1:3])


def test_an_agent_that_raises_fails_its_episode_only(small_catalog_dir, run_suite, tmp_path):
    path, problems, gold = run_suite
    bad = problems[2].problem_id
    result = run_eval(
        eval_config(
            small_catalog_dir,
            path,
            "double:crash",
            tmp_path / "run",
            options={"gold": gold, "always_gold": True, "crash_on": [bad]},
            limit=4,
            executor="process",
            workers=1,
        )
    )
    records = {r.problem.problem_id: r for r in _records(tmp_path / "run")}
    assert "scripted crash" in records[bad].outcome.error and not records[bad].score.success
    assert result.metrics["counts"]["errors"] == 1
    assert result.metrics["headline"]["asr"]["value"] == pytest.approx(3 / 4)


def test_an_unbuildable_agent_is_a_clear_error(small_catalog_dir, run_suite, tmp_path):
    path, _, _ = run_suite
    for executor in ("inline", "process"):
        with pytest.raises(RunnerError, match=r"agent 'double:x' could not be built: .*unexpected keyword"):
            run_eval(
                eval_config(
                    small_catalog_dir,
                    path,
                    "double:x",
                    tmp_path / executor / "run",
                    options={"no_such_option": 1},
                    executor=executor,
                )
            )
        assert not (tmp_path / executor).exists()  # the directories it made are gone again
    with pytest.raises(ValidationError, match="KIND:TARGET"):
        eval_config(small_catalog_dir, path, "double", tmp_path / "y")


# -- a failed start claims nothing ----------------------------------------------------------------


@pytest.mark.parametrize("executor", ["inline", "process"])
def test_a_failed_start_leaves_the_directory_free_for_the_corrected_command(
    small_catalog_dir, run_suite, tmp_path, executor
):
    """A typo in the agent (kind, option, path) fails before any episode: run.json is not written, so
    the corrected command runs in the same directory; a directory that existed before keeps only
    what it held."""
    path, _, _ = run_suite
    out = tmp_path / "run"
    out.mkdir()
    (out / "mine.txt").write_text("kept")
    typos = [
        ("bogus:x", {}, "unknown kind 'bogus'"),
        ("reference:pipeline", {"foo": 1}, "agent reference:pipeline takes no option 'foo'"),
        ("file:" + str(tmp_path / "missing.py"), {}, "does not exist"),
        ("hf:" + str(tmp_path / "no-such-dir"), {}, "no such directory"),
    ]
    for agent, options, message in typos:
        with pytest.raises(RunnerError, match=message):
            run_eval(
                eval_config(small_catalog_dir, path, agent, out, options=options, executor=executor, limit=2)
            )
        assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]  # no run.lock either
    result = run_eval(
        eval_config(small_catalog_dir, path, "reference:pipeline", out, executor=executor, limit=2)
    )
    assert result.episodes_run == 2
    assert orjson.loads((out / RUN_FILE).read_bytes())["agent_spec"] == "reference:pipeline"


def test_a_run_json_left_by_an_earlier_failed_start_is_no_run(small_catalog_dir, run_suite, tmp_path):
    """Earlier versions wrote run.json (agent null, no episode) before the agent failed to build:
    such a directory is free for any configuration, not 'a run with a different configuration'."""
    path, _, _ = run_suite
    first = tmp_path / "first"
    run_eval(eval_config(small_catalog_dir, path, "double:a", first, limit=1))
    stale = orjson.loads((first / RUN_FILE).read_bytes())
    stale.update(agent=None, agent_spec="bogus:x", status="interrupted")
    out = tmp_path / "poisoned"
    out.mkdir()
    (out / RUN_FILE).write_bytes(orjson.dumps(stale))
    (out / TRAJECTORIES_FILE).touch()
    result = run_eval(eval_config(small_catalog_dir, path, "double:b", out, limit=1))
    run = orjson.loads((out / RUN_FILE).read_bytes())
    assert result.episodes_run == 1 and run["agent_spec"] == "double:b" and run["run_id"] != stale["run_id"]


# -- retrying errored episodes --------------------------------------------------------------------


def test_error_kinds_say_which_errors_a_retry_reruns():
    assert error_kind(OUTAGE_ERROR) == "endpoint"
    assert error_kind("https://api.openai.com/v1/chat/completions: Incorrect API key provided") == "endpoint"
    assert error_kind(TIMEOUT_ERROR) == TIMEOUT_ERROR
    assert error_kind("agent crashed: RuntimeError: scripted crash") == "agent crashed"
    assert (
        error_kind("agent_main failed: TypeError: boom\nTraceback (most recent call last):")
        == "agent crashed"
    )
    # a miner cannot pass its own exception off as the harness's timeout (which --retry-errors re-runs):
    # what it raises always comes after the file agent's `agent_main failed:`
    spoof = "agent_main failed: RuntimeError: timeout: agent_main did not return within 1 s"
    assert error_kind(spoof) == "agent crashed"
    assert error_kind("timeout: agent_main did not return within 1 s; the sandbox killed it") == TIMEOUT_ERROR
    assert error_kind("worker crashed (exit code -9)") == "worker crashed"
    assert error_kind("model call failed: RuntimeError: CUDA out of memory") == "agent error"
    assert error_kind("agent_main returned malformed steps: not a list") == "agent error"
    assert RETRYABLE_ERRORS == ("endpoint", TIMEOUT_ERROR)


def test_retry_errors_reruns_endpoint_errors_and_keeps_the_old_records(
    small_catalog_dir, run_suite, tmp_path
):
    path, problems, gold = run_suite
    out = tmp_path / "run"
    flag = tmp_path / "endpoint-down"
    flag.touch()
    down, crashing = [problems[0].problem_id, problems[1].problem_id], problems[2].problem_id
    options = {"gold": gold, "always_gold": True, "crash_on": [crashing], "outage_on": down}
    options["outage_flag"] = str(flag)

    def config(**fields) -> EvalConfig:
        return eval_config(small_catalog_dir, path, "double:flaky", out, options=options, limit=4, **fields)

    first = run_eval(config())
    counts = first.metrics["counts"]
    assert counts["errors_by_kind"] == {"endpoint": 2, "agent crashed": 1} and counts["retryable_errors"] == 2
    assert first.metrics["error_examples"]["endpoint"] == OUTAGE_ERROR
    assert first.metrics["headline"]["asr"]["value"] == pytest.approx(1 / 4)
    flag.unlink()  # the endpoint is back

    resumed = run_eval(config())  # without the flag an outage stays what it was: failures
    assert resumed.episodes_run == 0 and resumed.episodes_resumed == 4
    assert resumed.metrics["counts"]["errors"] == 3

    retried = run_eval(config(retry_errors=True, executor="process", workers=2))
    assert (retried.episodes_run, retried.episodes_retried, retried.episodes_resumed) == (2, 2, 2)
    counts = retried.metrics["counts"]
    assert counts["errors_by_kind"] == {"agent crashed": 1} and counts["retryable_errors"] == 0
    assert counts["superseded"] == 2 and counts["episodes"] == 4
    assert retried.metrics["headline"]["asr"]["value"] == pytest.approx(3 / 4)

    lines = [
        TrajectoryRecord.model_validate_json(line)
        for line in (out / TRAJECTORIES_FILE).read_bytes().splitlines()
    ]
    assert len(lines) == 6  # nothing lost: the errored records stay, the re-runs follow them
    assert [r.outcome.error for r in lines[:4] if r.problem.problem_id in down] == [OUTAGE_ERROR] * 2
    assert len({r.record_id for r in lines}) == 6  # each attempt its own id (the store keeps both)
    newest = {r.problem.problem_id: r for r in _records(out)}
    assert len(newest) == 4 and all(newest[pid].score.success for pid in down)
    assert all("--retry-errors" in newest[pid].outcome.notes[0] for pid in down)
    assert "scripted crash" in newest[crashing].outcome.error  # the agent's own crash is not re-run

    again = run_eval(config(retry_errors=True))
    assert again.episodes_run == 0 and again.metrics["counts"]["superseded"] == 2


# -- executors agree ------------------------------------------------------------------------------


def test_a_two_worker_pool_writes_the_same_records_as_inline(small_catalog_dir, run_suite, tmp_path):
    path, _, gold = run_suite
    half = {pid: ids for i, (pid, ids) in enumerate(gold.items()) if i % 3 == 0}
    runs = {}
    for executor, workers in (("inline", 1), ("process", 2)):
        out = tmp_path / executor
        run_eval(
            eval_config(
                small_catalog_dir,
                path,
                "double:same",
                out,
                options={"gold": half, "always_gold": True},
                samples=2,
                executor=executor,
                workers=workers,
                bootstrap=200,
            )
        )
        runs[executor] = out
    inline = {r.key: _strip_volatile(r) for r in _records(runs["inline"])}
    pooled = {r.key: _strip_volatile(r) for r in _records(runs["process"])}
    assert inline == pooled
    m_inline = orjson.loads((runs["inline"] / METRICS_FILE).read_bytes())
    m_pooled = orjson.loads((runs["process"] / METRICS_FILE).read_bytes())
    assert m_inline["metrics"] == m_pooled["metrics"] and m_inline["pass_at_k"] == m_pooled["pass_at_k"]


def test_ray_executor_missing_is_a_clear_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)
    config = WorkerConfig(catalog_dir="x", agent_spec="double:x")
    with pytest.raises(RunnerError, match=r"pip install 'shoparena\[scale\]'"):
        make_executor("ray", config, 1)


# -- the judge hook -------------------------------------------------------------------------------


def test_judge_verdicts_are_recorded_and_scale_the_final_score(small_catalog_dir, run_suite, tmp_path):
    path, _problems, gold = run_suite
    seen = []

    def quality_judge(record: TrajectoryRecord, problem) -> JudgeVerdict:
        seen.append((record.problem.problem_id, problem.problem_id))
        return JudgeVerdict(
            quality=0.5, gate="ok", explanation="scripted", judge_model="test-double", judge_version="0"
        )

    result = run_eval(
        eval_config(
            small_catalog_dir,
            path,
            "double:j",
            tmp_path / "run",
            options={"gold": gold, "always_gold": True},
            limit=4,
        ),
        judge=quality_judge,
    )
    assert len(seen) == 4 and all(a == b for a, b in seen)
    assert all(r.judge is not None and r.judge.quality == 0.5 for r in _records(tmp_path / "run"))
    judge = result.metrics["judge"]
    assert judge["q"] == 0.5 and judge["coeff"] == pytest.approx(0.3 + 0.7 * 0.5 / 0.8)
    assert judge["final_score"] == pytest.approx(1.0 * judge["coeff"])


# -- agreement with `shoparena score` -------------------------------------------------------------


@pytest.mark.parametrize("mode", ["upstream", "strict"])
def test_metrics_agree_with_the_score_command(small_catalog_dir, run_suite, tmp_path, mode):
    path, problems, gold = run_suite
    some = {pid: ids for i, (pid, ids) in enumerate(gold.items()) if i % 2 == 1}
    slow = problems[0].problem_id
    result = run_eval(
        eval_config(
            small_catalog_dir,
            path,
            "double:agree",
            tmp_path / "run",
            options={"gold": some, "always_gold": True, "sleep_s": {slow: 5}},
            mode=mode,
            timeout=0.5,
            bootstrap=300,
        )
    )
    answers = tmp_path / "answers.jsonl"
    answers.write_bytes(
        b"".join(
            orjson.dumps(record_answer(r).model_dump(exclude_none=True)) + b"\n"
            for r in sorted(_records(tmp_path / "run"), key=lambda r: (r.problem.index, r.sample))
        )
    )
    out = tmp_path / "score.json"
    args = ["score", "--catalog", str(small_catalog_dir), "--problems", str(path), "--answers", str(answers)]
    args += ["--mode", mode, "--similarity", "lexical", "--bootstrap", "300", "--json", str(out)]
    invoked = cli.invoke(app, args)
    assert invoked.exit_code == 0, invoked.output
    scored = orjson.loads(out.read_bytes())["aggregate"]["metrics"]
    ours = result.metrics["metrics"]
    assert ours["overall"]["metrics"]["asr"] == scored["overall"]["metrics"]["asr"]
    assert ours["overall"]["metrics"]["car"] == scored["overall"]["metrics"]["car"]
    assert set(ours["buckets"]) == set(scored["buckets"]) == {"product", "shop", "voucher"}
    for bucket, group in scored["buckets"].items():
        assert ours["buckets"][bucket]["metrics"]["asr"] == group["metrics"]["asr"]
        assert ours["buckets"][bucket]["metrics"]["car"] == group["metrics"]["car"]
    # and both say what the script made happen: the told-gold half succeeds, the timed-out one fails
    expected = sum(1 for p in problems if p.problem_id in some and p.problem_id != slow) / len(problems)
    assert ours["overall"]["metrics"]["asr"]["value"] == pytest.approx(expected)


def test_an_interrupted_pool_run_resumes_without_duplicates(small_catalog_dir, run_suite, tmp_path):
    """Ctrl-C mid-run (raised from the progress callback): finished episodes stay, the rest run later."""
    path, problems, gold = run_suite
    out = tmp_path / "run"
    calls = []

    def interrupt_after_three(state) -> None:
        calls.append(state.done)
        if state.done == 3:
            raise KeyboardInterrupt

    common = dict(executor="process", workers=2)
    with pytest.raises(KeyboardInterrupt):
        run_eval(
            eval_config(small_catalog_dir, path, "double:i", out, options={"gold": gold}, **common),
            progress=interrupt_after_three,
        )
    assert orjson.loads((out / RUN_FILE).read_bytes())["status"] == "interrupted"
    assert not (out / METRICS_FILE).exists()
    assert len(_records(out)) == 3
    result = run_eval(eval_config(small_catalog_dir, path, "double:i", out, options={"gold": gold}, **common))
    assert result.episodes_resumed == 3 and result.episodes_run == len(problems) - 3
    keys = [r.key for r in _records(out)]
    assert sorted(keys) == sorted((p.problem_id, 0) for p in problems)


def test_ray_executor_runs_the_same_episodes(small_catalog_dir, run_suite, tmp_path):
    pytest.importorskip("ray")
    path, _, gold = run_suite
    runs = {}
    for executor in ("inline", "ray"):
        run_eval(
            eval_config(
                small_catalog_dir,
                path,
                "double:ray",
                tmp_path / executor,
                options={"gold": gold, "always_gold": True},
                limit=4,
                executor=executor,
                workers=1,
            )
        )
        runs[executor] = {r.key: _strip_volatile(r) for r in _records(tmp_path / executor)}
    assert runs["inline"] == runs["ray"] and len(runs["ray"]) == 4


@pytest.mark.parametrize("executor", ["inline", "process"])
def test_the_runner_tells_the_agent_which_problem_and_sample_comes_next(
    small_catalog_dir, run_suite, tmp_path, executor
):
    """What seeded agents key their sampling on (`Agent.begin_episode`, `episode_seed`)."""
    path, _problems, _gold = run_suite
    run_eval(eval_config(small_catalog_dir, path, "double:seeded", tmp_path / "run", samples=2, limit=3,
                         executor=executor, workers=2))  # fmt: skip
    records = _records(tmp_path / "run")
    assert len(records) == 6
    for record in records:
        assert f"begin_episode('{record.problem.problem_id}', {record.sample})" in record.outcome.notes
