"""shoparena as a verifiers environment, against the offline reference model on a real loopback port.

The same problems are run twice against one endpoint — by `load_environment()` through verifiers'
rollout machinery (its interception server in front of the endpoint) and by `shoparena eval --agent
openai:…` — and must come out as the same episodes with the same rewards. `vf-eval` runs it from the
command line too. The reference model answers as a pure function of the request, so equal episodes
also mean verifiers forwarded every request as our agent sent it.

verifiers is an optional extra that `make test` installs; without it these tests skip, loudly, and
fail where CI=true.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.harness.tool_specs import tool_schemas
from shoparena.inference.reference_model import ReferenceChatModel
from shoparena.judge import judge_record
from shoparena.records.trajectory import TrajectoryRecord
from tests.agents.conftest_llm import Reply, ScriptedChatServer, completion, error_body

MODEL = "reference-agentic"


def give_up() -> dict:
    """A model reply that ends the episode at once: one `terminate` call."""
    return completion(
        None, [{"id": "c1", "type": "function", "function": {"name": "terminate", "arguments": "{}"}}]
    )


LIMIT = 4
AXES = ("title", "price", "service", "sku_attr", "knowledge")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def vfenv():
    """`shoparena.integrations.verifiers`, or a loud skip (a failure in CI) when verifiers is missing."""
    try:
        import shoparena.integrations.verifiers as module
    except ImportError as exc:
        message = (
            f"VERIFIERS TESTS NOT RUN: {exc}. Install the extra with `pip install -e '.[verifiers]'` "
            "(`make test` does) to test shoparena as a verifiers environment."
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return module


def reference_server(step_cap: int) -> ScriptedChatServer:
    """The offline reference model behind a real Chat Completions server on loopback."""
    model = ReferenceChatModel(MODEL)
    return ScriptedChatServer(lambda index, body: Reply(model.complete(body, step_cap=step_cap)))


def shoparena_eval(
    catalog: Path,
    problems: Path,
    out: Path,
    base_url: str,
    *extra: str,
    limit: int = LIMIT,
    exit_code: int = 0,
) -> dict[str, dict]:
    """`shoparena eval --agent openai:MODEL` on the same endpoint: its records by problem id."""
    args = ["eval", "--catalog", str(catalog), "--problems", str(problems), "--limit", str(limit)]
    args += ["--agent", f"openai:{MODEL}", "--base-url", base_url, "--out", str(out), "--mode", "strict"]
    args += ["--executor", "inline", "--similarity", "lexical", "--bootstrap", "0", "--quiet", *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == exit_code, result.output
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    return {r["problem"]["problem_id"]: r for r in map(json.loads, lines)}


def calls_of(record: dict) -> list[tuple]:
    """What the harness did, without the timings."""
    return [
        (c["name"], c["arguments"], c["result"], c["error"], c["origin"], c["counted"])
        for c in record["calls"]
    ]


def assert_same_episode(ours: TrajectoryRecord, theirs: dict) -> None:
    """A verifiers rollout's record is `shoparena eval`'s record of the same episode."""
    mine = ours.model_dump(mode="json")
    assert mine["messages"] == theirs["messages"]
    assert mine["tools"] == theirs["tools"]
    assert calls_of(mine) == calls_of(theirs)
    assert mine["outcome"] == theirs["outcome"]
    assert mine["harness"] == theirs["harness"]
    assert mine["score"] == theirs["score"]
    assert mine["agent"]["spec"] == theirs["agent"]["spec"] == f"openai:{MODEL}"


@pytest.mark.parametrize("step_cap", [None, 3], ids=["profile-cap", "cap-3"])
def test_rewards_equal_shoparena_eval_on_the_same_episodes(
    vfenv, small_catalog_dir, problems_file, tmp_path, step_cap
):
    cap_args = ["--step-cap", str(step_cap)] if step_cap else []
    with reference_server(25) as server:  # the model plans for 25 steps: a cap of 3 cuts it short
        env = vfenv.load_environment(
            small_catalog_dir, problems_file, step_cap=step_cap, limit=LIMIT, similarity="lexical"
        )
        episodes = vfenv.evaluate(env, model=MODEL, base_url=server.base_url)
        routed = len(server.requests)
        expected = shoparena_eval(
            small_catalog_dir, problems_file, tmp_path / "eval", server.base_url, *cap_args
        )

    assert routed == len(server.requests) - routed  # the two runs asked the model the same number of times
    traces = vfenv.episode_traces(episodes)
    assert len(traces) == LIMIT and all(episode.ok for episode in episodes)
    assert {trace.task.data.problem.problem_id for trace in traces} == set(expected)
    for trace in traces:
        record = vfenv.to_trajectory(trace)
        theirs = expected[record.problem.problem_id]
        assert_same_episode(record, theirs)
        score = theirs["score"]
        # the rubric: the outcome is the rule score, the parts are metrics that add nothing to the reward
        assert trace.rewards["outcome"].score == score["rule"] and trace.rewards["outcome"].weight == 1.0
        assert trace.reward == score["rule"]
        assert trace.metrics["success"] == float(score["success"])
        assert trace.metrics["rule"] == score["rule"]
        assert {a: trace.metrics[a] for a in AXES if a in trace.metrics} == {
            a: score[a] for a in AXES if score.get(a) is not None
        }
        assert trace.metrics["steps"] == theirs["outcome"]["steps_used"]
        # per-rollout state is our Episode: every model call of the record went through verifiers
        assert {call.origin for call in record.calls} == {"llm"}
        assistant_turns = [m for m in record.messages if m["role"] == "assistant"]
        assert len(trace.calls) == len(assistant_turns)
        if step_cap:
            assert record.harness.step_cap == step_cap and record.outcome.steps_used <= step_cap
    if step_cap:  # the cap bit: episodes ran out of steps, in both runs alike (records compared above)
        assert any(r["outcome"]["end_reason"].startswith("step cap reached") for r in expected.values())
    else:  # the reference model solves some problems and not others: the rewards are not all alike
        assert len({trace.reward for trace in traces}) > 1


def test_teacher_and_judge_terms_are_weighted_rewards(vfenv, small_catalog_dir, problems_file, tmp_path):
    with reference_server(25) as server:
        teacher = shoparena_eval(small_catalog_dir, problems_file, tmp_path / "teacher", server.base_url)
        env = vfenv.load_environment(
            small_catalog_dir,
            problems_file,
            limit=LIMIT,
            similarity="lexical",
            teacher=tmp_path / "teacher" / "trajectories.jsonl",
            tool_weight=0.5,
            judge="offline",
            judge_weight=0.25,
        )
        episodes = vfenv.evaluate(env, model=MODEL, base_url=server.base_url)
    for trace in vfenv.episode_traces(episodes):
        record = vfenv.to_trajectory(trace)
        # the same policy as the teacher: its calls are the teacher's, and match them exactly
        assert calls_of(record.model_dump(mode="json")) == calls_of(teacher[record.problem.problem_id])
        assert trace.rewards["tool_match"].score == 1.0 and trace.rewards["tool_match"].weight == 0.5
        verdict = judge_record(record.model_copy(update={"judge": None}), None)
        assert record.judge is not None and record.judge.quality == verdict.quality
        assert trace.rewards["judge_quality"].score == verdict.quality
        assert trace.reward == pytest.approx(record.score.rule + 0.5 * 1.0 + 0.25 * verdict.quality)


def test_rollouts_enter_the_store(vfenv, small_catalog_dir, problems_file, tmp_path):
    with reference_server(25) as server:
        env = vfenv.load_environment(small_catalog_dir, problems_file, limit=2, similarity="lexical")
        episodes = vfenv.evaluate(env, model=MODEL, base_url=server.base_url, rollouts=2)
    records = [vfenv.to_trajectory(trace) for trace in vfenv.episode_traces(episodes)]
    assert len({r.record_id for r in records}) == 4  # two rollouts of a problem are two records
    path = tmp_path / "rollouts.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in records))
    result = CliRunner().invoke(
        app, ["store", "ingest", str(path), "--store", f"sqlite:///{tmp_path / 'store.db'}", "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout[result.stdout.index("{") :])
    assert (report["seen"], report["inserted"], report["rejected"]) == (4, 4, 0)


@pytest.mark.parametrize(
    ("reply", "errored"),
    [
        (Reply(error_body("no such model"), 400), True),  # the endpoint failed: not the policy's fault
        (Reply(completion("I would buy the first one.")), False),  # the policy gave up: a reward of 0
    ],
    ids=["endpoint-refuses", "no-tool-call"],
)
def test_failed_episodes_score_as_shoparena_eval_scores_them(
    vfenv, small_catalog_dir, problems_file, tmp_path, reply, errored
):
    with ScriptedChatServer(lambda index, body: reply) as server:
        env = vfenv.load_environment(small_catalog_dir, problems_file, limit=1, similarity="lexical")
        (episode,) = vfenv.evaluate(env, model=MODEL, base_url=server.base_url)
        expected = shoparena_eval(
            small_catalog_dir,
            problems_file,
            tmp_path / "eval",
            server.base_url,
            limit=1,
            exit_code=int(errored),
        )
    (trace,) = episode.traces
    record = vfenv.to_trajectory(trace)
    (theirs,) = expected.values()
    assert record.model_dump(mode="json")["score"] == theirs["score"]
    assert record.score.success is False and record.score.rule == 0.0
    assert (record.outcome.error is not None) is errored is (theirs["outcome"]["error"] is not None)
    # an endpoint failure is an errored rollout (verifiers retries it, trainers drop it), not a 0
    assert episode.ok is (not errored) and trace.ok is (not errored)
    assert trace.rewards == ({} if errored else trace.rewards)
    if not errored:
        assert trace.reward == 0.0 and trace.rewards["outcome"].score == 0.0


def test_the_harness_options_reach_the_model(vfenv, small_catalog_dir, problems_file):
    with ScriptedChatServer(lambda index, body: Reply(give_up())) as server:
        env = vfenv.load_environment(
            small_catalog_dir,
            problems_file,
            limit=1,
            similarity="lexical",
            harness={"system_prompt": "Shop carefully.", "temperature": 0.7, "max_tokens": 64},
        )
        (episode,) = vfenv.evaluate(env, model=MODEL, base_url=server.base_url)
    (request,) = server.requests
    assert request.body["messages"][0] == {"role": "system", "content": "Shop carefully."}
    assert (request.body["temperature"], request.body["max_tokens"], request.body["model"]) == (
        0.7,
        64,
        MODEL,
    )
    assert request.body["tools"] == tool_schemas("oro7")  # the harness's own schemas
    assert vfenv.to_trajectory(episode.traces[0]).messages[0]["content"] == "Shop carefully."


def test_a_task_system_prompt_wins(vfenv, small_catalog_dir, problems_file, tmp_path):
    """verifiers' `--env.taskset.system-prompt FILE` (what `vf-gepa` optimises) reaches the model."""
    (tmp_path / "prompt.txt").write_text("Find the cheapest match.")
    with ScriptedChatServer(lambda index, body: Reply(give_up())) as server:
        env = vfenv.load_environment(
            small_catalog_dir,
            problems_file,
            limit=1,
            similarity="lexical",
            harness={"system_prompt": "Shop carefully."},
            system_prompt_file=tmp_path / "prompt.txt",
        )
        vfenv.evaluate(env, model=MODEL, base_url=server.base_url)
    (request,) = server.requests
    assert request.body["messages"][0] == {"role": "system", "content": "Find the cheapest match."}


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"tool_weight": 0.5}, "tool_weight needs teacher trajectories"),
        ({"judge_weight": 0.5}, "judge_weight needs a judge"),
        ({"profile": "nope"}, "profile"),
        ({"mode": "lenient"}, "mode"),
        ({"limit": 0}, "limit"),
        ({"judge": "offline", "judge_options": {"api_key": "sk-secret"}}, "no api_key here"),
    ],
)
def test_bad_settings_are_refused(vfenv, small_catalog_dir, problems_file, options, error):
    with pytest.raises(ValueError, match=error):
        vfenv.load_environment(small_catalog_dir, problems_file, **options)


