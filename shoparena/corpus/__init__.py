"""corpus stage (see docs/architecture.md)."""
