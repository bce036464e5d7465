"""index stage (see docs/architecture.md)."""
