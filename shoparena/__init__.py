"""shoparena: an open agent arena for agentic commerce (see docs/architecture.md)."""

__version__ = "0.1.0"
