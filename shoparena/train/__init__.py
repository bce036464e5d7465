"""train stage (see docs/architecture.md)."""
