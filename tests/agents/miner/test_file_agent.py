"""Miner-file agents run in the real sandbox (bwrap; `none` where a test says so) against a real tool
server on a Unix socket and a real generated catalogue."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.agents.base import AgentSpecError, ProblemView, make_agent
from shoparena.agents.miner.file_agent import FileAgent, StepFormatError, make_file_agent, parse_steps
from shoparena.eval.config import EvalConfig
from shoparena.eval.runner import run_eval
from shoparena.harness import Episode
from shoparena.harness.tool_server import ToolServer
from shoparena.inference.proxy import InferenceProxy
from shoparena.sandbox import NoSandboxWarning
from shoparena.scoring import LexicalSimilarity, RuleScorer
from tests.sandbox.test_limits import host_processes_with

MINERS = Path(__file__).resolve().parents[1] / "miners"
SANDBOXED = pytest.mark.usefixtures("sandbox_ready")  # the tests that run miner files (file_server has it)


@pytest.fixture(scope="module")
def file_server(sandbox_ready):
    """Shared by the module's agents: a Unix socket only (mode 0666 in a private directory), the one
    way into the sandbox."""
    with (
        tempfile.TemporaryDirectory(prefix="fa-tools-") as where,
        ToolServer(host=None, socket_path=Path(where) / "tools.sock", socket_mode=0o666) as server,
    ):
        yield server


@pytest.fixture(scope="module")
def file_title_query(agent_catalog):
    """A query whose first word surely matches: a product title (plus a marker word for some miners)."""
    return agent_catalog.store.dict_by_ord(7)["title"] + " real"


def miner(name: str, server: ToolServer, **options) -> FileAgent:
    return make_file_agent(str(MINERS / f"{name}.py"), server=server, **options)


def run_on_query(agent: FileAgent, catalog, query: str, problem_id: str = "p-1"):
    episode = Episode(catalog, query, profile="oro7", problem_id=problem_id)
    run = agent.run(episode, ProblemView(problem_id=problem_id, query=query, bucket="product"))
    return episode, run


def run_on_problem(agent: FileAgent, catalog, problem):
    episode = Episode.for_problem(problem, catalog, profile="oro7")
    return episode, agent.run(episode, ProblemView.of(problem))


def score(catalog, problem, episode):
    return RuleScorer(catalog, LexicalSimilarity(), mode="strict").score(
        problem,
        episode.recommended_product_ids,
        steps=episode.steps_used,
        terminated=episode.terminated is not None,
    )


# -- making agents -------------------------------------------------------------------------------------
def test_identity_comes_from_the_file_and_its_content(tmp_path, file_server):
    agent = miner("good_miner", file_server)
    content = (MINERS / "good_miner.py").read_bytes()
    assert (agent.kind, agent.name, agent.agent_id) == ("file", "good_miner", "file:good_miner")
    assert agent.version == hashlib.sha256(content).hexdigest()[:12]
    edited = tmp_path / "good_miner.py"
    edited.write_bytes(content + b"\n# v2\n")
    assert make_file_agent(str(edited)).version != agent.version
    assert isinstance(make_agent(f"file:{MINERS / 'good_miner.py'}", timeout_s=5), FileAgent)


def test_files_that_are_not_miners_are_refused_up_front(tmp_path):
    with pytest.raises(AgentSpecError, match="does not exist"):
        make_file_agent(str(tmp_path / "missing.py"))
    with pytest.raises(AgentSpecError, match="no top-level agent_main"):
        make_file_agent(str(MINERS / "no_main_miner.py"))
    broken = tmp_path / "broken.py"
    broken.write_text("def agent_main(problem_data)\n    return []\n")
    with pytest.raises(AgentSpecError, match=r"broken.py: line 1: "):
        make_file_agent(str(broken))
    with pytest.raises(
        AgentSpecError, match=r"takes no option 'temperature'; its options: sandbox, timeout_s"
    ):
        make_file_agent(str(MINERS / "good_miner.py"), temperature=0.3)
    with pytest.raises(AgentSpecError, match="sandbox must be one of bwrap, container, none, got 'chroot'"):
        make_file_agent(str(MINERS / "good_miner.py"), sandbox="chroot")
    with pytest.raises(AgentSpecError, match="bad limits: memory_bytes: "):
        make_file_agent(str(MINERS / "good_miner.py"), memory_mb=1)


def test_a_sandbox_that_cannot_run_is_refused_when_the_agent_is_made():
    """Fail closed and early: before any problem runs, with what went wrong and the way out."""
    with pytest.raises(AgentSpecError) as caught:
        make_file_agent(str(MINERS / "good_miner.py"), python="/nonexistent/python3")
    assert (
        "the bwrap sandbox cannot run here: cannot run the sandbox's interpreter /nonexistent/python3"
        in str(caught.value)
    )
    assert "--sandbox none" in str(caught.value)
    with pytest.raises(AgentSpecError, match="only through a Unix socket"):
        make_file_agent(str(MINERS / "good_miner.py"), server=ToolServer())


# -- behaviour -----------------------------------------------------------------------------------------
def test_a_good_miner_drives_the_episode_through_the_sdk(agent_catalog, agent_problems, file_server):
    problem = agent_problems[0]
    episode, run = run_on_problem(miner("good_miner", file_server), agent_catalog, problem)
    assert run.error is None
    names = [(c.name, c.origin) for c in episode.calls]
    # it claims origin "llm" for its searches and its recommendation, but no model answered any of
    # them: every call is recorded as code, and the rejected claims are counted and noted
    assert names[-3:] == [
        ("view_product_information", "code"),
        ("recommend_product", "code"),
        ("terminate", "code"),
    ]
    assert {origin for name, origin in names[:-3]} == {"code"} and {n for n, _ in names[:-3]} == {
        "find_product"
    }
    assert run.inference.requests == 0 and run.inference.unverified_llm_claims == len(names) - 2
    assert run.notes == [
        f"{len(names) - 2} tool call(s) claimed as emitted by the model matched no tool call of an "
        "inference response and were recorded as code"
    ]
    assert episode.terminated == "success" and episode.ended
    claimed = run.model_outputs[-1]["completion"]["message"]["tool_call"][0]
    assert episode.recommended_product_ids == [claimed["parameters"]["product_ids"]]
    assert claimed["tool_call_id"] == episode.calls[-2].call_id
    assert len(run.model_outputs) == 3 and len(parse_steps(run.model_outputs)) == 3


def test_a_crashing_miner_reports_its_traceback_and_scores_as_a_failure(
    agent_catalog, agent_problems, file_server
):
    problem = agent_problems[0]
    episode, run = run_on_problem(miner("crashing_miner", file_server), agent_catalog, problem)
    assert run.error.startswith("agent_main failed: IndexError: list index out of range")
    assert "crashing_miner.py" in run.error and "parse_budget" in run.error
    assert [c.name for c in episode.calls] == ["find_product"] and episode.recommended_product_ids is None
    result = score(agent_catalog, problem, episode)
    assert not result.success


def test_a_miner_that_never_returns_is_killed_with_its_children(agent_catalog, file_server, file_title_query):
    agent = miner("sleeping_miner", file_server, timeout_s=1.5)
    marker = f"sleeper-{uuid.uuid4().hex}"  # the miner's child carries it on its command line
    started = time.monotonic()
    episode, run = run_on_query(agent, agent_catalog, file_title_query, problem_id=marker)
    assert time.monotonic() - started < 4.5
    assert run.error.startswith("timeout: agent_main did not return within 1.5 s; the sandbox killed")
    assert f"CHILD STARTED {marker}" in run.error  # the child really ran (the tail after the noise)
    assert host_processes_with(marker) == [], "the miner or the process it started is still running"
    assert episode.calls == []


def test_garbage_on_stdout_and_stderr_does_not_corrupt_the_result(
    agent_catalog, file_server, file_title_query
):
    episode, run = run_on_query(miner("noisy_miner", file_server), agent_catalog, file_title_query)
    assert run.error is None
    assert run.model_outputs[0]["completion"]["message"]["think"] == "noisy but fine"
    claimed = run.model_outputs[0]["completion"]["message"]["tool_call"][0]["parameters"]["product_ids"]
    assert episode.recommended_product_ids == [claimed] and run.notes == []


def test_a_miner_finds_no_reward_anywhere_it_looks(
    tmp_path, monkeypatch, agent_catalog, agent_problems, file_server
):
    # plant rewards where a miner run in place would find them: beside its file and in the parent env
    planted = tmp_path / "miner_home"
    planted.mkdir()
    shutil.copy(MINERS / "snooping_miner.py", planted / "snooping_miner.py")
    (planted / "problems.jsonl").write_text(
        "\n".join(p.model_dump_json(by_alias=True) for p in agent_problems)
    )
    (tmp_path / "suite.json").write_text(json.dumps([p.to_record() for p in agent_problems]))
    assert "reward" in (planted / "problems.jsonl").read_text()
    monkeypatch.setenv("SHOPARENA_REWARD_HINT", "reward=" + json.dumps(agent_problems[0].to_record()))
    monkeypatch.chdir(planted)
    agent = make_file_agent(str(planted / "snooping_miner.py"), server=file_server)

    for problem in agent_problems:
        episode, run = run_on_problem(agent, agent_catalog, problem)
        assert run.error is None and episode.calls == []  # listing tools is not a call
        info = run.model_outputs[0]["extra_info"]
        assert info["found"] == [], info["found"]
        assert info["env"] == [
            "HOME",
            "LANG",
            "PATH",
            "PWD",  # bwrap's, for its --chdir /app
            "SHOPARENA_PROXY_SOCKET",
            "SHOPARENA_RESULT_PATH",
            "SHOPARENA_SESSION",
            "TMPDIR",
        ]
        assert info["cwd"] == "/app" and not Path(info["cwd"]).exists()
        assert info["argv"] == [os.path.join(info["cwd"], "snooping_miner.py")]

    # the same miner does report a reward when one is within reach (the check above can fail)
    _, run = run_on_query(agent, agent_catalog, "a reward card holder")
    assert run.model_outputs[0]["extra_info"]["found"] == ["problem_data"]


def test_malformed_steps_get_a_clear_error(agent_catalog, file_server):
    agent = miner("malformed_miner", file_server)
    _, run = run_on_query(agent, agent_catalog, "return a dict please")
    assert (
        run.error == "agent_main returned malformed steps: agent_main must return a list of steps, got dict"
    )
    assert run.model_outputs == [{"steps": "should have been a list"}]
    _, run = run_on_query(agent, agent_catalog, "return bad steps")
    assert run.error.startswith("agent_main returned malformed steps: ")
    assert "step 1: completion.message.tool_call.0.name: Field required" in run.error
    assert "step 2: completion: Field required" in run.error
    assert len(run.model_outputs) == 3


def test_a_claimed_recommendation_is_replayed_through_the_harness(agent_catalog, agent_problems, file_server):
    agent = miner("claiming_miner", file_server)
    query = agent_catalog.store.dict_by_ord(3)["title"] + " real"
    episode, run = run_on_query(agent, agent_catalog, query)
    assert run.error is None
    claimed = json.loads(run.model_outputs[0]["completion"]["message"]["tool_call"][0]["parameters"])
    assert episode.recommended_product_ids == [claimed["product_ids"]]
    assert [(c.name, c.origin, c.error) for c in episode.calls] == [
        ("find_product", "code", None),
        ("recommend_product", "code", None),
        ("terminate", "code", None),
    ]
    assert len(run.notes) == 2 and all("replayed on the episode with origin 'code'" in n for n in run.notes)

    # an invented id is replayed too, and the scorer (which checks ids against the catalogue) fails it
    problem = agent_problems[0]
    episode, run = run_on_problem(agent, agent_catalog, problem)
    assert episode.recommended_product_ids == ["no-such-product"]
    assert not score(agent_catalog, problem, episode).success


def test_a_claim_that_contradicts_the_recorded_call_changes_nothing(
    agent_catalog, file_server, file_title_query
):
    episode, run = run_on_query(miner("contradicting_miner", file_server), agent_catalog, file_title_query)
    assert run.error is None and episode.recommended_product_ids != ["123456789"]
    assert [c.name for c in episode.calls] == ["find_product", "recommend_product"]
    assert len(run.notes) == 1 and "the recorded call stands" in run.notes[0]


def test_memory_limit_and_a_vanishing_process(agent_catalog, file_server):
    _, run = run_on_query(miner("memory_hog_miner", file_server, address_space_mb=256), agent_catalog, "q")
    assert run.error.startswith("agent_main failed: MemoryError")
    _, run = run_on_query(miner("vanishing_miner", file_server), agent_catalog, "q")
    assert run.error == "the miner process ended without returning a result (exit status 3)"
    assert run.notes == []


def test_cpu_seconds_are_limited(agent_catalog, file_server):
    agent = miner("spinning_miner", file_server, cpu_s=1, timeout_s=20)
    started = time.monotonic()
    _, run = run_on_query(agent, agent_catalog, "q")
    assert run.error.startswith("the miner process ended without returning a result (killed by signal ")
    assert run.error.endswith("limits reached: cpu)")
    assert run.notes == ["sandbox: the miner reached its CPU-seconds limit (1 s) and was killed"]
    assert time.monotonic() - started < 10


@SANDBOXED
def test_an_unreachable_socket_fails_the_episode_closed(agent_catalog, agent_problems):
    """A socket the sandbox's uid may not connect to: the miner does not run, and the episode says why."""
    with (
        tempfile.TemporaryDirectory(prefix="fa-", dir="/tmp") as where,
        ToolServer(host=None, socket_path=Path(where) / "tools.sock") as private,  # mode 0600
    ):
        episode, run = run_on_problem(miner("good_miner", private), agent_catalog, agent_problems[0])
    assert run.error.startswith("cannot start the miner process: the sandbox is unavailable: the sandbox uid")
    assert "may not connect to" in run.error and episode.calls == []


