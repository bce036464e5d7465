"""agents stage (see docs/architecture.md)."""
