"""arena stage (see docs/architecture.md)."""