def test_runs_in_parallel_share_one_server_and_stay_apart(agent_catalog, agent_problems, file_server):
    agent = miner("good_miner", file_server)
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda p: run_on_problem(agent, agent_catalog, p), agent_problems))
    for problem, (episode, run) in zip(agent_problems, results, strict=True):
        assert run.error is None and episode.terminated == "success"
        assert episode.problem_id == problem.problem_id and episode.calls[-1].name == "terminate"
        first_query = run.model_outputs[0]["completion"]["message"]["tool_call"][0]["parameters"]["q"]
        assert first_query in problem.query


def test_an_agent_without_a_server_owns_one(agent_catalog, file_title_query, file_server):
    agent = make_file_agent(str(MINERS / "noisy_miner.py"))
    _, run = run_on_query(agent, agent_catalog, file_title_query)
    own = agent.server()
    assert run.error is None and own is not file_server and own.running
    agent.close()
    assert not own.running
    shared = miner("noisy_miner", file_server)
    shared.close()
    assert file_server.running


# -- the step format -----------------------------------------------------------------------------------
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["completion", "message", "tool_call", "name", "think", "x"]), inner
        )
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_any_returned_value_parses_or_gets_a_step_format_error(value):
    try:
        steps = parse_steps(value)
    except StepFormatError as exc:
        assert str(exc)
    else:
        assert isinstance(value, list) and len(steps) == len(value)


