"""The admission corpora: hostile files that must be rejected (each names the rule it must trip in an
`# expect:` header) and realistic agents that must be admitted."""

from __future__ import annotations

import re
from pathlib import Path

from shoparena.season.roster import miner_source

CORPUS = Path(__file__).resolve().parent / "admission_corpus"
ADVERSARIAL = sorted((CORPUS / "adversarial").glob("*.py"))
BENIGN_FILES = sorted((CORPUS / "benign").glob("*.py"))
SEASON_BENIGN = ("narrated_pipeline", "reference_agentic")
"""Season miners that belong to the benign corpus, read as the season submits them (not copied here)."""
BENIGN: dict[str, str] = dict(
    sorted(
        [(path.stem, path.read_text(encoding="utf-8")) for path in BENIGN_FILES]
        + [(stem, miner_source(stem)) for stem in SEASON_BENIGN]
    )
)
"""Every realistic agent admission must admit, by name: the benign corpus and `SEASON_BENIGN`."""
MINERS = Path(__file__).resolve().parents[1] / "agents" / "miners"
_EXPECT = re.compile(rb"^# expect: ([\w.]+)", re.M)
_EVASION = re.compile(rb"^# evasion: (.+)$", re.M)


def expected_rules(path: Path) -> set[str]:
    return {match.decode() for match in _EXPECT.findall(path.read_bytes())}


def evasion(path: Path) -> str:
    match = _EVASION.search(path.read_bytes())
    return match.group(1).decode() if match else ""
