"""`shoparena arena check`: exit 0 admitted, 1 rejected with the violations, 2 on usage errors."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from shoparena.cli import app
from tests.admission.corpus import ADVERSARIAL, BENIGN_FILES

runner = CliRunner()


def test_an_admitted_file_exits_zero():
    result = runner.invoke(app, ["arena", "check", str(BENIGN_FILES[0])])
    assert result.exit_code == 0, result.output
    assert "admitted" in result.output


def test_a_rejected_file_exits_one_with_a_table_naming_rule_and_line():
    path = next(p for p in ADVERSARIAL if p.stem == "os_alias_system")
    result = runner.invoke(app, ["arena", "check", str(path)], terminal_width=200)
    assert result.exit_code == 1
    assert "security.banned_member" in result.output and "os.system" in result.output
    assert "7:5" in result.output  # line:col of `o.system`


def test_json_output_is_the_servers_rejection_shape():
    path = next(p for p in ADVERSARIAL if p.stem == "reversed_slice")
    result = runner.invoke(app, ["arena", "check", str(path), "--json"])
    assert result.exit_code == 1
    body = json.loads(result.stdout)
    assert body["status"] == "rejected"
    assert body["violations"][0].keys() == {"rule", "kind", "line", "col", "message"}
    assert {"rule": "integrity.assembled_id", "kind": "integrity"}.items() <= body["violations"][0].items()
    admitted = runner.invoke(app, ["arena", "check", str(BENIGN_FILES[0]), "--json"])
    assert admitted.exit_code == 0 and json.loads(admitted.stdout) == {"status": "admitted", "violations": []}


def test_usage_errors_exit_two_without_a_traceback(tmp_path):
    missing = runner.invoke(app, ["arena", "check", str(tmp_path / "nope.py")])
    assert missing.exit_code == 2 and "no such file" in missing.output
    directory = runner.invoke(app, ["arena", "check", str(tmp_path)])
    assert directory.exit_code == 2
    assert runner.invoke(app, ["arena", "check"]).exit_code == 2
    assert "Traceback" not in missing.output + directory.output


def test_undecodable_files_are_a_format_rejection_not_a_crash(tmp_path):
    path = tmp_path / "agent.py"
    path.write_bytes(b"def agent_main(problem_data):\n    return '\xff'\n")
    result = runner.invoke(app, ["arena", "check", str(path), "--json"])
    assert result.exit_code == 1
    [found] = json.loads(result.stdout)["violations"]
    assert (found["rule"], found["line"]) == ("format.encoding", 2)