def test_lenient_step_shapes_are_accepted():
    steps = parse_steps(
        [
            {
                "completion": {
                    "message": {"tool_call": {"name": "terminate", "parameters": '{"status": "success"}'}}
                }
            },
            {
                "completion": {"message": {"tool_call": None, "response": "hi"}, "content": "x"},
                "extra_info": {},
            },
        ]
    )
    assert steps[0].completion.message.tool_call[0].parameters == {"status": "success"}
    assert steps[1].completion.message.tool_call == []


@SANDBOXED
def test_replay_notes_reach_the_trajectory_record(agent_catalog, agent_problems, tmp_path):
    """What the harness did on a miner's behalf is part of the record, not only of the agent's report."""

    from shoparena.problems.io import write_problems

    problems_path = tmp_path / "problems.jsonl"
    write_problems(problems_path, agent_problems[:1])
    out = tmp_path / "run"
    run_eval(
        EvalConfig(
            catalog=agent_catalog.store.path.parent,
            problems=problems_path,
            agent=f"file:{MINERS / 'claiming_miner.py'}",
            options={"timeout_s": 30},
            out=out,
            executor="inline",
            similarity="lexical",
            bootstrap=10,
        )
    )
    record = json.loads((out / "trajectories.jsonl").read_text().splitlines()[0])
    assert any("replayed on the episode with origin 'code'" in n for n in record["outcome"]["notes"])


