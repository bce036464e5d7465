"""problems stage (see docs/architecture.md)."""
