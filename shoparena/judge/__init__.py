"""judge stage (see docs/architecture.md)."""