# -- the harness's own files, a Unix-socket server ----------------------------------------------------
@pytest.mark.parametrize("file_name", ["miner_sdk.py", "_shoparena_runner.py", "runner.py"])
def test_a_miner_named_like_a_harness_file_still_runs(
    tmp_path, file_name, agent_catalog, agent_problems, file_server
):
    path = tmp_path / file_name
    shutil.copy(MINERS / "good_miner.py", path)
    agent = make_file_agent(str(path), server=file_server)
    episode, run = run_on_problem(agent, agent_catalog, agent_problems[0])
    assert run.error is None and episode.terminated == "success"
    assert [c.name for c in episode.calls][-2:] == ["recommend_product", "terminate"]


def test_a_miner_reaches_tools_and_inference_on_a_server_listening_on_a_unix_socket_only(
    agent_catalog, agent_problems
):
    proxy = InferenceProxy()
    with (
        tempfile.TemporaryDirectory(prefix="fa-", dir="/tmp") as where,
        ToolServer(host=None, socket_path=Path(where) / "tools.sock", routers=[proxy.router]) as unix_only,
    ):
        assert unix_only.url.startswith("unix:///")
        with pytest.warns(NoSandboxWarning):
            agent = make_file_agent(
                str(MINERS / "chat_miner.py"), server=unix_only, inference=proxy, sandbox="none"
            )
        episode, run = run_on_problem(agent, agent_catalog, agent_problems[0])
    assert run.error is None and episode.terminated == "success"
    assert {c.origin for c in episode.calls} == {"llm"} and run.inference.served >= 2


