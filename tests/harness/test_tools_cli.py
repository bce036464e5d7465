"""`shoparena tools`: the schemas of a profile as JSON or a table."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.harness import PROFILES, tool_schemas

runner = CliRunner()


def test_tools_json_is_exactly_the_profile_schemas():
    for profile in PROFILES:
        result = runner.invoke(app, ["tools", "--profile", profile, "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout) == tool_schemas(profile)


def test_tools_table_lists_tools_and_parameters():
    result = runner.invoke(app, ["tools", "--profile", "oro7"])
    assert result.exit_code == 0, result.output
    for name in PROFILES["oro7"]:
        assert name in result.stdout
    assert "product_queries" in result.stdout and "step cap 25" in result.stdout
    assert "view_shop_information" not in result.stdout


def test_tools_unknown_profile_fails_cleanly():
    result = runner.invoke(app, ["tools", "--profile", "all"])
    assert result.exit_code == 2
    assert "unknown profile 'all'" in result.output
