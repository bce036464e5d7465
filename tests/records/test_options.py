"""`fields_of` offers a config's fields elsewhere (a command's options, the loop's parts) without
declaring them again: type, bounds, default and description come along, changes apply only where asked."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shoparena.corpus.config import CorpusConfig
from shoparena.loop.config import CorpusPart
from shoparena.records.options import CliFlag, fields_of


def test_a_picked_field_keeps_its_bounds_and_takes_the_given_changes():
    picked = fields_of(
        CorpusConfig,
        "min_quality",
        ("successful", "require_success"),
        name="Picked",
        changes={"min_quality": {"default": 0.7}, "successful": {"flag": CliFlag(flag="--ok")}},
    )
    assert list(picked.model_fields) == ["min_quality", "successful"]
    assert picked().min_quality == 0.7
    with pytest.raises(ValidationError):
        picked(min_quality=1.5)  # CorpusConfig's le=1.0 came along
    with pytest.raises(ValidationError):
        picked(unknown=1)
    flags = [m for m in picked.model_fields["successful"].metadata if isinstance(m, CliFlag)]
    assert flags == [CliFlag(flag="--ok")]
    assert (
        picked.model_fields["successful"].description
        == CorpusConfig.model_fields["require_success"].description
    )


def test_a_change_to_anything_but_default_description_or_flag_is_refused():
    with pytest.raises(TypeError, match="ge"):
        fields_of(CorpusConfig, "seed", name="Bad", changes={"seed": {"ge": 1}})


def test_the_loops_corpus_part_is_corpus_builds_fields_with_the_loops_defaults():
    part = CorpusPart()
    options = part.build_options()
    assert set(options) <= set(CorpusConfig.model_fields)
    assert options["eval_size"] == 4 and "rewrite" not in options
    for name in options:
        assert CorpusPart.model_fields[name].description == CorpusConfig.model_fields[name].description
    with pytest.raises(ValidationError):
        CorpusPart(min_quality=2)
