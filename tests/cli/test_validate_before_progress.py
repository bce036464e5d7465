"""A bad input fails before any progress bar is drawn (issue 25): the user sees one error line, not an
empty bar followed by it."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from shoparena.cli import app

BAR = "━"
CASES = [
    (["catalog", "build", "--from", "{tmp}/nope.jsonl", "--out", "{tmp}/cat"], "nope.jsonl: no such file"),
    (["catalog", "build", "--from", "{tmp}", "--out", "{tmp}/cat"], "is a directory"),
    (
        ["corpus", "build", "--input", "{tmp}/nope", "--out", "{tmp}/corpus"],
        "input {tmp}/nope does not exist",
    ),
]


@pytest.mark.parametrize(("args", "message"), CASES, ids=["catalog-missing", "catalog-dir", "corpus-missing"])
def test_a_bad_input_fails_before_the_progress_bar(args, message, tmp_path):
    result = CliRunner().invoke(app, [a.format(tmp=tmp_path) for a in args], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert message.format(tmp=tmp_path) in result.output
    assert BAR not in result.output
