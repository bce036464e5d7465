"""The season's roster: every miner file is what the roster says it is — admitted or rejected by the
real admission (through `shoparena arena check`, the CLI a miner runs), with the rule it names."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.season.roster import MINERS_DIR, ROSTER, VARIANTS, miner_source, roster
from shoparena.season.roster import template_source as miner_source_template
from shoparena.season.variants import Variant, included_source, render

runner = CliRunner()


def miner_files() -> list[str]:
    """Every miner file stem the roster uses (first files and resubmissions)."""
    return [stem for spec in ROSTER for stem in (spec.file, *(r.file for r in spec.resubmissions))]


def check(stem: str, directory) -> tuple[int, dict]:
    path = directory / f"{stem}.py"
    path.write_text(miner_source(stem), encoding="utf-8")
    result = runner.invoke(app, ["arena", "check", str(path), "--json"])
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize("spec", ROSTER, ids=lambda spec: spec.name)
def test_each_roster_file_meets_admission_as_intended(spec, tmp_path):
    code, verdict = check(spec.file, tmp_path)
    if spec.admitted:
        assert (code, verdict["status"]) == (0, "admitted"), verdict["violations"]
    else:
        assert (code, verdict["status"]) == (1, "rejected")
        assert spec.rule in {v["rule"] for v in verdict["violations"]}, verdict["violations"]


@pytest.mark.parametrize(
    "stem", [r.file for spec in ROSTER for r in spec.resubmissions], ids=lambda stem: stem
)
def test_every_resubmission_is_admitted(stem, tmp_path):
    code, verdict = check(stem, tmp_path)
    assert (code, verdict["status"]) == (0, "admitted"), verdict["violations"]


def test_the_roster_is_twelve_distinct_files_with_every_kind():
    assert len(ROSTER) == 12
    assert len(set(miner_files())) == len(miner_files()) >= 12
    assert [spec.slot for spec in ROSTER] == list(range(1, 13))
    assert {spec.kind for spec in ROSTER} == {"honest", "faulty", "malicious"}
    assert {spec.axis for spec in ROSTER if spec.axis} == {"A", "B"}
    rules = {spec.rule.split(".")[0] for spec in ROSTER if spec.rule}
    assert rules == {"security", "integrity"}
    on_disk = {p.stem for p in MINERS_DIR.glob("*.py")}
    assert on_disk == set(miner_files()) - set(VARIANTS) | {v.template for v in VARIANTS.values()}


@pytest.mark.parametrize("stem", sorted(stem for stem, v in VARIANTS.items() if not v.includes))
def test_a_variant_is_its_template_but_for_its_constants_and_docstring_summary(stem):
    variant = VARIANTS[stem]
    rendered, template = ast.parse(miner_source(stem)), ast.parse(miner_source(variant.template))
    values = {}
    for ours, theirs in zip(rendered.body, template.body, strict=True):
        if isinstance(ours, ast.Assign) and ours.targets[0].id in variant.constants:
            values[ours.targets[0].id] = ast.literal_eval(ours.value)
        elif ours is rendered.body[0]:
            doc = ast.get_docstring(rendered, clean=False)
            assert doc.startswith(variant.summary)
            assert doc.removeprefix(variant.summary) in ast.get_docstring(template, clean=False)
        else:
            assert ast.dump(ours) == ast.dump(theirs)
    assert values == variant.constants


def test_the_reference_miner_reads_queries_by_the_reference_agents_own_rules():
    from shoparena.agents.reference import wording

    rendered = miner_source("reference_agentic")
    marker = "# include: shoparena.agents.reference.wording\n"
    assert marker not in rendered and marker in miner_source_template("reference_agentic")
    functions = {n.name: ast.unparse(n) for n in ast.parse(rendered).body if isinstance(n, ast.FunctionDef)}
    source = Path(wording.__file__).read_text(encoding="utf-8")
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            assert functions[node.name] == ast.unparse(node), node.name
    # the rendered file runs the module's rules as they are: same answers on a voucher query
    namespace: dict = {}
    exec(
        compile(
            "import re\n" + included_source("t", "import re", "shoparena.agents.reference.wording"),
            "w",
            "exec",
        ),
        namespace,
    )
    query = "Find a shop that offers these items: (1) a lamp under 300 pesos; (2) a red mug. My budget is only `900`"
    assert namespace["request_phrases"](query, "shop") == wording.request_phrases(query, "shop")


def test_an_included_module_needs_its_imports_in_the_template():
    with pytest.raises(ValueError, match="needs `import re`"):
        included_source("t", "import json", "shoparena.agents.reference.wording")


def test_a_variant_names_only_constants_its_template_has():
    source = '''"""Doc."""\n\nMODEL = "a"\nTURNS = 3\n'''
    rendered = render("t", source, Variant(template="t", constants={"MODEL": "b"}, summary="Other."))
    assert rendered == '''"""Other."""\n\nMODEL = "b"\nTURNS = 3\n'''
    with pytest.raises(ValueError, match="miner template t: no top-level constant STEPS"):
        render("t", source, Variant(template="t", constants={"STEPS": 4}))


def test_miners_n_takes_the_first_n_and_refuses_other_sizes():
    assert [s.file for s in roster(3)] == ["agentic_model", "narrated_pipeline", "network_exfil"]
    for bad in (0, 13):
        with pytest.raises(ValueError, match="roster"):
            roster(bad)
