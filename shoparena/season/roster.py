"""The season's miners: a fixed roster of real miner files (package data in `miners/`, or rendered from
one of them: see `variants`), in the order `--miners N` takes them.

Each entry says what the file is for and what admission must do with it, so a test can check every
file with the real admission and the season can tell an intended rejection from a surprise. Some
miners resubmit an improved file on a later day (under the arena's cooldown).

| slot | file | kind |
|---|---|---|
| 1 | agentic_model | axis A: the model (inference proxy) emits every tool call |
| 2 | narrated_pipeline | axis B: code calls the tools, the model only narrates |
| 3 | network_exfil | malicious: network (rejected) |
| 4 | crashing | crashes on every problem; resubmits crash_fixed on day 2 |
| 5 | reference_agentic | the reference agentic policy, scripted; resubmits tagged_agentic (a model loop in the upstream text protocol) on day 3 |
| 6 | first_hit | weakest honest baseline; resubmits keyword_verify on day 3 |
| 7 | shell_probe | malicious: os/subprocess (rejected) |
| 8 | wide_pipeline | axis B, wider search and verification |
| 9 | eval_payload | malicious: eval (rejected) |
| 10 | sleeper | never returns: killed at the per-problem timeout |
| 11 | answer_table | malicious: hard-coded answers (rejected, integrity) |
| 12 | frugal_agentic | axis A on a four-turn budget |
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shoparena.season.variants import Variant, render

MINERS_DIR = Path(__file__).resolve().parent / "miners"


class Resubmission(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    day: int = Field(ge=1)
    """The season day (1-based) on which the miner submits `file`."""
    file: str


class MinerSpec(BaseModel):
    """One miner of the roster: its first file, what admission must say, and its later resubmissions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    slot: int = Field(ge=1)
    file: str
    """Stem of a file in `miners/`, or of the file `variant` renders."""
    variant: Variant | None = None
    """Set when `file` is made from another miner file with other constants."""
    kind: Literal["honest", "faulty", "malicious"]
    admitted: bool
    """What admission must do with `file` (and with every resubmission: those are honest files)."""
    rule: str | None = None
    """For a file admission must reject: a rule it must report."""
    axis: Literal["A", "B"] | None = None
    """The corpus axis its trajectories should land on (None: it never runs, or is not meant to)."""
    about: str
    resubmissions: tuple[Resubmission, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.slot:02d}-{self.file}"


ROSTER: tuple[MinerSpec, ...] = (
    MinerSpec(slot=1, file="agentic_model", kind="honest", admitted=True, axis="A",
              about="axis A: the model (inference proxy) emits every tool call"),
    MinerSpec(slot=2, file="narrated_pipeline", kind="honest", admitted=True, axis="B",
              about="axis B: code calls the tools, the model only narrates"),
    MinerSpec(slot=3, file="network_exfil", kind="malicious", admitted=False,
              rule="security.banned_member", about="sends queries to an outside server"),
    MinerSpec(slot=4, file="crashing", kind="faulty", admitted=True,
              about="crashes on every problem, then resubmits a fixed file",
              resubmissions=(Resubmission(day=2, file="crash_fixed"),)),
    MinerSpec(slot=5, file="reference_agentic", kind="honest", admitted=True, axis="B",
              about="the reference agentic policy, scripted (its calls are verified as code), "
                    "later a real model loop",
              variant=Variant(template="reference_agentic", includes=("shoparena.agents.reference.wording",)),
              resubmissions=(Resubmission(day=3, file="tagged_agentic"),)),
    MinerSpec(slot=6, file="first_hit", kind="honest", admitted=True, axis="B",
              about="weakest honest baseline, later improved",
              resubmissions=(Resubmission(day=3, file="keyword_verify"),)),
    MinerSpec(slot=7, file="shell_probe", kind="malicious", admitted=False,
              rule="security.banned_import", about="shells out with os.system and subprocess"),
    MinerSpec(slot=8, file="wide_pipeline", kind="honest", admitted=True, axis="B",
              about="axis B with two result pages and ten verified candidates",
              variant=Variant(
                  template="narrated_pipeline", constants={"MAX_STEPS": 24, "VIEW_BATCH": 10, "PAGES": 2},
                  summary="Axis B, wider search: the narrated pipeline reading two result pages per item "
                          "and verifying ten\ncandidates instead of six (a search-and-verification variant "
                          "with a larger step budget).")),
    MinerSpec(slot=9, file="eval_payload", kind="malicious", admitted=False,
              rule="security.banned_call", about="runs code from a string with eval"),
    MinerSpec(slot=10, file="sleeper", kind="faulty", admitted=True,
              about="never returns: killed at the per-problem timeout"),
    MinerSpec(slot=11, file="answer_table", kind="malicious", admitted=False,
              rule="integrity.answer_table", about="hard-coded answers by query text"),
    MinerSpec(slot=12, file="frugal_agentic", kind="honest", admitted=True, axis="A",
              about="axis A on a four-turn budget",
              variant=Variant(
                  template="agentic_model", constants={"MAX_TURNS": 4},
                  summary="Axis A on a tight budget: the same model-driven chat loop as agentic_model, cut "
                          "to four turns, so\nthe model often runs out before it has checked enough "
                          "candidates (a step-budget variant).")),
)  # fmt: skip
FAVOURITE_SLOT = 2
"""The dishonest validator's favourite: the narrated pipeline, which qualifies and races honestly but is
not the best — exactly the miner a bribed validator would want to lift."""


def roster(n: int) -> list[MinerSpec]:
    """The first `n` miners of the roster."""
    if not 1 <= n <= len(ROSTER):
        raise ValueError(f"--miners {n}: the roster has 1 to {len(ROSTER)} miners")
    return list(ROSTER[:n])


VARIANTS: dict[str, Variant] = {spec.file: spec.variant for spec in ROSTER if spec.variant}
"""The roster's rendered files by stem."""


def template_source(stem: str) -> str:
    """The text of `miners/STEM.py` (package data), a miner file as it is written on disk."""
    path = MINERS_DIR / f"{stem}.py"
    if not path.is_file():
        raise ValueError(f"no miner file {stem!r} in {MINERS_DIR}")
    return path.read_text(encoding="utf-8")


def miner_source(stem: str) -> str:
    """The text the season submits as miner file STEM: the file on disk, or its rendered variant.

    Every reader of a season miner file (the season, `miner new`, the loop, the tests) reads it here."""
    variant = VARIANTS.get(stem)
    return template_source(stem) if variant is None else render_variant(variant)


def render_variant(variant: Variant) -> str:
    """The miner file `variant` makes of its template."""
    return render(variant.template, template_source(variant.template), variant)
