"""harness stage (see docs/architecture.md)."""
