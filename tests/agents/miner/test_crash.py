"""`parse_crash`: an episode's error read apart — the miner's own frames told from the harness's (the
runner, the SDK), under the miner's file name, for the error texts the file agent really writes."""

from __future__ import annotations

import pytest

from shoparena.agents.miner.crash import parse_crash

SANDBOXED = """agent_main failed: TypeError: list indices must be integers or slices, not str
Traceback (most recent call last):
  File "/app/_shoparena_runner.py", line 117, in main
    envelope = {"ok": True, "steps": agent_main(problem_data)}
                                     ^^^^^^^^^^^^^^^^^^^^^^^^
  File "/app/agent.py", line 9, in agent_main
    best = hits["best"]
           ~~~~^^^^^^^^
TypeError: list indices must be integers or slices, not str"""
THROUGH_THE_SDK = """agent_main failed: RuntimeError: tool refused
Traceback (most recent call last):
  File "/tmp/x/app/_shoparena_runner.py", line 117, in main
    envelope = {"ok": True, "steps": agent_main(problem_data)}
  File "/tmp/x/app/bot.py", line 4, in agent_main
    return helper(problem_data)
  File "/tmp/x/app/bot.py", line 8, in helper
    miner_sdk.call_tool("nope")
  File "/tmp/x/app/_shoparena_sdk.py", line 60, in call_tool
    raise RuntimeError("tool refused")
RuntimeError: tool refused
--- stderr (last 4096 chars) ---
printed by the miner"""
CHAINED = """agent_main failed: ValueError: second
Traceback (most recent call last):
  File "/app/miner.py", line 3, in first
    raise KeyError("first")
KeyError: 'first'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/app/_shoparena_runner.py", line 117, in main
    envelope = {"ok": True, "steps": agent_main(problem_data)}
  File "/app/miner.py", line 7, in agent_main
    raise ValueError("second")
ValueError: second"""
IMPORT_TIME = """agent_main failed: ZeroDivisionError: division by zero
Traceback (most recent call last):
  File "/app/_shoparena_runner.py", line 110, in main
    module = _load("miner_agent", sys.argv[0])
  File "/app/_shoparena_runner.py", line 66, in _load
    spec.loader.exec_module(module)
  File "<frozen importlib._bootstrap_external>", line 999, in exec_module
  File "/app/bot.py", line 2, in <module>
    RATE = 1 / 0
ZeroDivisionError: division by zero"""


@pytest.mark.parametrize(
    ("error", "where", "exception", "miner_lines"),
    [
        (
            SANDBOXED,
            "agent.py:9 in agent_main",
            "TypeError: list indices must be integers or slices, not str",
            1,
        ),
        (THROUGH_THE_SDK, "bot.py:8 in helper", "RuntimeError: tool refused", 2),
        (CHAINED, "miner.py:7 in agent_main", "ValueError: second", 1),
        (IMPORT_TIME, "bot.py:2 in <module>", "ZeroDivisionError: division by zero", 1),
        ("timeout: agent_main did not return within 300 s", None, None, 0),
        ("agent crashed: RuntimeError: scripted crash", None, None, 0),
    ],
)
def test_the_miners_own_frames_are_told_from_the_harness(error, where, exception, miner_lines):
    crash = parse_crash(error)
    assert crash.summary == error.splitlines()[0]
    assert crash.where() == where and crash.exception == exception
    assert len(crash.miner_frames) == miner_lines
    assert all("_shoparena_" not in frame.file for frame in crash.miner_frames)


def test_the_miners_frames_print_under_their_own_file_name():
    text = parse_crash(SANDBOXED).miner_text("my_bot.py")
    assert text.splitlines() == [
        '  File "my_bot.py", line 9, in agent_main',
        '    best = hits["best"]',
        "           ~~~~^^^^^^^^",
        "TypeError: list indices must be integers or slices, not str",
    ]
    assert parse_crash(THROUGH_THE_SDK).where("bot.py") == "bot.py:8 in helper"