def test_no_sandbox_is_loud_and_in_every_record(agent_catalog, agent_problems, tmp_path):
    """`sandbox=none` by explicit choice only: a warning on stderr when the agent is made and one note in
    every record; the miner still reaches its tools (over loopback TCP)."""

    from shoparena.problems.io import write_problems

    problems_path = tmp_path / "problems.jsonl"
    write_problems(problems_path, agent_problems[:2])
    out = tmp_path / "run"
    with pytest.warns(NoSandboxWarning, match="file agent: sandbox 'none': miner files run unconfined"):
        make_file_agent(str(MINERS / "good_miner.py"), sandbox="none")
    make = f"from shoparena.agents.miner.file_agent import make_file_agent as m; m({str(MINERS / 'good_miner.py')!r}, sandbox='none')"
    done = subprocess.run([sys.executable, "-c", make], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "NoSandboxWarning: file agent: sandbox 'none'" in done.stderr  # on stderr
    with pytest.warns(NoSandboxWarning):
        run_eval(
            EvalConfig(
                catalog=agent_catalog.store.path.parent,
                problems=problems_path,
                agent=f"file:{MINERS / 'good_miner.py'}",
                out=out,
                timeout=30,
                sandbox="none",
                executor="inline",
                similarity="lexical",
                bootstrap=10,
            )
        )
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert len(records) == 2
    for record in records:
        assert record["outcome"]["error"] is None and record["outcome"]["terminated"] == "success"
        assert any(
            note.startswith("sandbox 'none': the program runs as this user")
            for note in record["outcome"]["notes"]
        )


@SANDBOXED
def test_the_sdk_refuses_an_address_it_cannot_use(tmp_path, monkeypatch, agent_catalog):
    agent = miner("good_miner", None)
    bad = tmp_path / "bad_url_miner.py"
    bad.write_text(
        "import os, miner_sdk\n"
        "def agent_main(problem_data):\n"
        "    os.environ['SHOPARENA_TOOL_URL'] = 'ftp://x'\n"
        "    miner_sdk.list_tools()\n"
    )
    _, run = run_on_query(make_file_agent(str(bad), server=agent.server()), agent_catalog, "q")
    agent.close()
    assert "SHOPARENA_TOOL_URL must be http://HOST:PORT or unix:///PATH, got 'ftp://x'" in run.error
