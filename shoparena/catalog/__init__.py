"""catalog stage (see docs/architecture.md)."""
