"""`EvalConfig`: every option checked where the config is built, the agent's options derived from it,
and the run's and the worker's views derived from it (run.json keeping the shape earlier runs wrote)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Literal, get_args

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field, ValidationError

from shoparena.eval.config import (
    AgentOption,
    EvalConfig,
    Profile,
    RunConfig,
    WorkerConfig,
    cli_flag,
)
from shoparena.harness.tool_specs import PROFILES

OLD_RUN_JSON = Path(__file__).parent / "data" / "run-v1.json"
"""run.json of `make demo`'s agentic run, written before the config was one model."""


@pytest.fixture
def base(small_catalog_dir, tmp_path) -> dict:
    problems = tmp_path / "problems.jsonl"
    problems.write_text('{"query": "a lamp", "reward": {"product_id": "1", "title": ["lamp"]}}\n')
    return {
        "catalog": small_catalog_dir,
        "problems": problems,
        "agent": "reference:agentic",
        "out": tmp_path / "run",
    }


def test_the_profile_choices_are_the_harness_profiles():
    assert set(get_args(Profile)) == set(PROFILES)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("step_cap", 0, "greater than or equal to 1"),
        ("step_cap", -5, "greater than or equal to 1"),
        ("timeout", math.nan, "finite number"),
        ("timeout", math.inf, "finite number"),
        ("timeout", -1.0, "greater than 0"),
        ("timeout", 0, "greater than 0"),
        ("samples", 0, "greater than or equal to 1"),
        ("workers", 0, "greater than or equal to 1"),
        ("limit", 0, "greater than or equal to 1"),
        ("temperature", math.nan, "finite number"),
        ("max_tokens", 0, "greater than or equal to 1"),
        ("protocol", "xml", "unknown protocol 'xml'"),
        ("agent", "reference", "expected KIND:TARGET"),
        ("executor", "threads", "'process', 'ray' or 'inline'"),
    ],
)
def test_a_bad_value_is_refused_when_the_config_is_built(base, field, value, message):
    with pytest.raises(ValidationError, match=message) as caught:
        EvalConfig(**{**base, field: value})
    assert caught.value.errors()[0]["loc"] == (field,)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_any_timeout_is_a_finite_positive_number_or_refused(tmp_path_factory, value):
    root = tmp_path_factory.mktemp("t")
    (root / "p.jsonl").write_text("{}\n")
    fields = {"catalog": root, "problems": root / "p.jsonl", "agent": "reference:agentic", "out": root / "r"}
    try:
        config = EvalConfig(**fields, timeout=value)
    except ValidationError:
        assert not (math.isfinite(value) and value > 0)
    else:
        assert math.isfinite(config.timeout) and config.timeout > 0


def test_missing_inputs_are_refused(base, tmp_path):
    with pytest.raises(ValidationError, match="is not a directory"):
        EvalConfig(**{**base, "catalog": tmp_path / "nowhere"})
    with pytest.raises(ValidationError, match="is not a file"):
        EvalConfig(**{**base, "problems": tmp_path / "nowhere.jsonl"})
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(ValidationError, match="is a file; a run directory is a directory"):
        EvalConfig(**{**base, "out": tmp_path / "a-file"})


def test_each_kind_gets_the_generic_options_under_its_own_names(base):
    openai = EvalConfig(
        **{**base, "agent": "openai:m"},
        base_url="http://x/v1",
        api_key="sk-1",
        temperature=0.5,
        max_tokens=64,
    )
    assert openai.agent_options() == {
        "base_url": "http://x/v1",
        "api_key": "sk-1",
        "temperature": 0.5,
        "max_tokens": 64,
    }
    assert "sk-1" not in repr(openai)  # the key is a secret everywhere but the agent's options
    hf = EvalConfig(**{**base, "agent": "hf:./ckpt"}, max_tokens=64, protocol="tags", options=["device=cpu"])
    assert hf.agent_options() == {"max_new_tokens": 64, "device": "cpu", "protocol": "upstream"}
    miner = EvalConfig(**{**base, "agent": "file:m.py"}, timeout=30)
    assert miner.agent_options() == {"timeout_s": 30} and miner.timeout == 30
    assert EvalConfig(**base, timeout=30).agent_options() == {}  # a reference agent has no timeout option


def test_options_win_over_the_generic_fields_and_the_protocol(base):
    config = EvalConfig(
        **{**base, "agent": "openai:m"},
        temperature=0.5,
        protocol="qwen",
        options={"temperature": 1, "protocol": "openai"},
    )
    assert config.agent_options() == {"temperature": 1, "protocol": "openai"}


@pytest.mark.parametrize(
    ("agent", "field"),
    [
        ("reference:agentic", "base_url"),
        ("file:m.py", "api_key"),
        ("hf:x", "base_url"),
        ("file:m.py", "temperature"),
    ],
)
def test_an_option_meant_for_other_kinds_is_refused(base, agent, field):
    with pytest.raises(ValidationError, match=f"{cli_flag(field)} applies to"):
        EvalConfig(**{**base, "agent": agent}, **{field: "x" if field in ("base_url", "api_key") else 0.5})


def test_a_file_agent_refuses_a_protocol(base):
    with pytest.raises(ValidationError, match="--protocol does not apply to file: agents"):
        EvalConfig(**{**base, "agent": "file:m.py"}, protocol="openai")


def test_replace_checks_the_changes_like_a_new_config(base):
    config = EvalConfig(**base, workers=2)
    entrant = config.replace(agent="reference:pipeline", out=config.out / "pipeline")
    assert entrant.workers == 2 and entrant.agent == "reference:pipeline"
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        config.replace(step_cap=0)


def test_the_worker_view_is_derived_from_the_config(base):
    config = EvalConfig(**{**base, "agent": "file:m.py"}, timeout=12, step_cap=9, mode="strict")
    worker = WorkerConfig.of(config, "run1", {"x": "y:z"})
    assert worker.agent_options == {"timeout_s": 12} and worker.episode_timeout_s == 12
    assert (worker.step_cap, worker.scoring_mode, worker.run_id, worker.agent_kinds) == (
        9,
        "strict",
        "run1",
        {"x": "y:z"},
    )


def test_an_old_run_json_reads_and_writes_back_the_same_bytes():
    data = OLD_RUN_JSON.read_bytes()
    assert orjson.dumps(
        RunConfig.model_validate_json(data).model_dump(mode="json"), option=orjson.OPT_INDENT_2
    ) == data.rstrip(b"\n")


def test_an_old_run_with_a_protocol_alias_resumes_as_that_protocol():
    data = orjson.loads(OLD_RUN_JSON.read_bytes())
    old = RunConfig.model_validate({**data, "protocol": "tags", "agent_options": {"protocol": "tags"}})
    new = RunConfig.model_validate(
        {**data, "protocol": "upstream", "agent_options": {"protocol": "upstream"}}
    )
    assert old.differences(new) == []


class SandboxedConfig(EvalConfig):
    """What adding an option takes: one field (here `sandbox`, for file agents)."""

    sandbox: Annotated[Literal["bwrap", "container", "none"] | None, AgentOption({"file": "sandbox"})] = (
        Field(None, description="How file agents are isolated.")
    )


def test_adding_an_option_is_one_field(base):
    config = SandboxedConfig(**{**base, "agent": "file:m.py"}, sandbox="bwrap")
    assert config.agent_options() == {"sandbox": "bwrap"}
    with pytest.raises(ValidationError, match="--sandbox applies to file: agents only"):
        SandboxedConfig(**base, sandbox="none")