@pytest.mark.parametrize(
    "trace",
    [{}, {"info": {}}, {"info": {"shoparena": {"record_id": "x"}}}],
    ids=["no-info", "not-ours", "not-a-record"],
)
def test_to_trajectory_refuses_what_is_not_a_record(vfenv, trace):
    with pytest.raises(ValueError):
        vfenv.to_trajectory(trace)


def test_vf_eval_runs_it_from_the_command_line(vfenv, small_catalog_dir, problems_file, tmp_path):
    vf_eval = shutil.which("vf-eval", path=str(Path(sys.executable).parent))
    assert vf_eval is not None, "the verifiers package installs the vf-eval command"
    out = tmp_path / "vf"
    with reference_server(25) as server:
        command = [
            vf_eval, "shoparena-verifiers", "-m", MODEL, "--client.base-url", server.base_url,
            "--client.api-key-var", "OPENAI_API_KEY", "--no-push", "--no-rich", "-o", str(out), "-n", "2",
            "--env.taskset.catalog", str(small_catalog_dir), "--env.taskset.problems", str(problems_file),
            "--env.taskset.task.similarity", "lexical",
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        expected = shoparena_eval(small_catalog_dir, problems_file, tmp_path / "eval", server.base_url)
    (traces_file,) = out.glob("*/traces.jsonl")
    traces = [trace for line in traces_file.read_text().splitlines() for trace in json.loads(line)["traces"]]
    assert len(traces) == 2
    for trace in traces:
        record = vfenv.to_trajectory(trace)  # from the JSON vf-eval wrote
        assert_same_episode(record, expected[record.problem.problem_id])
        assert trace["rewards"]["outcome"] == {"score": record.score.rule, "weight": 1.0}
