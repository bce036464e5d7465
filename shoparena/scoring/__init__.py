"""scoring stage (see docs/architecture.md)."""
