"""Issue 22's admission attacks through the command a miner runs before submitting (`shoparena arena
check`, the server's own admission): each file was admitted before the rules of its family existed;
now each is rejected with its family's rule, and every finding names a line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from tests.admission.corpus import CORPUS, expected_rules

runner = CliRunner()
ISSUE_22 = [
    "singledispatch_runtime_annotation",
    "dataclass_string_annotation",
    "forward_ref_evaluate",
    "match_args_runtime",
    "subclasshook_defined",
    "etree_write",
    "path_replace",
    "traceback_walk_stack",
    "faulthandler_tracemalloc",
    "format_runtime_field",
    "format_map_runtime_template",
    "process_pool_executor",
    "setattr_module_folded",
    "delattr_class_folded",
    "hidden_letter_table",
    "xor_byte_table",
    "packed_letter_string",
    "position_keyed_table",
    "xor_rows_loop",
    "for_loop_keyed_decoder",
]


@pytest.mark.parametrize("stem", ISSUE_22)
def test_each_issue_22_attack_is_rejected_by_arena_check_with_its_rule_and_line(stem):
    path = CORPUS / "adversarial" / f"{stem}.py"
    result = runner.invoke(app, ["arena", "check", str(path), "--json"])
    assert result.exit_code == 1, result.output
    body = json.loads(result.stdout)
    assert body["status"] == "rejected"
    assert expected_rules(path) <= {v["rule"] for v in body["violations"]}
    assert all(isinstance(v["line"], int) and v["line"] >= 1 for v in body["violations"])
