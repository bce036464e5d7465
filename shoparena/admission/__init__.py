"""Admission: static analysis of a submitted agent file before the arena stores or runs it (SPEC §6).

    from shoparena.admission import check_submission
    violations = check_submission(path.read_bytes())   # [] → admitted

Admission is one layer; the sandbox must hold on its own for code admission never saw. Its job is to
turn away the obvious and the clever early, with a reason a miner can act on: format problems, code
that reaches for the OS, the network or the interpreter's internals (security), and answers written
into the file (integrity). `RULES` lists every rule id it can report; docs/admission.md explains them.
"""

from shoparena.admission.checker import MAX_SOURCE_BYTES, analyse, check_submission
from shoparena.admission.models import RULES, Kind, Rule, Violation

__all__ = ["MAX_SOURCE_BYTES", "RULES", "Kind", "Rule", "Violation", "analyse", "check_submission"]
