"""The loop's console shows the stage lines only (issue 25): whatever else is printed while it runs —
Python prints (TRL's loss dicts), warnings, writes straight to descriptors 1 and 2 (native code, bars),
child processes (servers, validators) — lands in the loop's log file instead."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

from shoparena.loop.console_log import library_output_to
from shoparena.records.user_warning import one_line_warning


def _warn(message: str) -> None:
    """A warning shown as the CLI shows them (pytest would otherwise record it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = one_line_warning
        warnings.warn(message, UserWarning, stacklevel=2)


NOISE = [
    ("print", lambda: print({"loss": 1.234, "grad_norm": 0.5})),
    ("stderr", lambda: print("Loading weights: 100%|████| 3/3", file=sys.stderr)),
    ("warning", lambda: _warn("TRL: padding_free is deprecated")),
    ("fd1", lambda: os.write(1, b"native line on fd 1\n")),
    ("fd2", lambda: os.write(2, b"native line on fd 2\n")),
    (
        "child",
        lambda: subprocess.run([sys.executable, "-c", "print('INFO: 127.0.0.1 GET /v1/x 200')"], check=True),
    ),
]


def test_only_the_stage_lines_reach_the_console(tmp_path, capfd):
    log = tmp_path / "out" / "loop.log"
    with library_output_to(log, print) as say:
        say("[1/7] season → out/01-season")
        for _name, make_noise in NOISE:
            make_noise()
        say("    season: done in 3 s")
    captured = capfd.readouterr()
    assert captured.out.splitlines() == ["[1/7] season → out/01-season", "    season: done in 3 s"]
    assert captured.err == ""
    logged = log.read_text()
    for expected in ("'loss': 1.234", "Loading weights", "padding_free is deprecated", "native line on fd 1",
                     "native line on fd 2", "GET /v1/x 200"):  # fmt: skip
        assert expected in logged
    print("after the block")  # the console is the console again
    assert capfd.readouterr().out == "after the block\n"


def test_an_error_inside_still_restores_the_console(tmp_path, capfd):
    try:
        with library_output_to(tmp_path / "loop.log", print):
            raise RuntimeError("stage failed")
    except RuntimeError:
        pass
    print("visible")
    os.write(2, b"also visible\n")
    captured = capfd.readouterr()
    assert captured.out == "visible\n" and captured.err == "also visible\n"
