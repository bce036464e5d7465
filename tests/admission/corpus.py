"""The admission corpora: hostile files that must be rejected (each names the rule it must trip in an
`# expect:` header) and realistic agents that must be admitted."""

from __future__ import annotations

import re
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "admission_corpus"
ADVERSARIAL = sorted((CORPUS / "adversarial").glob("*.py"))
SEASON_MINERS = Path(__file__).resolve().parents[2] / "shoparena" / "season" / "miners"
BENIGN = sorted([*(CORPUS / "benign").glob("*.py"), SEASON_MINERS / "reference_agentic.py"])
"""The benign corpus, and the reference agentic policy as the season ships it (one file, not a copy)."""
MINERS = Path(__file__).resolve().parents[1] / "agents" / "miners"
_EXPECT = re.compile(rb"^# expect: ([\w.]+)", re.M)
_EVASION = re.compile(rb"^# evasion: (.+)$", re.M)


def expected_rules(path: Path) -> set[str]:
    return {match.decode() for match in _EXPECT.findall(path.read_bytes())}


def evasion(path: Path) -> str:
    match = _EVASION.search(path.read_bytes())
    return match.group(1).decode() if match else ""
