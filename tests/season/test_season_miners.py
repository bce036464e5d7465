"""The season's roster: every miner file is what the roster says it is — admitted or rejected by the
real admission (through `shoparena arena check`, the CLI a miner runs), with the rule it names."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.season.roster import MINERS_DIR, ROSTER, miner_files, roster

runner = CliRunner()


def check(stem: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["arena", "check", str(MINERS_DIR / f"{stem}.py"), "--json"])
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize("spec", ROSTER, ids=lambda spec: spec.name)
def test_each_roster_file_meets_admission_as_intended(spec):
    code, verdict = check(spec.file)
    if spec.admitted:
        assert (code, verdict["status"]) == (0, "admitted"), verdict["violations"]
    else:
        assert (code, verdict["status"]) == (1, "rejected")
        assert spec.rule in {v["rule"] for v in verdict["violations"]}, verdict["violations"]


@pytest.mark.parametrize(
    "stem", [r.file for spec in ROSTER for r in spec.resubmissions], ids=lambda stem: stem
)
def test_every_resubmission_is_admitted(stem):
    code, verdict = check(stem)
    assert (code, verdict["status"]) == (0, "admitted"), verdict["violations"]


def test_the_roster_is_twelve_distinct_files_with_every_kind():
    assert len(ROSTER) == 12
    assert len(set(miner_files())) == len(miner_files()) >= 12
    assert [spec.slot for spec in ROSTER] == list(range(1, 13))
    assert {spec.kind for spec in ROSTER} == {"honest", "faulty", "malicious"}
    assert {spec.axis for spec in ROSTER if spec.axis} == {"A", "B"}
    rules = {spec.rule.split(".")[0] for spec in ROSTER if spec.rule}
    assert rules == {"security", "integrity"}
    assert sorted(p.stem for p in MINERS_DIR.glob("*.py")) == sorted(miner_files())


def test_miners_n_takes_the_first_n_and_refuses_other_sizes():
    assert [s.file for s in roster(3)] == ["agentic_model", "narrated_pipeline", "network_exfil"]
    for bad in (0, 13):
        with pytest.raises(ValueError, match="roster"):
            roster(bad)
